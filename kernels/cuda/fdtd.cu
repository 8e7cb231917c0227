// FDTD kernels of the 2D TM propagator on NVIDIA GPUs: the forward step, the
// adjoint passes with the imaging condition, and the sparse source/receiver
// operators. Each kernel is the CPU reference's loop body (kernels/cpu/),
// operation for operation, so that with FMA contraction off (CMake sets
// -fmad=false) the two backends agree to rounding.
//
// Equations: lib/gprfwi/kernels.hpp. Assumptions:
//  - the PaddedGrid layout with a zero halo of kMaxHalo nodes and rows of a
//    multiple of 4 values (16-byte aligned in float and double);
//  - one thread per 16 bytes of a row (4 float or 2 double nodes, x fastest),
//    a warp per band of such packs in the forward step's interior;
//    materials are shared by the shots;
//  - CPML memories are touched only in the CPML strips.
// Memory traffic per cell-step (float): the forward step reads Ey, Hx, Hz
// and writes them (24 B) plus ca, cb (and cq in a magnetic model) once for
// all shots, the CPML memories in the frame, and a kept level's store; the
// adjoint step likewise its three lambdas (q and p stay in registers except
// near the CPML), and the imaging condition lambda_ey, two kept levels and
// the per-node accumulators (in pairs of steps: the accumulators once and
// three levels for two steps, PairedImaging).

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/operators.hpp"
#include "cuda_check.hpp"
#include "gprfwi/grid.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/storage.hpp"

namespace gprfwi::kernels::cuda {

namespace {

template <typename T>
__device__ __forceinline__ bool in_strip(const CpmlAxis<T>& a, int i, int n) {
    const int lo = a.strip_low_end < n ? a.strip_low_end : n;
    const int hi = a.strip_high_begin > lo ? a.strip_high_begin : lo;
    return i < lo || i >= hi;
}

// The node kernels run one thread per kLanes<T> consecutive nodes of a row
// and one shot (blockIdx.z), and issue all their loads, 16 bytes wide, before
// any arithmetic or store. The x-stencil reads a window of the row around the
// thread's nodes, the z-stencil whole packs of the rows above and below. Each
// node's arithmetic is the CPU's, in the same order. Needs 16-byte aligned
// rows: PaddedGrid rounds `stride` up to a multiple of 4 values (kernels.hpp).
// A step is bound by memory, and its rate by the bytes each thread has in
// flight: one node a thread with scalar loads is latency-bound (docs/performance.md, "CUDA tuning constants").

/// Nodes per thread: one 16-byte load of T.
template <typename T>
inline constexpr int kLanes = static_cast<int>(16 / sizeof(T));

template <typename U, int N>
struct alignas(sizeof(U) * N) Pack {
    U v[N];
};

template <int N, typename U>
__device__ __forceinline__ Pack<U, N> load_pack(const U* p) {
    return *reinterpret_cast<const Pack<U, N>*>(p);
}

/// Stores the first n (all when n >= N) values of v at p; v is never
/// indexed by a variable (which would put it in local memory).
template <int N, typename U>
__device__ __forceinline__ void store_pack(U* p, const Pack<U, N>& v, int n) {
    if (n >= N) {
        *reinterpret_cast<Pack<U, N>*>(p) = v;
        return;
    }
#pragma unroll
    for (int j = 0; j < N; ++j)
        if (j < n) p[j] = v.v[j];
}

/// The values at nodes i - kMaxHalo .. i + N + kMaxHalo of a row, for the
/// x-stencils, from the packs of N nodes that load(k) returns at node k.
// Accessors at(j) = F(i + j) for the differences of common/operators.hpp,
// over the windows the kernels hold in registers or shared memory; the
// differences' loops are unrolled, so every index is a constant.

/// F(i + j) = w[centre + j]: lanes of a row (or a row in shared memory).
template <typename T>
__device__ __forceinline__ auto lanes_at(const T* w, int centre) {
    return [w, centre](int j) { return w[centre + j]; };
}

/// F(i + j) = p[j * stride]: rows of a block in shared memory.
template <typename T>
__device__ __forceinline__ auto strided_at(const T* p, int stride) {
    return [p, stride](int j) { return p[j * stride]; };
}

/// F(i + j) = rows[centre + j].v[lane]: a window of rows in packs.
template <typename T, int N>
__device__ __forceinline__ auto rows_at(const Pack<T, N>* rows, int centre, int lane) {
    return [rows, centre, lane](int j) { return rows[centre + j].v[lane]; };
}

/// The rows of a node's z difference in two arrays, as the frame kernels
/// load them: for D+ (PLUS) up[k] = F(i + k + 1) and dn[k] = F(i - k), for
/// D- up[k] = F(i + k) and dn[k] = F(i - k - 1).
template <bool PLUS, typename T, int N, int R>
__device__ __forceinline__ auto split_rows_at(const Pack<T, N> (&up)[R], const Pack<T, N> (&dn)[R], int lane) {
    return [&up, &dn, lane](int j) {
        if constexpr (PLUS) return j > 0 ? up[j - 1].v[lane] : dn[-j].v[lane];
        else return j >= 0 ? up[j].v[lane] : dn[-j - 1].v[lane];
    };
}

template <int N, typename T, typename Load>
__device__ __forceinline__ void gather_window(Load load, std::ptrdiff_t i, T (&w)[N + 2 * kMaxHalo]) {
#pragma unroll
    for (int b = 0; b < (N + 2 * kMaxHalo) / N; ++b) {
        const Pack<T, N> v = load(i - kMaxHalo + b * N);
#pragma unroll
        for (int j = 0; j < N; ++j) w[b * N + j] = v.v[j];
    }
}

/// The values p[-kMaxHalo .. N + kMaxHalo) of a row, for the x-stencils.
template <int N, typename T>
__device__ __forceinline__ void load_row_window(const T* p, T (&w)[N + 2 * kMaxHalo]) {
    gather_window<N>([p](std::ptrdiff_t k) { return load_pack<N>(p + k); }, 0, w);
}

/// Ey as the forward's kernels read and write it: a T array, or (SPLIT: a
/// gradient's forward with bf16 levels in single precision) two 16-bit
/// planes, the upper halves (the kept level itself, storage.hpp) and the
/// lower halves (in the first half of the Ey array's bytes), joined and split
/// with byte permutes. Indices count nodes.
template <typename T, bool SPLIT>
struct EyView {
    T* ey = nullptr;
    std::uint16_t* lo = nullptr;
    std::uint16_t* hi = nullptr;

    __host__ __device__ static EyView of(const TmFields<T>& f) {
        return {f.ey, reinterpret_cast<std::uint16_t*>(f.ey), f.ey_hi};
    }
    __device__ __forceinline__ EyView operator+(std::ptrdiff_t d) const { return {ey + d, lo + d, hi + d}; }
    __device__ __forceinline__ T operator[](std::ptrdiff_t i) const {
        if constexpr (SPLIT) return __uint_as_float(static_cast<unsigned>(hi[i]) << 16 | lo[i]);
        else return ey[i];
    }
    __device__ __forceinline__ void set(std::ptrdiff_t i, T v) const {
        if constexpr (SPLIT) {
            const unsigned u = __float_as_uint(v);
            hi[i] = static_cast<std::uint16_t>(u >> 16);
            lo[i] = static_cast<std::uint16_t>(u);
        } else {
            ey[i] = v;
        }
    }
    template <int N>
    __device__ __forceinline__ Pack<T, N> load(std::ptrdiff_t i) const {
        if constexpr (SPLIT) {
            static_assert(std::is_same_v<T, float> && N == 4);
            const uint2 h = *reinterpret_cast<const uint2*>(hi + i), l = *reinterpret_cast<const uint2*>(lo + i);
            return Pack<T, N>{{__uint_as_float(__byte_perm(l.x, h.x, 0x5410)), __uint_as_float(__byte_perm(l.x, h.x, 0x7632)),
                               __uint_as_float(__byte_perm(l.y, h.y, 0x5410)), __uint_as_float(__byte_perm(l.y, h.y, 0x7632))}};
        } else {
            return load_pack<N>(ey + i);
        }
    }
    /// Stores the first n (all when n >= N) values of v at node i.
    template <int N>
    __device__ __forceinline__ void store(std::ptrdiff_t i, const Pack<T, N>& v, int n) const {
        if constexpr (SPLIT) {
            if (n >= N) {
                const unsigned a = __float_as_uint(v.v[0]), b = __float_as_uint(v.v[1]);
                const unsigned c = __float_as_uint(v.v[2]), d = __float_as_uint(v.v[3]);
                *reinterpret_cast<uint2*>(hi + i) = uint2{__byte_perm(a, b, 0x7632), __byte_perm(c, d, 0x7632)};
                *reinterpret_cast<uint2*>(lo + i) = uint2{__byte_perm(a, b, 0x5410), __byte_perm(c, d, 0x5410)};
                return;
            }
#pragma unroll
            for (int j = 0; j < N; ++j)
                if (j < n) set(i + j, v.v[j]);
        } else {
            store_pack(ey + i, v, n);
        }
    }
    /// The values at nodes i - kMaxHalo .. i + N + kMaxHalo, for the x-stencils (gather_window).
    template <int N>
    __device__ __forceinline__ void load_window(std::ptrdiff_t i, T (&w)[N + 2 * kMaxHalo]) const {
        gather_window<N>([this](std::ptrdiff_t k) { return load<N>(k); }, i, w);
    }
};

/// fn(the EyView of f): split where f has an upper plane (single precision only).
template <typename T, typename Fn>
__device__ __forceinline__ void with_ey(const TmFields<T>& f, Fn fn) {
    if constexpr (std::is_same_v<T, float>) {
        if (f.ey_hi) {
            fn(EyView<T, true>::of(f));
            return;
        }
    }
    fn(EyView<T, false>::of(f));
}

// The forward step reads each field once and writes it once over most of the
// grid. Its interior (Interior: the nodes whose H and E stencils reach no CPML
// node) is one kernel: a warp owns a band of columns, each lane kLanes<T> of
// them, and marches down a segment of kStepRows rows: at row r it computes Hx
// one row ahead (r + R - 1, from the Ey rows r .. r + 2R - 1 it holds in
// registers), Hz at r (x neighbours by warp shuffles) and then Ey at r, from
// the Hx rows r - R .. r + R - 1 it holds. The HL lanes at each edge of the
// warp only supply neighbours, and a segment recomputes the 2R - 1 Hx rows
// above it, so warps never wait for each other; but since neighbours read
// fields that their owner is replacing, the step reads Ey, Hx, Hz from one
// buffer and writes them to another. The rows above and below the interior
// (the z strips of the CPML and R rows more) are marched the same way over
// the interior's columns, by warps that add the z CPML terms (psi_ey_z, which
// they recompute for rows a neighbour owns, is double-buffered too). The rest
// of the grid, the frame (the x strips and R columns more, all rows), is
// updated one thread per pack: its H by further blocks of the same launch,
// its E by a second launch once all H is written, whose further blocks add
// the source term when the sources lie in the interior; the receivers are
// sampled by the next step's launch (it reads what they sample). The other
// CPML memories are read and written only at their own nodes, in place. Each
// node's arithmetic is the CPU's (update_h then update_e, then the source
// term), in the same order.
// Blocks of 4 warps, segments of 16 rows: short enough that the blocks fill
// the GPU in even waves; blocks an SM: step_blocks_per_sm. Without step
// pairs the forward's segments take 12 to 16 rows, whichever fills the last
// wave of blocks most (forward_rows). The measurements behind these
// constants and the ones below: docs/performance.md, "CUDA tuning constants".
// Odd segments march up (MarchingWarp::up, march_segment), a mirror image
// of the march down: the rows around a segment boundary, which the warps on
// both sides read (2R - 1 beyond each end of a segment), are then read by
// both near their ends or both near their starts, close in time, so that
// the second read finds them in L2 (all marching down, one warp read them
// at its start and the other a march later, both from DRAM).
constexpr int kStepWarps = 4, kStepRows = 16;
// The z strips' segments: 4 rows, fewer than the interior's since their
// warps do more a row (a whole strip as one segment made its warps the
// step's critical path).
constexpr int kStripRows = 4;
// The adjoint's marching segments: 14 rows, the fastest of 8 to 16 with odd
// segments marching up.
constexpr int kAdjointRows = 14;
// Blocks an SM of the forward and adjoint step kernels (their registers:
// 80, 96, 128 a thread for 6, 5, 4): as many as the registers allow, which
// single precision keeps at every order although orders 4 and 6 then spill;
// double precision at orders 4 and 6 runs faster with one block fewer.
template <typename T>
constexpr int step_blocks_per_sm(int order) {
    if (sizeof(T) == 8 && (order == 4 || order == 6)) return order == 4 ? 5 : 4;
    return order <= 4 ? 6 : order == 6 ? 5 : 4;
}

template <typename T, int ORDER>
struct StepShape {
    static constexpr int N = kLanes<T>, R = ORDER / 2;
    static constexpr int HL = (2 * R - 1 + N - 1) / N;  // neighbour-only lanes at each edge
    static constexpr int U = 32 - 2 * HL;               // lanes that own their columns
    static constexpr int W = (2 * HL + 1) * N;          // x window: this lane and HL lanes each side
};

/// The row window of lanes -HL..HL around this lane: w[(d + HL) * N + j] is
/// value j of lane + d (garbage where lane + d is outside the warp).
template <int N, int HL, typename T>
__device__ __forceinline__ void lane_window(const Pack<T, N>& v, T (&w)[(2 * HL + 1) * N]) {
#pragma unroll
    for (int j = 0; j < N; ++j) w[HL * N + j] = v.v[j];
#pragma unroll
    for (int d = 1; d <= HL; ++d)
#pragma unroll
        for (int j = 0; j < N; ++j) {
            w[(HL - d) * N + j] = __shfl_up_sync(0xffffffffu, v.v[j], d);
            w[(HL + d) * N + j] = __shfl_down_sync(0xffffffffu, v.v[j], d);
        }
}

/// The step's interior, columns [xa, xb) and rows [za, zb): the nodes whose
/// E update reads only H values computed without CPML memories (Hz within R
/// columns, Hx within R rows). xa and xb are multiples of kLanes<T> (whole,
/// aligned packs); an empty interior is all zeros (the frame is everything).
struct Interior {
    int xa, xb, za, zb;
};

__host__ __device__ __forceinline__ bool inside(const Interior& b, int ix, int iz) {
    return ix >= b.xa && ix < b.xb && iz >= b.za && iz < b.zb;
}

/// The column and row of the node at storage index `index` (of a shot); false
/// for an index before the grid's first node.
template <typename T>
__host__ __device__ __forceinline__ bool node_at(const GridParams<T>& g, std::size_t index, int& ix, int& iz) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(index) - static_cast<std::ptrdiff_t>(g.origin);
    ix = static_cast<int>(off % g.stride);
    iz = static_cast<int>(off / g.stride);
    return off >= 0;
}

/// The marching kernels' launch over `box`, per shot: one warp for each band
/// of columns across and segment of kStepRows rows down, the bands of a
/// segment in turn, kStepWarps of them a block. (Blocks of a fixed set of
/// bands would leave warps idle where the bands do not fill the last block:
/// at 1000^2, 9 bands in 3 blocks of 4 warps.)
template <typename T, int ORDER>
void marching_blocks(const Interior& box, int& bands, int& blocks, int rows = kStepRows) {
    using S = StepShape<T, ORDER>;
    bands = blocks = 0;
    if (box.xb <= box.xa) return;
    bands = (box.xb - box.xa + S::U * S::N - 1) / (S::U * S::N);
    blocks = (bands * ((box.zb - box.za + rows - 1) / rows) + kStepWarps - 1) / kStepWarps;
}

/// The nodes at least `before` nodes after the low CPML strips and `after`
/// before the high ones (x rounded inwards to whole packs).
template <typename T>
Interior interior_box(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, int before, int after) {
    constexpr int N = kLanes<T>;
    auto low = [](const CpmlAxis<T>& a, int n) { return std::clamp(a.strip_low_end, 0, n); };
    auto high = [&](const CpmlAxis<T>& a, int n) { return std::clamp(a.strip_high_begin, low(a, n), n); };
    Interior b;
    b.xa = (low(x, g.nx) + before + N - 1) / N * N;
    b.xb = (high(x, g.nx) - after) / N * N;
    b.za = low(z, g.nz) + before;
    b.zb = high(z, g.nz) - after;
    if (b.xa >= b.xb || b.za >= b.zb) b = Interior{0, 0, 0, 0};
    return b;
}

/// What the marching warps of a step with interior `b` cover: its columns,
/// all rows (the interior and the z strips above and below it); the frame
/// lies outside.
inline Interior with_z_strips(const Interior& b, int nz) { return b.xb > b.xa ? Interior{b.xa, b.xb, 0, nz} : b; }

/// `b` without its outer `dx` columns (rounded up to whole packs) and `dz` rows.
template <typename T>
Interior shrink(Interior b, int dx, int dz) {
    constexpr int N = kLanes<T>;
    dx = (dx + N - 1) / N * N;
    b = Interior{b.xa + dx, b.xb - dx, b.za + dz, b.zb - dz};
    if (b.xa >= b.xb || b.za >= b.zb) b = Interior{0, 0, 0, 0};
    return b;
}

/// The forward step's interior: Ey at ix reads Hz at ix-R .. ix+R-1 (and Hx
/// in the rows alike), which must be free of CPML terms.
template <typename T, int ORDER>
Interior step_interior(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z) {
    return interior_box(g, x, z, ORDER / 2, ORDER / 2 - 1);
}

/// A warp's place in a marching kernel (marching_step_warp,
/// adjoint_marching_warp): its band of columns (each lane N of them, the HL
/// lanes at each edge only neighbours) and segment of rows, from its block's
/// place among the shot's (marching_blocks), its shot, and whole-pack loads
/// of a row at its lane's columns.
struct ZStrips {};  // MarchingWarp's tag for the z strips' blocks

/// The interior warps' items of a step launch, per shot: `bands` bands of
/// columns across, segments of kStepRows rows down, less a hole of whole
/// bands [b1, b2) and segments [s1, s2) that another kernel owns (step_pair's
/// pair box; none when b1 == b2), row of segments by row of segments.
struct MarchingItems {
    int bands = 0, b1 = 0, b2 = 0, s1 = 0, s2 = 0;
    __host__ __device__ int count(int segments) const { return bands * segments - (b2 - b1) * (s2 - s1); }
    /// The band and segment of item `item`.
    __device__ __forceinline__ void place(int item, int& band, int& seg) const {
        const int top = s1 * bands, side = bands - (b2 - b1), middle = (s2 - s1) * side;
        if (item >= top && item < top + middle) {
            const int k = item - top, r = k / side, c = k - r * side;
            seg = s1 + r;
            band = c < b1 ? c : c + (b2 - b1);
            return;
        }
        if (item >= top) item -= middle - (s2 - s1) * bands;
        seg = item / bands;
        band = item - seg * bands;
    }
};

/// The z strips' segments (of kStripRows rows) above the interior `box`,
/// whose warps come first, and below it, in rows 0 .. nz.
__host__ __device__ inline int z_strip_segments_above(const Interior& box) {
    return (box.za + kStripRows - 1) / kStripRows;
}
__host__ __device__ inline int z_strip_segments_below(const Interior& box, int nz) {
    return (nz - box.zb + kStripRows - 1) / kStripRows;
}

template <typename T, int ORDER>
struct MarchingWarp {
    static constexpr int N = kLanes<T>;
    bool active = false;  // false: past the shot's last band and segment (the warp has nothing to do)
    bool owner = false;   // this lane stores its columns
    bool up = false;      // marches its segment from the bottom row up (odd segments; kStepRows)
    int z0 = 0, z1 = 0, stride = 0;
    std::ptrdiff_t col = 0;  // storage index of (row 0, this lane's first column)
    std::size_t shot = 0;    // offset of the shot's fields

    /// In the shot's `block`th block of the interior's (marching_blocks, segments of `rows` rows).
    __device__ __forceinline__ MarchingWarp(const GridParams<T>& g, const Interior& box, int bands, int block,
                                            int shot_index, int rows = kStepRows) {
        const int item = block * kStepWarps + static_cast<int>(threadIdx.x) / 32, seg = item / bands;
        const int za = box.za + seg * rows;
        place(g, box, item - seg * bands, za, min(za + rows, box.zb), shot_index);
        up = seg & 1;
    }
    /// In the shot's `block`th block of a step's interior items.
    __device__ __forceinline__ MarchingWarp(const GridParams<T>& g, const Interior& box, const MarchingItems& items,
                                            int block, int shot_index) {
        int band, seg;
        items.place(block * kStepWarps + static_cast<int>(threadIdx.x) / 32, band, seg);
        const int za = box.za + seg * kStepRows;
        place(g, box, band, za, min(za + kStepRows, box.zb), shot_index);
        up = seg & 1;
    }
    /// In the shot's `block`th block of the z strips' (z_strip_blocks): the
    /// bands of each segment of kStripRows rows above the interior, then of
    /// those below.
    __device__ __forceinline__ MarchingWarp(ZStrips, const GridParams<T>& g, const Interior& box, int bands,
                                            int block, int shot_index) {
        const int item = block * kStepWarps + static_cast<int>(threadIdx.x) / 32, seg = item / bands;
        const int above = z_strip_segments_above(box);
        const int za = seg < above ? seg * kStripRows : box.zb + (seg - above) * kStripRows;
        place(g, box, item - seg * bands, za, min(za + kStripRows, seg < above ? box.za : g.nz), shot_index);
    }

private:
    __device__ __forceinline__ void place(const GridParams<T>& g, const Interior& box, int band, int za, int zb,
                                          int shot_index) {
        using S = StepShape<T, ORDER>;
        const int lane = threadIdx.x & 31;
        const int band_c0 = box.xa + band * S::U * N;
        z0 = za;
        z1 = zb;
        active = z0 < z1;
        const int c0 = band_c0 + (lane - S::HL) * N;  // this lane's first column
        owner = lane >= S::HL && lane < 32 - S::HL && c0 < box.xb;
        // Every load is unconditional. The lanes right of the interior that no
        // owner needs (a band's last may reach past the row) read the row's last
        // pack instead; the columns that owners need lie within the stored row.
        col = static_cast<std::ptrdiff_t>(g.origin) + min(c0, g.stride - kMaxHalo - N);
        stride = g.stride;
        shot = shot_index * g.shot_stride;
    }

public:
    /// Whether this lane stores row r at its columns.
    __device__ __forceinline__ bool owns(int r) const { return owner && r >= z0 && r < z1; }
    /// Storage index of row r at this lane's columns (of a coefficient array; add `shot` for a field).
    __device__ __forceinline__ std::ptrdiff_t at(int r) const { return col + static_cast<std::ptrdiff_t>(r) * stride; }
    __device__ __forceinline__ Pack<T, N> load(const T* a, int r) const { return load_pack<N>(a + at(r)); }
    /// cq at row r: a non-magnetic model's one value (MaterialView::cq_uniform), else the array's.
    __device__ __forceinline__ Pack<T, N> load_cq(const MaterialView<T>& m, int r) const {
        if (m.cq_uniform == T(0)) return load(m.cq, r);
        Pack<T, N> v;
#pragma unroll
        for (int j = 0; j < N; ++j) v.v[j] = m.cq_uniform;
        return v;
    }
};

/// The march down (or up) a segment [z0, z1) that the forward's and the
/// adjoint's marching warps share. Two windows of 2R rows: rows of `a` (Ey;
/// the adjoint's q_z), loaded by a_row(r), and rows of `b` (Hx; p_z), b at
/// row q computed by b_row(q, w) from the a rows q-R+1 .. q+R in w[0 .. 2R-1].
/// At row r the windows hold the a rows r .. r+2R-1 (marching up: r-2R+1 ..
/// r) and the b rows r-R .. r+R-1, both ascending; loads(r) issues row r's
/// own loads before b's newest row is computed, and row(r, a_r, b, loaded)
/// does the row's own work. Marching up is the mirror image of marching
/// down: a segment boundary's rows, which the warps on both sides read (2R -
/// 1 beyond each end), are read by both near their ends or both near their
/// starts, close in time (kStepRows).
template <int R, typename P, typename ARow, typename BRow, typename Loads, typename Row>
__device__ __forceinline__ void march_segment(int z0, int z1, bool up, ARow a_row, BRow b_row, Loads loads,
                                              Row row) {
    P aw[2 * R], bw[2 * R];
    if (up) {
        // prologue: the b rows z1+R-2 .. z1-R from the a rows z1+2R-2 .. z1-2R+1
#pragma unroll
        for (int i = 0; i < 2 * R - 1; ++i) aw[i + 1] = a_row(z1 + i);
#pragma unroll
        for (int t = 0; t < 2 * R - 1; ++t) {
            aw[0] = a_row(z1 - 1 - t);
            bw[2 * R - 1 - t] = b_row(z1 + R - 2 - t, aw);
#pragma unroll
            for (int i = 2 * R - 1; i > 0; --i) aw[i] = aw[i - 1];
        }
        for (int r = z1 - 1; r >= z0; --r) {
            aw[0] = a_row(r - 2 * R + 1);
            const auto loaded = loads(r);
            bw[0] = b_row(r - R, aw);
            row(r, aw[2 * R - 1], bw, loaded);
#pragma unroll
            for (int i = 2 * R - 1; i > 0; --i) {
                aw[i] = aw[i - 1];
                bw[i] = bw[i - 1];
            }
        }
        return;
    }
    // prologue: the b rows z0-R .. z0+R-2 from the a rows z0-2R+1 .. z0+2R-2,
    // leaving the a rows z0 .. z0+2R-2 in the window
#pragma unroll
    for (int i = 0; i < 2 * R - 1; ++i) aw[i] = a_row(z0 - 2 * R + 1 + i);
#pragma unroll
    for (int t = 0; t < 2 * R - 1; ++t) {
        aw[2 * R - 1] = a_row(z0 + t);
        bw[t] = b_row(z0 - R + t, aw);
#pragma unroll
        for (int i = 0; i < 2 * R - 1; ++i) aw[i] = aw[i + 1];
    }
    for (int r = z0; r < z1; ++r) {
        aw[2 * R - 1] = a_row(r + 2 * R - 1);
        const auto loaded = loads(r);
        bw[2 * R - 1] = b_row(r + R - 1, aw);
        row(r, aw[0], bw, loaded);
#pragma unroll
        for (int i = 0; i < 2 * R - 1; ++i) {
            aw[i] = aw[i + 1];
            bw[i] = bw[i + 1];
        }
    }
}

/// Row r's own loads in a marching warp: H (Hz; lambda_hz), cq, ca, and cb (the
/// adjoint: lambda_ey).
template <typename T, int N>
struct RowLoads {
    Pack<T, N> hz, cq, ca, fourth;
};

/// A marching warp's z CPML state at row r: whether the row lies in a z
/// strip (never outside ZS warps), and then the memory `psi` at the lane's
/// columns and the half-step (H rows) or integer (E rows) profile at the row.
template <typename T, int N>
struct RowCpml {
    bool on = false;
    Pack<T, N> psi;
    T b = 0, a = 0, ik = 0;
};
template <bool HALF, bool ZS, typename T, int ORDER>
__device__ __forceinline__ RowCpml<T, kLanes<T>> load_row_cpml(const GridParams<T>& g, const CpmlAxis<T>& z,
                                                               const MarchingWarp<T, ORDER>& w, const T* psi, int r) {
    RowCpml<T, kLanes<T>> c;
    c.on = ZS && in_strip(z, r, g.nz);
    if (c.on) {
        c.psi = w.load(psi + w.shot, r);
        if (HALF) c.b = z.b_half[r], c.a = z.a_half[r], c.ik = z.inv_kappa_half[r];
        else c.b = z.b_int[r], c.a = z.a_int[r], c.ik = z.inv_kappa_int[r];
    }
    return c;
}

/// The Born step's scattering term at a pack of nodes, added to the
/// perturbation's Ey^{n+1} after its own update, in the CPU's order
/// (cpu::born_scatter): dEy += dca*Ey^n + r*(Ey^{n+1} - ca*Ey^n).
template <typename T, int N>
__device__ __forceinline__ void add_born_scatter(const Pack<T, N>& ca, const Pack<T, N>& dca, const Pack<T, N>& r,
                                                 const Pack<T, N>& prev, const Pack<T, N>& next, Pack<T, N>& d_ey) {
#pragma unroll
    for (int j = 0; j < N; ++j) d_ey.v[j] += born_scattering(dca.v[j], r.v[j], prev.v[j], next.v[j], ca.v[j]);
}

/// One marching warp of the forward step: in the interior (ZS false), or in
/// the z strips (ZS: the rows above and below the interior, over its
/// columns, where the x-stencils reach no CPML node either), which adds the
/// z CPML terms of the CPU's update_h and update_e in its strip rows (psi_ey_z
/// from `in` to `out`, as the warp recomputes Hx rows of the segment above;
/// psi_hx_z, read and written at its own rows only, in place) and takes Hx
/// outside the grid as the zero halo. With BORN (a Born run's perturbation
/// step) each Ey^{n+1} then takes the scattering term (BornScatter; d_ey
/// unused: it is `out`'s Ey), as cpu::born_scatter would after the step.
template <typename T, int ORDER, typename Stored, bool ZS, bool SPLIT, bool BORN = false>
__device__ __forceinline__ void marching_step_warp(const GridParams<T>& g, const MaterialView<T>& m,
                                                   const CpmlAxis<T>& z, const TmFields<T>& in,
                                                   const TmFields<T>& out, Stored* keep,
                                                   const MarchingWarp<T, ORDER>& w,
                                                   const BornScatter<T>& born = {}) {
    static_assert(!(BORN && SPLIT), "a Born run's fields hold Ey in one plane");
    using S = StepShape<T, ORDER>;
    constexpr int N = S::N, R = S::R, HL = S::HL;
    if (!w.active) return;  // the whole warp
    const EyView<T, SPLIT> ey_in = EyView<T, SPLIT>::of(in), ey_out = EyView<T, SPLIT>::of(out);
    // Ey^n at row r; a strip's rows beyond the zero halo (which feed only Hx rows outside the grid) read its last
    auto ey_row = [&](int r) {
        if (ZS) r = max(-kMaxHalo, min(r, g.nz + kMaxHalo - 1));
        return ey_in.template load<N>(w.shot + w.at(r));
    };

    // Hx^{n+1/2} at row q from the Ey rows q-R+1 .. q+R (e[0 .. 2R-1]); stored when the row is this warp's
    auto hx_row = [&](int q, const Pack<T, N>* e) {
        Pack<T, N> h{};
        if (ZS && (q < 0 || q >= g.nz)) return h;
        const Pack<T, N> old = w.load(in.hx + w.shot, q), cq = w.load_cq(m, q);
        auto c = load_row_cpml<true, ZS>(g, z, w, in.psi_ey_z, q);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            T dz = forward_difference<T, ORDER>(rows_at(e, R - 1, j));
            dz *= g.inv_dz;
            if (c.on) dz = cpml_stretch(dz, c.psi.v[j], c.b, c.a, c.ik);
            h.v[j] = hx_update(old.v[j], cq.v[j], dz);
        }
        if (w.owns(q)) store_pack(out.hx + w.shot + w.at(q), h, N);
        if (c.on && w.owns(q)) store_pack(out.psi_ey_z + w.shot + w.at(q), c.psi, N);
        return h;
    };

    // Hz^{n+1/2} and Ey^{n+1} at row r, from Ey^n at row r (ey_r), the Hx rows r-R .. r+R-1 (hw) and row r's loads
    auto e_row = [&](int r, const Pack<T, N>& ey_r, const Pack<T, N>* hw, const RowLoads<T, N>& l) {
        const Pack<T, N>&hz_old = l.hz, &cq = l.cq, &ca = l.ca, &cb = l.fourth;
        // Hz^{n+1/2} at row r: Dx+[Ey]
        T e[S::W];
        lane_window<N, HL>(ey_r, e);
        Pack<T, N> hz;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            T dx = forward_difference<T, ORDER>(lanes_at(e, HL * N + j));
            dx *= g.inv_dx;
            hz.v[j] = hz_update(hz_old.v[j], cq.v[j], dx);
        }
        // Ey^{n+1} at row r: Dx-[Hz], Dz-[Hx]
        T h[S::W];
        lane_window<N, HL>(hz, h);
        auto c = load_row_cpml<false, ZS>(g, z, w, in.psi_hx_z, r);
        Pack<T, N> ey;
        Pack<Stored, N> kept{};
#pragma unroll
        for (int j = 0; j < N; ++j) {
            T dx = backward_difference<T, ORDER>(lanes_at(h, HL * N + j));
            T dz = backward_difference<T, ORDER>(rows_at(hw, R, j));
            dx *= g.inv_dx;
            dz *= g.inv_dz;
            if (c.on) dz = cpml_stretch(dz, c.psi.v[j], c.b, c.a, c.ik);
            ey.v[j] = ey_update(ey_r.v[j], ca.v[j], cb.v[j], dx, dz);
            if (keep && !SPLIT) kept.v[j] = store_as<Stored>(ey.v[j]);
        }
        if constexpr (BORN) add_born_scatter(ca, w.load(born.dca, r), w.load(born.dcb_over_cb, r),
                                             w.load(born.ey_prev + w.shot, r), w.load(born.ey_next + w.shot, r), ey);
        if (w.owner) {
            const std::size_t o = w.shot + w.at(r);
            store_pack(out.hz + o, hz, N);
            ey_out.template store<N>(o, ey, N);
            if (keep && !SPLIT) store_pack(keep + o, kept, N);  // (split: the upper plane is the level)
            if (c.on) store_pack(in.psi_hx_z + o, c.psi, N);
        }
    };

    auto loads = [&](int r) {
        return RowLoads<T, N>{w.load(in.hz + w.shot, r), w.load_cq(m, r), w.load(m.ca, r), w.load(m.cb, r)};
    };
    march_segment<R, Pack<T, N>>(w.z0, w.z1, !ZS && w.up, ey_row, hx_row, loads, e_row);
}

/// The adjoint step's interior: lambda_ey at ix reads p_x at ix-R .. ix+R-1,
/// each from lambda_hz reading q_x at R more columns each way (and the rows
/// alike); q and p carry CPML terms in the strips.
template <typename T, int ORDER>
Interior adjoint_interior(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z) {
    return interior_box(g, x, z, ORDER - 1, ORDER - 1);
}

/// What the adjoint step's warps march (with_z_strips).
template <typename T, int ORDER>
Interior adjoint_march(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z) {
    return with_z_strips(adjoint_interior<T, ORDER>(g, x, z), g.nz);
}

/// One warp of the adjoint step's interior, marched like marching_step_warp:
/// pass 1 (t = cb*lambda_ey, q_x = t, q_z = -t, lambda_ey *= ca), pass 2
/// (lambda_h -= D+[q], p = +-cq*lambda_h) and pass 3 (lambda_ey -= D-[p]) of
/// cpu::adjoint_e_prepare, adjoint_h, adjoint_e_finish, with the same
/// operations in the same order, q and p in registers: at row r it holds the
/// q_z rows r .. r+2R-1, computes lambda_hx and p_z one row ahead (r+R-1),
/// lambda_hz and p_x at r (q_x = -q_z of the lanes around) and lambda_ey at r.
/// In the z strips (ZS: the rows above and below the interior, over its
/// columns), the warp adds the z CPML terms of passes 1 and 2 in its strip
/// rows (psi_hx_z and psi_ey_z from `in` to `out`, as it recomputes rows of
/// the segment above) and takes lambda_hx and p_z outside the grid as zero.
template <typename T, int ORDER, bool ZS>
__device__ __forceinline__ void adjoint_marching_warp(const GridParams<T>& g, const MaterialView<T>& m,
                                                      const CpmlAxis<T>& z, const TmFields<T>& in,
                                                      const TmFields<T>& out, const MarchingWarp<T, ORDER>& w) {
    using S = StepShape<T, ORDER>;
    constexpr int N = S::N, R = S::R, HL = S::HL;
    if (!w.active) return;  // the whole warp
    // q_z = -(cb * lambda_ey) at row r (with the z CPML terms in a strip; zero outside the grid)
    auto qz_row = [&](int r) {
        Pack<T, N> v{};
        if (ZS && (r < 0 || r >= g.nz)) return v;
        const Pack<T, N> lam = w.load(in.ey + w.shot, r), cb = w.load(m.cb, r);
        auto c = load_row_cpml<false, ZS>(g, z, w, in.psi_hx_z, r);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const T t = cb.v[j] * lam.v[j];
            v.v[j] = -t;
            if (c.on) v.v[j] = cpml_stretch_transpose(-t, c.psi.v[j], c.b, c.a, c.ik);
        }
        if (c.on && w.owns(r)) store_pack(out.psi_hx_z + w.shot + w.at(r), c.psi, N);
        return v;
    };
    // lambda_hx at row q from the q_z rows q-R+1 .. q+R (qz[0 .. 2R-1]), stored
    // when the row is this warp's; returns p_z = -cq * lambda_hx (+ the z CPML terms)
    auto hx_row = [&](int q, const Pack<T, N>* qz) {
        Pack<T, N> lhx, pz{};
        if (ZS && (q < 0 || q >= g.nz)) return pz;
        const Pack<T, N> old = w.load(in.hx + w.shot, q), cq = w.load_cq(m, q);
        auto c = load_row_cpml<true, ZS>(g, z, w, in.psi_ey_z, q);
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const T dz = forward_difference<T, ORDER>(rows_at(qz, R - 1, j));
            lhx.v[j] = adjoint_h_update(old.v[j], dz, g.inv_dz);
            const T sz = -cq.v[j] * lhx.v[j];
            pz.v[j] = sz;
            if (c.on) pz.v[j] = cpml_stretch_transpose(sz, c.psi.v[j], c.b, c.a, c.ik);
        }
        if (w.owns(q)) store_pack(out.hx + w.shot + w.at(q), lhx, N);
        if (c.on && w.owns(q)) store_pack(out.psi_ey_z + w.shot + w.at(q), c.psi, N);
        return pz;
    };

    // lambda_hz and lambda_ey at row r, from q_z at row r (qz_r), the p_z rows r-R .. r+R-1 (pw) and row r's loads
    auto e_row = [&](int r, const Pack<T, N>& qz_r, const Pack<T, N>* pw, const RowLoads<T, N>& l) {
        const Pack<T, N>&hz_old = l.hz, &cq = l.cq, &ca = l.ca, &lam = l.fourth;
        // lambda_hz at row r: Dx+[q_x], q_x = t = -q_z (but for the z CPML terms in a strip); p_x = cq * lambda_hz
        Pack<T, N> qx;
        if (ZS) {
            const Pack<T, N> cb = w.load(m.cb, r);
#pragma unroll
            for (int j = 0; j < N; ++j) qx.v[j] = cb.v[j] * lam.v[j];
        } else {
#pragma unroll
            for (int j = 0; j < N; ++j) qx.v[j] = -qz_r.v[j];
        }
        T q[S::W];
        lane_window<N, HL>(qx, q);
        Pack<T, N> lhz, px;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const T dx = forward_difference<T, ORDER>(lanes_at(q, HL * N + j));
            lhz.v[j] = adjoint_h_update(hz_old.v[j], dx, g.inv_dx);
            px.v[j] = cq.v[j] * lhz.v[j];
        }
        // lambda_ey at row r: ca * lambda_ey - (Dx-[p_x] + Dz-[p_z])
        T p[S::W];
        lane_window<N, HL>(px, p);
        Pack<T, N> ey;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const T dx = backward_difference<T, ORDER>(lanes_at(p, HL * N + j));
            const T dz = backward_difference<T, ORDER>(rows_at(pw, R, j));
            ey.v[j] = adjoint_ey_finish(ca.v[j] * lam.v[j], dx, g.inv_dx, dz, g.inv_dz);
        }
        if (w.owner) {
            const std::size_t o = w.shot + w.at(r);
            store_pack(out.hz + o, lhz, N);
            store_pack(out.ey + o, ey, N);
        }
    };

    auto loads = [&](int r) {
        return RowLoads<T, N>{w.load(in.hz + w.shot, r), w.load_cq(m, r), w.load(m.ca, r), w.load(in.ey + w.shot, r)};
    };
    march_segment<R, Pack<T, N>>(w.z0, w.z1, !ZS && w.up, qz_row, hx_row, loads, e_row);
}

/// Ey += weight * wavelet[shot][m] at source point e (and its kept level).
template <typename T, typename Stored, bool SPLIT>
__device__ __forceinline__ void inject_source_point(const GridParams<T>& g, const SparseOperators& op,
                                                    const double* wavelets, int nt, int m, const EyView<T, SPLIT>& ey,
                                                    Stored* keep, int e) {
    const int s = op.source_shot[e];
    const std::size_t o = s * g.shot_stride + op.source_index[e];
    const T v = ey[o] + static_cast<T>(op.source_weight[e] * wavelets[static_cast<std::size_t>(s) * nt + m]);
    ey.set(o, v);
    if (keep && !SPLIT) keep[o] = store_as<Stored>(v);  // (split: the upper plane is the level)
}

/// sum_j w_j * field[index_j] over entries [begin, end), added in j order as
/// on the CPU (bitwise the same sum), by one warp: each lane loads its
/// entries' products in parallel, then lane 0 adds them in order via shuffles.
template <typename Field>
__device__ double warp_ordered_dot(int begin, int end, const std::size_t* index, const double* weight,
                                   const Field& field) {
    const int lane = threadIdx.x & 31;
    double acc = 0;
    for (int base = begin; base < end; base += 32) {
        const int j = base + lane;
        const double prod = j < end ? weight[j] * static_cast<double>(field[index[j]]) : 0.0;
        const int count = end - base < 32 ? end - base : 32;
        for (int l = 0; l < count; ++l) {
            const double p = __shfl_sync(0xffffffffu, prod, l);
            if (lane == 0) acc += p;
        }
    }
    return acc;
}

/// traces[r][m] = receiver row r's sample of `ey`, by one warp.
template <typename T, typename Field>
__device__ __forceinline__ void sample_row(const GridParams<T>& g, const SparseOperators& op, const Field& ey,
                                           double* traces, int nt, int m, int r) {
    if (r >= op.n_rows) return;
    const double acc = warp_ordered_dot(op.row_begin[r], op.row_begin[r + 1], op.row_index, op.row_weight,
                                        ey + op.row_shot[r] * g.shot_stride);
    if ((threadIdx.x & 31) == 0) traces[static_cast<std::size_t>(r) * nt + m] = acc;
}

/// The node pack (ix0, iz) of frame pack t: the frame's rows above and below
/// the interior, whole (row by row), then its columns left and right of it
/// (row by row); false past the frame's last pack.
template <typename T>
__device__ __forceinline__ bool frame_nodes(const GridParams<T>& g, const Interior& box, int t, int& ix0, int& iz) {
    constexpr int N = kLanes<T>;
    const int row_packs = (g.nx + N - 1) / N;
    const int row_part = row_packs * (box.za + g.nz - box.zb);
    if (t < row_part) {
        const int r = t / row_packs;
        ix0 = (t - r * row_packs) * N;
        iz = r < box.za ? r : box.zb + (r - box.za);
        return true;
    }
    t -= row_part;
    const int left = box.xa / N, side = left + row_packs - box.xb / N;
    if (side == 0 || t >= side * (box.zb - box.za)) return false;
    const int r = t / side, p = t - r * side;
    iz = box.za + r;
    ix0 = p < left ? p * N : box.xb + (p - left) * N;
    return true;
}

/// The frame's packs (per shot).
template <typename T>
int frame_packs(const GridParams<T>& g, const Interior& box) {
    constexpr int N = kLanes<T>;
    const int row_packs = (g.nx + N - 1) / N;
    return row_packs * (box.za + g.nz - box.zb) + (box.xa / N + row_packs - box.xb / N) * (box.zb - box.za);
}

/// A CPML memory update's coefficients at a pack of nodes along x (the
/// profiles are padded to whole packs), or at one row along z.
template <typename T, int N>
struct PackProfile {
    Pack<T, N> b, a, ik;
};
template <typename T, int N>
__device__ __forceinline__ PackProfile<T, N> load_profile(const T* b, const T* a, const T* ik, int ix0) {
    return {load_pack<N>(b + ix0), load_pack<N>(a + ix0), load_pack<N>(ik + ix0)};
}

/// A frame pack's CPML state, loaded with the pack's other loads: whether a
/// node of the pack lies in an x strip (xp) and the row in a z strip (zp),
/// and then the memories there (mx, mz) and the coefficients (the x
/// profiles as packs, the z profile's values at the row), of the half-step
/// (H nodes) or integer (E nodes) profiles.
template <typename T, int N>
struct FrameCpml {
    bool xp, zp;
    Pack<T, N> mx, mz;
    PackProfile<T, N> xc;
    T zb, za, zk;
};
template <bool HALF, typename T, int N = kLanes<T>>
__device__ __forceinline__ FrameCpml<T, N> load_frame_cpml(const GridParams<T>& g, const CpmlAxis<T>& x,
                                                           const CpmlAxis<T>& z, const T* psi_x, const T* psi_z,
                                                           std::size_t o, int ix0, int iz) {
    FrameCpml<T, N> c{in_strip(x, ix0, g.nx) || in_strip(x, ix0 + N - 1, g.nx), in_strip(z, iz, g.nz), {}, {}, {},
                      0, 0, 0};
    if (c.xp) {
        c.mx = load_pack<N>(psi_x + o);
        c.xc = HALF ? load_profile<T, N>(x.b_half, x.a_half, x.inv_kappa_half, ix0)
                    : load_profile<T, N>(x.b_int, x.a_int, x.inv_kappa_int, ix0);
    }
    if (c.zp) {
        c.mz = load_pack<N>(psi_z + o);
        if (HALF) c.zb = z.b_half[iz], c.za = z.a_half[iz], c.zk = z.inv_kappa_half[iz];
        else c.zb = z.b_int[iz], c.za = z.a_int[iz], c.zk = z.inv_kappa_int[iz];
    }
    return c;
}

// The frame's nodes, one thread per pack, all loads (the CPML memories and
// profiles too) issued before the arithmetic: H from `f` into `out`, then E
// from `f` and the new H of `out` (the interior's H is written by then). The
// CPML memories are `f`'s, updated in place.
template <typename T, int ORDER, bool SPLIT = false>
__device__ __forceinline__ void frame_h_pack(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                                             const CpmlAxis<T>& z, const TmFields<T>& f, const TmFields<T>& out,
                                             int ix0, int iz, int shot) {
    constexpr int N = kLanes<T>, R = ORDER / 2, H = kMaxHalo;
    const int stride = g.stride;
    const std::size_t c = g.origin + static_cast<std::size_t>(iz) * stride + ix0;  // first node
    const std::size_t o = c + static_cast<std::size_t>(shot) * g.shot_stride;       // ... of this shot
    const EyView<T, SPLIT> ey = EyView<T, SPLIT>::of(f);
    // loads: Ey around the nodes, old H, cq, the CPML memories and profiles in the strips
    T e[N + 2 * H];
    ey.template load_window<N>(o, e);
    Pack<T, N> up[R], dn[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
        up[k] = ey.template load<N>(o + (k + 1) * stride);
        dn[k] = ey.template load<N>(o - k * stride);
    }
    Pack<T, N> hx = load_pack<N>(f.hx + o), hz = load_pack<N>(f.hz + o);
    const Pack<T, N> cq = load_pack<N>(m.cq + c);
    auto [xp, zp, px, pz, xc, zb, za, zk] = load_frame_cpml<true>(g, x, z, f.psi_ey_x, f.psi_ey_z, o, ix0, iz);
#pragma unroll
    for (int j = 0; j < N; ++j) {
        // Dx+[Ey], Dz+[Ey] onto the Hz and Hx nodes
        T dx = forward_difference<T, ORDER>(lanes_at(e, H + j));
        T dz = forward_difference<T, ORDER>(split_rows_at<true>(up, dn, j));
        dx *= g.inv_dx;
        dz *= g.inv_dz;
        const int ix = ix0 + j;
        if (xp && ix < g.nx && in_strip(x, ix, g.nx)) dx = cpml_stretch(dx, px.v[j], xc.b.v[j], xc.a.v[j], xc.ik.v[j]);
        if (zp) dz = cpml_stretch(dz, pz.v[j], zb, za, zk);
        hx.v[j] = hx_update(hx.v[j], cq.v[j], dz);
        hz.v[j] = hz_update(hz.v[j], cq.v[j], dx);
    }
    const int n = g.nx - ix0;
    store_pack(out.hx + o, hx, n);
    store_pack(out.hz + o, hz, n);
    if (xp) store_pack(f.psi_ey_x + o, px, n);
    if (zp) store_pack(out.psi_ey_z + o, pz, n);
}

// Programmatic dependent launch (Hopper): the forward step's two kernels and
// the adjoint step's six are launched so that each may start while the
// kernel before it finishes; each waits for that kernel's results
// (griddepcontrol.wait, a no-op for a plain launch) before it reads
// anything, and then lets the next one launch as soon as all its blocks run
// (griddepcontrol.launch_dependents): the next kernel's wait then also
// covers every kernel before.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

/// Launches kernel<<<grid, block, shared_bytes, stream>>>(args...), as a
/// programmatic dependent launch where tuning.dependent_launch (which the
/// propagator keeps only on GPUs that have it).
template <typename... Params, typename... Args>
void launch_kernel_shared(const CudaTuning& tuning, void (*kernel)(Params...), dim3 grid, dim3 block,
                          std::size_t shared_bytes, cudaStream_t stream, Args&&... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = tuning.dependent_launch ? 1 : 0;
    GPRFWI_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}
template <typename... Params, typename... Args>
void launch_kernel(const CudaTuning& tuning, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                   Args&&... args) {
    launch_kernel_shared(tuning, kernel, grid, block, 0, stream, std::forward<Args>(args)...);
}

/// The launch of a step's H (and the marching warps' E): the z strips'
/// blocks first (their warps march farther), then the interior's
/// (marching_blocks over `bands`), then the frame's H, kStepWarps * 32 packs
/// a block, then the receivers'; the shot in blockIdx.y. The frame is what
/// the marching warps leave: all but the interior's columns.
struct StepLaunch {
    Interior frame;       // the box outside which the frame lies
    MarchingItems items;  // the interior's (its bands also the z strips')
    int strip_blocks, interior_blocks, frame_packs, frame_blocks;
    int rows = kStepRows;  // of the interior's segments
};

/// The z strips' blocks per shot: a warp for each band and segment of
/// kStripRows rows above and below the interior (none without bands).
inline int z_strip_blocks(const Interior& box, int nz, int bands) {
    const int segs = z_strip_segments_above(box) + z_strip_segments_below(box, nz);
    return (segs * bands + kStepWarps - 1) / kStepWarps;
}

/// Block `block` of step_kernel's launch (also run by pair_first_kernel);
/// HOLE: its interior items have a hole (MarchingItems), else all are there.
/// BORN: a Born run's perturbation step (marching_step_warp).
template <typename T, int ORDER, typename Stored, bool HOLE, bool SPLIT = false, bool BORN = false>
__device__ __forceinline__ void step_block(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                                           const CpmlAxis<T>& z, const Interior& box, const StepLaunch& l,
                                           const TmFields<T>& in, const TmFields<T>& out, Stored* keep,
                                           const StepSamples& samples, int block, const BornScatter<T>& born = {}) {
    if (block < l.strip_blocks) {
        const MarchingWarp<T, ORDER> w(ZStrips{}, g, box, l.items.bands, block, blockIdx.y);
        marching_step_warp<T, ORDER, Stored, true, SPLIT, BORN>(g, m, z, in, out, keep, w, born);
        return;
    }
    const int b = block - l.strip_blocks;
    if (b < l.interior_blocks) {
        const MarchingWarp<T, ORDER> w = HOLE ? MarchingWarp<T, ORDER>(g, box, l.items, b, blockIdx.y)
                                              : MarchingWarp<T, ORDER>(g, box, l.items.bands, b, blockIdx.y, l.rows);
        marching_step_warp<T, ORDER, Stored, false, SPLIT, BORN>(g, m, z, in, out, keep, w, born);
        return;
    }
    if (b >= l.interior_blocks + l.frame_blocks) {  // the receivers' samples of `in`
        if (blockIdx.y == 0)
            sample_row(g, samples.op, EyView<T, SPLIT>::of(in), samples.traces, samples.nt, samples.m,
                       ((b - l.interior_blocks - l.frame_blocks) * blockDim.x + threadIdx.x) / 32);
        return;
    }
    const int t = (b - l.interior_blocks) * blockDim.x + threadIdx.x;
    int ix0, iz;
    if (t < l.frame_packs && frame_nodes(g, l.frame, t, ix0, iz))
        frame_h_pack<T, ORDER, SPLIT>(g, m, x, z, in, out, ix0, iz, blockIdx.y);
}

template <typename T, int ORDER, typename Stored, bool HOLE = false, bool SPLIT = false>
__global__ void __launch_bounds__(kStepWarps * 32, step_blocks_per_sm<T>(ORDER))
    step_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, Interior box, StepLaunch l,
                TmFields<T> in, TmFields<T> out, Stored* keep, StepSamples samples) {
    wait_for_previous_kernel();
    allow_next_kernel();
    step_block<T, ORDER, Stored, HOLE, SPLIT>(g, m, x, z, box, l, in, out, keep, samples, blockIdx.x);
}

/// step_kernel for a Born run's perturbation (BornScatter; no level kept).
template <typename T, int ORDER>
__global__ void __launch_bounds__(kStepWarps * 32, step_blocks_per_sm<T>(ORDER))
    born_step_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, Interior box, StepLaunch l,
                     TmFields<T> in, TmFields<T> out, StepSamples samples, BornScatter<T> born) {
    wait_for_previous_kernel();
    allow_next_kernel();
    step_block<T, ORDER, T, false, false, true>(g, m, x, z, box, l, in, out, nullptr, samples, blockIdx.x, born);
}

/// frame_e_kernel's block: the frame's E (and the source term's blocks);
/// BORN: of a Born run's perturbation (marching_step_warp), without sources.
template <typename T, int ORDER, typename Stored, bool SPLIT, bool BORN>
__device__ __forceinline__ void frame_e_block(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                                              const CpmlAxis<T>& z, const TmFields<T>& f, const TmFields<T>& out,
                                              Stored* keep, const Interior& frame, int frame_blocks,
                                              const StepSources& src, const Interior& skip,
                                              const BornScatter<T>& born = {}) {
    constexpr int N = kLanes<T>, R = ORDER / 2, H = kMaxHalo;
    if (static_cast<int>(blockIdx.x) >= frame_blocks) {  // the source term, at interior nodes only (not in `skip`)
        const int e = (blockIdx.x - frame_blocks) * blockDim.x + threadIdx.x;
        int ix, iz;
        if (blockIdx.y == 0 && e < src.op.n_source_points &&
            !(node_at(g, src.op.source_index[e], ix, iz) && inside(skip, ix, iz)))
            inject_source_point(g, src.op, src.wavelets, src.nt, src.m, EyView<T, SPLIT>::of(out), keep, e);
        return;
    }
    int ix0, iz;
    if (!frame_nodes(g, frame, blockIdx.x * blockDim.x + threadIdx.x, ix0, iz)) return;
    const int stride = g.stride;
    const std::size_t c = g.origin + static_cast<std::size_t>(iz) * stride + ix0;
    const std::size_t o = c + blockIdx.y * g.shot_stride;
    const T* hx = out.hx + o;  // H^{n+1/2}
    // loads: Hz around the nodes, Hx above and below, old Ey, ca, cb, the CPML memories and profiles in the strips
    T h[N + 2 * H];
    load_row_window<N>(out.hz + o, h);
    Pack<T, N> up[R], dn[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
        up[k] = load_pack<N>(hx + k * stride);
        dn[k] = load_pack<N>(hx - (k + 1) * stride);
    }
    Pack<T, N> ey = EyView<T, SPLIT>::of(f).template load<N>(o);
    const Pack<T, N> ca = load_pack<N>(m.ca + c), cb = load_pack<N>(m.cb + c);
    auto [xp, zp, px, pz, xc, zb, za, zk] = load_frame_cpml<false>(g, x, z, f.psi_hz_x, f.psi_hx_z, o, ix0, iz);
    Pack<Stored, N> kept{};
#pragma unroll
    for (int j = 0; j < N; ++j) {
        // Dx-[Hz], Dz-[Hx] onto the Ey nodes
        T dx = backward_difference<T, ORDER>(lanes_at(h, H + j));
        T dz = backward_difference<T, ORDER>(split_rows_at<false>(up, dn, j));
        dx *= g.inv_dx;
        dz *= g.inv_dz;
        const int ix = ix0 + j;
        if (xp && ix < g.nx && in_strip(x, ix, g.nx)) dx = cpml_stretch(dx, px.v[j], xc.b.v[j], xc.a.v[j], xc.ik.v[j]);
        if (zp) dz = cpml_stretch(dz, pz.v[j], zb, za, zk);
        ey.v[j] = ey_update(ey.v[j], ca.v[j], cb.v[j], dx, dz);
        if (keep && !SPLIT) kept.v[j] = store_as<Stored>(ey.v[j]);
    }
    if constexpr (BORN)
        add_born_scatter(ca, load_pack<N>(born.dca + c), load_pack<N>(born.dcb_over_cb + c),
                         load_pack<N>(born.ey_prev + o), load_pack<N>(born.ey_next + o), ey);
    const int n = g.nx - ix0;
    EyView<T, SPLIT>::of(out).template store<N>(o, ey, n);
    if (xp) store_pack(f.psi_hz_x + o, px, n);
    if (zp) store_pack(f.psi_hx_z + o, pz, n);
    if (keep && !SPLIT) store_pack(keep + o, kept, n);  // (split: the upper plane is the level)
}

template <typename T, int ORDER, typename Stored, bool SPLIT = false>
__global__ void __launch_bounds__(kStepWarps * 32)
    frame_e_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, TmFields<T> f, TmFields<T> out,
                   Stored* keep, Interior frame, int frame_blocks, StepSources src, Interior skip) {
    wait_for_previous_kernel();
    allow_next_kernel();
    frame_e_block<T, ORDER, Stored, SPLIT, false>(g, m, x, z, f, out, keep, frame, frame_blocks, src, skip);
}

/// frame_e_kernel for a Born run's perturbation (BornScatter).
template <typename T, int ORDER>
__global__ void __launch_bounds__(kStepWarps * 32)
    born_frame_e_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, TmFields<T> f,
                        TmFields<T> out, Interior frame, int frame_blocks, BornScatter<T> born) {
    wait_for_previous_kernel();
    allow_next_kernel();
    frame_e_block<T, ORDER, T, false, true>(g, m, x, z, f, out, nullptr, frame, frame_blocks, StepSources{},
                                            Interior{0, 0, 0, 0}, born);
}

// Two steps a pass (temporal blocking; bench-probes/two_step_probe.cu): in
// the pair box, deep in the interior, a warp marches down a segment of rows
// doing both steps, four stages at staggered rows of one loop (at row i:
// Hx^{n+1/2} at i+R-1, Hz^{n+1/2} and Ey^{n+1} at i, Hx^{n+3/2} at i-R, Hz^{n+3/2}
// and Ey^{n+2} at i-2R+1), so Ey, Hx, Hz are read and written once for two
// steps. It recomputes the first step around what it owns (2 lanes more at
// each edge for order 4 in float, the 6R-3 rows above its segment), from the
// first step's input only, so it waits for no other warp. The box keeps
// 2*ORDER nodes from the CPML strips (every node the warps recompute is a
// plain interior node) and consists of whole bands and segments of step's
// interior warps, which so leave it out in both steps (MarchingItems). The
// warps add the first step's source term themselves at every node they
// compute (the frame launch adds it only outside the box), store Ey^{n+1}
// (for the receivers, sampled by the second step's launch), and store
// Hx^{n+1/2}, Hz^{n+1/2} where the second step's warps around the box read
// them. Each node's arithmetic is the CPU's, in the same order.

/// The pair warps' lanes: those whose columns the two steps' x reach (4R - 2
/// columns) needs at each edge only supply neighbours.
template <typename T, int ORDER>
struct PairShape {
    static constexpr int N = kLanes<T>, R = ORDER / 2;
    static constexpr int HL = (4 * R - 2 + N - 1) / N;
    static constexpr int U = 32 - 2 * HL;
};

/// The pair warps' launch: the box they own, per shot their bands of U * N
/// columns and segments of `rows` rows, kStepWarps a block.
struct PairLaunch {
    Interior box;
    int bands, rows, blocks;
};

/// The box of step_pair's pair warps: step's interior without its first and
/// last bands (and whatever of them lies within 2 * ORDER columns of the
/// interior's edge) and the segments within 2 * ORDER rows of its edges.
template <typename T, int ORDER>
Interior pair_box(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z) {
    using S = StepShape<T, ORDER>;
    const Interior box = step_interior<T, ORDER>(g, x, z);
    constexpr int band = S::U * S::N, margin = 2 * ORDER;
    if (box.xb <= box.xa) return Interior{0, 0, 0, 0};
    Interior d{box.xa + band, box.xa + (box.xb - margin - box.xa) / band * band,
               box.za + (margin + kStepRows - 1) / kStepRows * kStepRows,
               box.za + (box.zb - margin - box.za) / kStepRows * kStepRows};
    if (d.xa >= d.xb || d.za >= d.zb) d = Interior{0, 0, 0, 0};
    return d;
}

template <typename T, int ORDER>
__global__ void __launch_bounds__(kStepWarps * 32)
    pair_first_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, Interior box, StepLaunch l,
                      PairLaunch p, TmFields<T> in, TmFields<T> mid, TmFields<T> out, StepSources src,
                      StepSamples samples);

/// The blocks of `Kernel` (kStepWarps warps, no dynamic shared memory) that
/// the current GPU holds at once, worked out once per device (a process may
/// drive several).
template <auto Kernel>
int resident_blocks() {
    static std::array<std::atomic<int>, 64> resident_on{};
    int device = 0;
    GPRFWI_CUDA_CHECK(cudaGetDevice(&device));
    int resident = device < 64 ? resident_on[device].load(std::memory_order_relaxed) : 0;
    if (resident == 0) {
        int sms = 0, blocks = 0;
        GPRFWI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        GPRFWI_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, kStepWarps * 32, 0));
        resident = std::max(1, sms * blocks);
        if (device < 64) resident_on[device].store(resident, std::memory_order_relaxed);
    }
    return resident;
}

/// The pair warps' launch. A pair warp's segment takes long (two steps of
/// `rows` + 6R - 3 rows), so the segments are cut to fill the GPU's resident
/// warps in whole waves (with `rows` < 0; else `rows` rows).
template <typename T, int ORDER>
PairLaunch pair_launch(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, int rows) {
    using P = PairShape<T, ORDER>;
    PairLaunch p{pair_box<T, ORDER>(g, x, z), 0, rows, 0};
    if (p.box.xb <= p.box.xa) return p;
    p.bands = (p.box.xb - p.box.xa + P::U * P::N - 1) / (P::U * P::N);
    const int height = p.box.zb - p.box.za;
    if (rows <= 0) {
        const int resident = resident_blocks<pair_first_kernel<T, ORDER>>() * kStepWarps;  // pair warps at once
        const long long per_segment_row = static_cast<long long>(p.bands) * g.n_shots;  // warps a row of segments
        const int at64 = static_cast<int>(per_segment_row * ((height + 63) / 64));
        const int waves = (at64 + resident - 1) / resident;
        const int segments = std::max<long long>(1, static_cast<long long>(waves) * resident / per_segment_row);
        p.rows = std::max(16, (height + segments - 1) / segments);
    }
    p.blocks = (p.bands * ((height + p.rows - 1) / p.rows) + kStepWarps - 1) / kStepWarps;
    return p;
}

/// Hx' = Hx - cq * Dz+[Ey] from the Ey rows q-R+1 .. q+R (e[0 .. 2R-1]).
template <typename T, int ORDER, int N>
__device__ __forceinline__ Pack<T, N> plain_hx(const GridParams<T>& g, const Pack<T, N>& old, const Pack<T, N>& cq,
                                               const Pack<T, N>* e) {
    constexpr int R = ORDER / 2;
    Pack<T, N> h;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        T dz = forward_difference<T, ORDER>(rows_at(e, R - 1, j));
        dz *= g.inv_dz;
        h.v[j] = hx_update(old.v[j], cq.v[j], dz);
    }
    return h;
}

/// Hz' = Hz + cq * Dx+[Ey] at one row (x neighbours by shuffles).
template <typename T, int ORDER, int N>
__device__ __forceinline__ Pack<T, N> plain_hz(const GridParams<T>& g, const Pack<T, N>& old, const Pack<T, N>& cq,
                                               const Pack<T, N>& ey) {
    using S = StepShape<T, ORDER>;
    constexpr int R = S::R, HL = S::HL;
    T e[S::W];
    lane_window<N, HL>(ey, e);
    Pack<T, N> h;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        T dx = forward_difference<T, ORDER>(lanes_at(e, HL * N + j));
        dx *= g.inv_dx;
        h.v[j] = hz_update(old.v[j], cq.v[j], dx);
    }
    return h;
}

/// Ey' = ca * Ey + cb * (Dx-[Hz] - Dz-[Hx]) at one row, hx the Hx rows r-R .. r+R-1.
template <typename T, int ORDER, int N>
__device__ __forceinline__ Pack<T, N> plain_ey(const GridParams<T>& g, const Pack<T, N>& ey, const Pack<T, N>& ca,
                                               const Pack<T, N>& cb, const Pack<T, N>& hz, const Pack<T, N>* hx) {
    using S = StepShape<T, ORDER>;
    constexpr int R = S::R, HL = S::HL;
    T h[S::W];
    lane_window<N, HL>(hz, h);
    Pack<T, N> e;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        T dx = backward_difference<T, ORDER>(lanes_at(h, HL * N + j));
        T dz = backward_difference<T, ORDER>(rows_at(hx, R, j));
        dx *= g.inv_dx;
        dz *= g.inv_dz;
        e.v[j] = ey_update(ey.v[j], ca.v[j], cb.v[j], dx, dz);
    }
    return e;
}

/// A pair warp's source points (of its shot), 32 at a time: lane l holds
/// point first + l's row, column and term (weight * wavelet[m]).
template <typename T>
struct PointChunk {
    int row = -1, col = 0;
    T term = 0;
    __device__ __forceinline__ PointChunk(const GridParams<T>& g, const StepSources& s, int e, int end) {
        if (e < end && node_at(g, s.op.source_index[e], col, row))
            term = static_cast<T>(s.op.source_weight[e] *
                                  s.wavelets[static_cast<std::size_t>(s.op.source_shot[e]) * s.nt + s.m]);
        else
            row = -1;
    }
    /// Adds the terms of the points at row r to ey, whose lane's first column is c0, in point order.
    template <int N>
    __device__ __forceinline__ void add(int r, int c0, Pack<T, N>& ey) const {
        for (unsigned hit = __ballot_sync(0xffffffffu, row == r); hit; hit &= hit - 1) {
            const int l = __ffs(hit) - 1;
            const int c = __shfl_sync(0xffffffffu, col, l);
            const T t = __shfl_sync(0xffffffffu, term, l);
#pragma unroll
            for (int j = 0; j < N; ++j)
                if (c0 + j == c) ey.v[j] = ey.v[j] + t;
        }
    }
};

/// The loads of one row of a pair warp (row i): Ey^n at i+2R-1, Hx^n and cq at i+R-1, Hz^n, cq, ca, cb at i.
template <typename T, int N>
struct PairRow {
    Pack<T, N> ey, hx, cq_h, hz, cq, ca, cb;
};

template <typename T, int ORDER>
__device__ __forceinline__ void pair_warp(const GridParams<T>& g, const MaterialView<T>& m, const PairLaunch& p,
                                          const TmFields<T>& in, const TmFields<T>& mid, const TmFields<T>& out,
                                          const StepSources& src, int block, int shot_index) {
    using P = PairShape<T, ORDER>;
    constexpr int N = P::N, R = P::R;
    const int lane = threadIdx.x & 31;
    const int item = block * kStepWarps + static_cast<int>(threadIdx.x) / 32, seg = item / p.bands;
    const int band = item - seg * p.bands;
    const int z0 = p.box.za + seg * p.rows, z1 = min(z0 + p.rows, p.box.zb);
    if (z0 >= z1) return;  // the whole warp
    const int c0 = p.box.xa + band * P::U * N + (lane - P::HL) * N;  // this lane's first column
    const bool owner = lane >= P::HL && lane < 32 - P::HL && c0 < p.box.xb;
    // where the second step's warps around the box read the first step's H: within their neighbour lanes'
    // columns (and one pack more) and 2R rows of the box's edges
    constexpr int ring_cols = (StepShape<T, ORDER>::HL + 1) * N;
    const bool ring_x = c0 < p.box.xa + ring_cols || c0 + N > p.box.xb - ring_cols;
    auto ring = [&](int r) { return ring_x || r < p.box.za + 2 * R || r >= p.box.zb - 2 * R; };
    const std::ptrdiff_t col = static_cast<std::ptrdiff_t>(g.origin) + min(c0, g.stride - kMaxHalo - N);
    const std::size_t shot = shot_index * g.shot_stride;
    auto at = [&](int r) { return col + static_cast<std::ptrdiff_t>(r) * g.stride; };
    auto coefs = [&](const T* a, int r) { return load_pack<N>(a + at(r)); };
    auto cq_row = [&](int r) {
        if (m.cq_uniform == T(0)) return coefs(m.cq, r);
        Pack<T, N> v;
#pragma unroll
        for (int j = 0; j < N; ++j) v.v[j] = m.cq_uniform;
        return v;
    };
    auto row_loads = [&](int i) {
        const int q = i + R - 1;
        return PairRow<T, N>{load_pack<N>(in.ey + shot + at(i + 2 * R - 1)), load_pack<N>(in.hx + shot + at(q)),
                             cq_row(q), load_pack<N>(in.hz + shot + at(i)), cq_row(i), coefs(m.ca, i),
                             coefs(m.cb, i)};
    };
    // the shot's source points: the first 32 in registers, their rows' range
    const int src_begin = src.op.shot_source_begin[shot_index], src_end = src.op.shot_source_begin[shot_index + 1];
    const PointChunk<T> points(g, src, src_begin + lane, src_end);
    int src_lo = points.row >= 0 ? points.row : INT_MAX, src_hi = points.row;
    for (int e = src_begin + 32 + lane; e < src_end; e += 32) {
        const PointChunk<T> more(g, src, e, src_end);
        if (more.row >= 0) src_lo = min(src_lo, more.row), src_hi = max(src_hi, more.row);
    }
    for (int d = 16; d > 0; d /= 2) {
        src_lo = min(src_lo, __shfl_xor_sync(0xffffffffu, src_lo, d));
        src_hi = max(src_hi, __shfl_xor_sync(0xffffffffu, src_hi, d));
    }

    Pack<T, N> ew[2 * R];   // Ey^n rows i .. i+2R-1
    Pack<T, N> hw[2 * R];   // Hx^{n+1/2} rows i-R .. i+R-1
    Pack<T, N> zl[2 * R];   // Hz^{n+1/2} rows i-2R+1 .. i
    Pack<T, N> e1w[2 * R];  // Ey^{n+1} rows i-2R+1 .. i
    Pack<T, N> h2w[2 * R];  // Hx^{n+3/2} rows i-3R+1 .. i-R
    const int first = z0 - 4 * R + 2, last = z1 + 2 * R - 2;
#pragma unroll
    for (int k = 0; k < 2 * R - 1; ++k) ew[k] = load_pack<N>(in.ey + shot + at(first + k));
    PairRow<T, N> next = row_loads(first);
    for (int i = first; i <= last; ++i) {
        // this row's loads were issued a row ago; the next row's go out before the arithmetic
        const PairRow<T, N> cur = next;
        if (i < last) next = row_loads(i + 1);
        // the coefficients of the second step's rows (read a few rows ago: cached), before the arithmetic
        const Pack<T, N> cq3 = cq_row(i - R), cq4 = cq_row(i - 2 * R + 1), ca4 = coefs(m.ca, i - 2 * R + 1),
                         cb4 = coefs(m.cb, i - 2 * R + 1);
        ew[2 * R - 1] = cur.ey;
        // Hx^{n+1/2} at row i+R-1
        const int q = i + R - 1;
        hw[2 * R - 1] = plain_hx<T, ORDER, N>(g, cur.hx, cur.cq_h, ew);
        if (owner && q >= z0 && q < z1 && ring(q)) store_pack(mid.hx + shot + at(q), hw[2 * R - 1], N);
        // Hz^{n+1/2}, Ey^{n+1} (+ the source term) at row i
        if (i >= z0 - 2 * R + 1) {
            zl[2 * R - 1] = plain_hz<T, ORDER, N>(g, cur.hz, cur.cq, ew[0]);
            e1w[2 * R - 1] = plain_ey<T, ORDER, N>(g, ew[0], cur.ca, cur.cb, zl[2 * R - 1], hw);
            if (i >= src_lo && i <= src_hi) {
                points.add(i, c0, e1w[2 * R - 1]);
                for (int e = src_begin + 32; e < src_end; e += 32)
                    PointChunk<T>(g, src, e + lane, src_end).add(i, c0, e1w[2 * R - 1]);
            }
            if (owner && i >= z0 && i < z1) {
                store_pack(mid.ey + shot + at(i), e1w[2 * R - 1], N);
                if (ring(i)) store_pack(mid.hz + shot + at(i), zl[2 * R - 1], N);
            }
        }
        // Hx^{n+3/2} at row i-R
        if (i >= z0) {
            const int a = i - R;
            h2w[2 * R - 1] = plain_hx<T, ORDER, N>(g, hw[0], cq3, e1w);
            if (owner && a >= z0 && a < z1) store_pack(out.hx + shot + at(a), h2w[2 * R - 1], N);
        }
        // Hz^{n+3/2}, Ey^{n+2} at row i-2R+1
        if (i >= z0 + 2 * R - 1) {
            const int r = i - 2 * R + 1;
            const Pack<T, N> hz = plain_hz<T, ORDER, N>(g, zl[0], cq4, e1w[0]);
            const Pack<T, N> ey = plain_ey<T, ORDER, N>(g, e1w[0], ca4, cb4, hz, h2w);
            if (owner) {
                store_pack(out.hz + shot + at(r), hz, N);
                store_pack(out.ey + shot + at(r), ey, N);
            }
        }
#pragma unroll
        for (int k = 0; k < 2 * R - 1; ++k) {
            ew[k] = ew[k + 1];
            hw[k] = hw[k + 1];
            zl[k] = zl[k + 1];
            e1w[k] = e1w[k + 1];
            h2w[k] = h2w[k + 1];
        }
    }
}

/// step_pair's first launch: step_kernel's blocks for the first step
/// outside the pair box (short: they go first), then the pair warps.
template <typename T, int ORDER>
__global__ void __launch_bounds__(kStepWarps * 32)
    pair_first_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, Interior box, StepLaunch l,
                      PairLaunch p, TmFields<T> in, TmFields<T> mid, TmFields<T> out, StepSources src,
                      StepSamples samples) {
    wait_for_previous_kernel();
    allow_next_kernel();
    const int step_blocks = static_cast<int>(gridDim.x) - p.blocks;
    if (static_cast<int>(blockIdx.x) >= step_blocks) {
        pair_warp<T, ORDER>(g, m, p, in, mid, out, src, blockIdx.x - step_blocks, blockIdx.y);
        return;
    }
    step_block<T, ORDER, T, true>(g, m, x, z, box, l, in, mid, static_cast<T*>(nullptr), samples, blockIdx.x);
}

template <typename T, typename Stored>
__global__ void inject_sources_kernel(GridParams<T> g, SparseOperators op, const double* wavelets, int nt, int m,
                                      TmFields<T> f, Stored* keep) {
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < op.n_source_points)
        with_ey(f, [&](const auto& ey) { inject_source_point(g, op, wavelets, nt, m, ey, keep, e); });
}

template <typename T>
__global__ void sample_receivers_kernel(GridParams<T> g, SparseOperators op, TmFields<T> f, double* traces, int nt,
                                        int m) {
    const int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    with_ey(f, [&](const auto& ey) { sample_row(g, op, ey, traces, nt, m, r); });
}

/// lambda + the adjoint source at step m at receiver node j (its entries in CPU order).
template <typename T>
__device__ __forceinline__ T add_adjoint_source(const SparseOperators& op, const double* adjoint_source, int nt, int m,
                                                int j, T lambda) {
    for (int e = op.node_begin[j]; e < op.node_begin[j + 1]; ++e)
        lambda += static_cast<T>(op.node_weight[e] * adjoint_source[static_cast<std::size_t>(op.node_row[e]) * nt + m]);
    return lambda;
}

/// lambda_ey += the adjoint source at step m, at receiver node j.
template <typename T>
__device__ __forceinline__ void inject_adjoint_node(const GridParams<T>& g, const SparseOperators& op,
                                                    const double* adjoint_source, int nt, int m, T* lam, int j) {
    if (j >= op.n_nodes) return;
    T& v = lam[op.node_shot[j] * g.shot_stride + op.node_index[j]];
    v = add_adjoint_source(op, adjoint_source, nt, m, j, v);
}

/// grad_wavelet[s][m] = shot s's source weights . lambda_ey, by one warp.
template <typename T>
__device__ __forceinline__ void source_gradient_shot(const GridParams<T>& g, const SparseOperators& op, const T* lam,
                                                     double* grad, int nt, int m, int s) {
    if (s >= op.n_shots) return;
    const double acc = warp_ordered_dot(op.shot_source_begin[s], op.shot_source_begin[s + 1], op.source_index,
                                        op.source_weight, lam + s * g.shot_stride);
    if ((threadIdx.x & 31) == 0) grad[static_cast<std::size_t>(s) * nt + m] = acc;
}

/// The next step's adjoint source, between two adjoint steps: all but lambda
/// itself (the operator's tables and the source's terms, up to kTerms a node)
/// is read before waiting for the step that writes lambda, so that only
/// lambda's load and store are left between the two steps.
template <typename T>
__global__ void inject_adjoint_kernel(GridParams<T> g, SparseOperators op, const double* adjoint_source, int nt,
                                      int m, T* lam) {
    constexpr int kTerms = 4;
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    T terms[kTerms];
    int count = 0;
    std::size_t at = 0;
    if (j < op.n_nodes) {
        at = op.node_shot[j] * g.shot_stride + op.node_index[j];
        const int begin = op.node_begin[j];
        count = op.node_begin[j + 1] - begin;
#pragma unroll
        for (int k = 0; k < kTerms; ++k)
            if (k < count)
                terms[k] = static_cast<T>(op.node_weight[begin + k] *
                                          adjoint_source[static_cast<std::size_t>(op.node_row[begin + k]) * nt + m]);
    }
    wait_for_previous_kernel();
    allow_next_kernel();
    if (j >= op.n_nodes) return;
    if (count > kTerms) {  // (a node that many receivers share: in entry order, as add_adjoint_source)
        inject_adjoint_node(g, op, adjoint_source, nt, m, lam, j);
        return;
    }
    T v = lam[at];
#pragma unroll
    for (int k = 0; k < kTerms; ++k)
        if (k < count) v += terms[k];  // lambda += each term in entry order, as add_adjoint_source
    lam[at] = v;
}

/// One adjoint step's imaging condition at the pack of nodes at i, added
/// shot after shot to the accumulators gp, gn, il (`v`'s levels, w its
/// weight, `lambda_ey` the step's lambda^{n+1}).
template <typename T, typename Stored, int N>
__device__ __forceinline__ void image_shots(const GridParams<T>& g, const T* __restrict__ lambda_ey,
                                            const ImagingView<T, Stored>& v, bool illumination, std::size_t i,
                                            Pack<double, N>& gp, Pack<double, N>& gn, Pack<double, N>& il) {
    const double w = v.weight;
#pragma unroll 2
    for (int s = 0; s < g.n_shots; ++s) {
        // g_prev += w * lambda^{n+1} * Ey^n;  g_next += w * lambda^{n+1} * Ey^{n+1}
        const std::size_t o = i + s * g.shot_stride;
        const Pack<T, N> lam = load_pack<N>(lambda_ey + o);
        if (v.ey_prev) {
            const Pack<Stored, N> e = load_pack<N>(v.ey_prev + o);
            const double sp = v.scale_prev ? v.scale_prev[s] : 1.0;
#pragma unroll
            for (int j = 0; j < N; ++j) {
                const double wl = w * static_cast<double>(lam.v[j]);
                gp.v[j] += wl * (load_as<double>(e.v[j]) * sp);
            }
        }
        if (v.ey_next) {
            const Pack<Stored, N> e = load_pack<N>(v.ey_next + o);
            const double sn = v.scale_next ? v.scale_next[s] : 1.0;
#pragma unroll
            for (int j = 0; j < N; ++j) {
                const double wl = w * static_cast<double>(lam.v[j]);
                const double x = load_as<double>(e.v[j]) * sn;
                gn.v[j] += wl * x;
                if (illumination) il.v[j] += w * x * x;
            }
        }
    }
}

template <typename T, typename Stored>
__host__ __device__ __forceinline__ bool has_levels(const ImagingView<T, Stored>& v) {
    return v.ey_prev || v.ey_next;
}

/// The imaging condition at the pack of nodes (ix0, iz): of one adjoint
/// step, or of two (PairedImaging: step m + 1 first, where the row takes
/// it). One thread runs through the steps and in each through the shots in
/// order, adding each to the per-node accumulators it keeps in registers
/// (no per-shot accumulators, no atomics).
template <typename T, typename Stored>
__device__ __forceinline__ void image_pack(const GridParams<T>& g, const T* __restrict__ lambda_ey,
                                           const ImagingView<T, Stored>& img, const PairedImaging<T, Stored>& pair,
                                           int ix0, int iz) {
    constexpr int N = kLanes<T>;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * g.stride + ix0;
    const int n = g.nx - ix0;
    const bool later = (iz & 1) == pair.later_parity && has_levels(pair.later);
    const bool prev = img.ey_prev || (later && pair.later.ey_prev);
    const bool next = img.ey_next || (later && pair.later.ey_next);
    const bool illumination = next && img.illumination;
    Pack<double, N> gp{}, gn{}, il{};
    if (prev) gp = load_pack<N>(img.g_ey_prev + i);
    if (next) gn = load_pack<N>(img.g_ey_next + i);
    if (illumination) il = load_pack<N>(img.illumination + i);
    if (later) image_shots(g, pair.later_lambda, pair.later, illumination, i, gp, gn, il);
    image_shots(g, lambda_ey, img, illumination, i, gp, gn, il);
    if (prev) store_pack(img.g_ey_prev + i, gp, n);
    if (next) store_pack(img.g_ey_next + i, gn, n);
    if (illumination) store_pack(img.illumination + i, il, n);
}

/// Pass 1 at a pack of nodes; with COUPLED (`lin`), the second-order
/// adjoint's pass 1 (cpu::second_order_e_prepare), which also transposes the
/// Born scattering term.
template <typename T, bool COUPLED = false>
__device__ __forceinline__ void adjoint_e_prepare_pack(const GridParams<T>& g, const MaterialView<T>& m,
                                                       const CpmlAxis<T>& x, const CpmlAxis<T>& z,
                                                       const TmFields<T>& adj, const TmFields<T>& out,
                                                       const AdjointScratch<T>& sc, int ix0, int iz, int shot,
                                                       bool frame, const BornCoupling<T>* lin = nullptr) {
    constexpr int N = kLanes<T>;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * g.stride + ix0;
    const std::size_t o = i + static_cast<std::size_t>(shot) * g.shot_stride;
    const int n = g.nx - ix0;
    const Pack<T, N> ca = load_pack<N>(m.ca + i), cb = load_pack<N>(m.cb + i);
    Pack<T, N> lam = load_pack<N>(adj.ey + o);
    Pack<T, N> dca{}, dcb{}, lam1{};
    if constexpr (COUPLED) {
        dca = load_pack<N>(lin->dca + i);
        dcb = load_pack<N>(lin->dcb + i);
        lam1 = load_pack<N>(lin->lambda_ey + o);
    }
    // the CPML memories and profiles in the strips, loaded with the rest (as in frame_h_pack)
    auto [xp, zp, mxp, pz, xc, zb, za, zk] = load_frame_cpml<false>(g, x, z, adj.psi_hz_x, adj.psi_hx_z, o, ix0, iz);
    Pack<T, N> qx, qz;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        T t = cb.v[j] * lam.v[j];
        if constexpr (COUPLED) t += dcb.v[j] * lam1.v[j];
        qx.v[j] = t;
        qz.v[j] = -t;
        const int ix = ix0 + j;
        if (xp && ix < g.nx && in_strip(x, ix, g.nx))
            qx.v[j] = cpml_stretch_transpose(t, mxp.v[j], xc.b.v[j], xc.a.v[j], xc.ik.v[j]);
        if (zp) qz.v[j] = cpml_stretch_transpose(-t, pz.v[j], zb, za, zk);
        if constexpr (COUPLED) lam.v[j] = ca.v[j] * lam.v[j] + dca.v[j] * lam1.v[j];
        else lam.v[j] = ca.v[j] * lam.v[j];
    }
    if (xp) store_pack(adj.psi_hz_x + o, mxp, n);
    if (zp && frame) store_pack(out.psi_hx_z + o, pz, n);  // (the marching warps store the ring's)
    store_pack(sc.q_x + o, qx, n);
    store_pack(sc.q_z + o, qz, n);
    if (frame) store_pack(out.ey + o, lam, n);
}

template <typename T, int ORDER>
__device__ __forceinline__ void adjoint_h_pack(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                                               const CpmlAxis<T>& z, const TmFields<T>& adj, const TmFields<T>& out,
                                               const AdjointScratch<T>& sc, int ix0, int iz, int shot, bool frame) {
    constexpr int N = kLanes<T>, R = ORDER / 2, H = kMaxHalo;
    const int stride = g.stride;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * stride + ix0;
    const std::size_t o = i + static_cast<std::size_t>(shot) * g.shot_stride;
    const int n = g.nx - ix0;
    T q[N + 2 * H];
    load_row_window<N>(sc.q_x + o, q);
    const T* qz_ = sc.q_z + o;
    Pack<T, N> up[R], dn[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
        up[k] = load_pack<N>(qz_ + (k + 1) * stride);
        dn[k] = load_pack<N>(qz_ - k * stride);
    }
    Pack<T, N> lhz = load_pack<N>(adj.hz + o), lhx = load_pack<N>(adj.hx + o);
    const Pack<T, N> cq = load_pack<N>(m.cq + i);
    auto [xp, zp, mxp, pzm, xc, zb, za, zk] = load_frame_cpml<true>(g, x, z, adj.psi_ey_x, adj.psi_ey_z, o, ix0, iz);
    Pack<T, N> px, pz;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        // lambda_hz -= Dx+[q_x];  lambda_hx -= Dz+[q_z]
        const T dx = forward_difference<T, ORDER>(lanes_at(q, H + j));
        const T dz = forward_difference<T, ORDER>(split_rows_at<true>(up, dn, j));
        lhz.v[j] = adjoint_h_update(lhz.v[j], dx, g.inv_dx);
        lhx.v[j] = adjoint_h_update(lhx.v[j], dz, g.inv_dz);
        const T sx = cq.v[j] * lhz.v[j];
        const T sz = -cq.v[j] * lhx.v[j];
        px.v[j] = sx;
        pz.v[j] = sz;
        const int ix = ix0 + j;
        if (xp && ix < g.nx && in_strip(x, ix, g.nx))
            px.v[j] = cpml_stretch_transpose(sx, mxp.v[j], xc.b.v[j], xc.a.v[j], xc.ik.v[j]);
        if (zp) pz.v[j] = cpml_stretch_transpose(sz, pzm.v[j], zb, za, zk);
    }
    if (xp) store_pack(adj.psi_ey_x + o, mxp, n);
    if (frame) {
        store_pack(out.hz + o, lhz, n);
        store_pack(out.hx + o, lhx, n);
    }
    if (zp && frame) store_pack(out.psi_ey_z + o, pzm, n);  // (the marching warps store the ring's)
    store_pack(sc.p_x + o, px, n);
    store_pack(sc.p_z + o, pz, n);
}

/// Pass 3 at a pack of the frame; then, when `first` >= 0, the next step's
/// adjoint source at the receiver nodes first, first + 1, ... of the pack.
template <typename T, int ORDER>
__device__ __forceinline__ void adjoint_e_finish_pack(const GridParams<T>& g, const TmFields<T>& adj,
                                                      const AdjointScratch<T>& sc, int ix0, int iz, int shot,
                                                      const AdjointSparse& sp, int first) {
    constexpr int N = kLanes<T>, R = ORDER / 2, H = kMaxHalo;
    const int stride = g.stride;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * stride + ix0;
    const std::size_t o = i + static_cast<std::size_t>(shot) * g.shot_stride;
    T p[N + 2 * H];
    load_row_window<N>(sc.p_x + o, p);
    const T* pz_ = sc.p_z + o;
    Pack<T, N> up[R], dn[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
        up[k] = load_pack<N>(pz_ + k * stride);
        dn[k] = load_pack<N>(pz_ - (k + 1) * stride);
    }
    Pack<T, N> lam = load_pack<N>(adj.ey + o);
#pragma unroll
    for (int j = 0; j < N; ++j) {
        // lambda_ey -= Dx-[p_x] + Dz-[p_z]
        const T dx = backward_difference<T, ORDER>(lanes_at(p, H + j));
        const T dz = backward_difference<T, ORDER>(split_rows_at<false>(up, dn, j));
        lam.v[j] = adjoint_ey_finish(lam.v[j], dx, g.inv_dx, dz, g.inv_dz);
    }
    for (int j = first; j >= 0 && j < sp.op.n_nodes && sp.op.node_shot[j] == shot; ++j) {
        const std::ptrdiff_t k = static_cast<std::ptrdiff_t>(sp.op.node_index[j]) - static_cast<std::ptrdiff_t>(i);
        if (k < 0 || k >= N) break;
#pragma unroll
        for (int q = 0; q < N; ++q)
            if (q == k) lam.v[q] = add_adjoint_source(sp.op, sp.adjoint_source, sp.nt, sp.m - 1, j, lam.v[q]);
    }
    store_pack(adj.ey + o, lam, g.nx - ix0);
}

// The adjoint step's x strips (the columns left and right of what its warps
// march, all rows) in tiles: a block takes one strip's whole width and a
// few rows of one shot and runs the three passes over them, with q and p in
// shared memory, recomputing from `in` what the passes read around the
// tile: q_x and p_x in the columns beside the strip (interior columns
// without CPML terms, or outside the grid, where they are zero) and q_z and
// p_z in the rows above and below (whose z memories are read from `in` and
// written to `out`). So a tile reads nothing that another block writes, and
// joins the step's first launch; the x memories, which only the tile
// updates, stay in place. A strip's whole width a tile, because
// recomputing q_x or p_x in another tile's strip columns would read x
// memories that tile updates. (The forward step's frame in such tiles,
// Hz and Hx in shared memory, ran slower than its node kernels.)

/// A tile's shape: its columns are `own` packs from the strip's first
/// column, with QH packs more on each side for q_x (p_x needs it R columns
/// beyond its own PH packs each side), its `rows` rows; the shared arrays
/// q_x (the tile's rows, all its packs), q_z (own packs, 4R - 2 more rows),
/// p_x (own and PH packs each side), p_z (own packs, 2R - 1 more rows).
template <typename T, int ORDER>
struct TileShape {
    static constexpr int N = kLanes<T>, R = ORDER / 2, PH = (R + N - 1) / N, QH = 2 * PH;
    int own, rows;
    __host__ __device__ int qx_width() const { return (own + 2 * QH) * N; }
    __host__ __device__ int px_width() const { return (own + 2 * PH) * N; }
    __host__ __device__ int qz_rows() const { return rows + 4 * R - 2; }
    __host__ __device__ int pz_rows() const { return rows + 2 * R - 1; }
    __host__ __device__ std::size_t values() const {
        return static_cast<std::size_t>(rows) * (qx_width() + px_width()) +
               static_cast<std::size_t>(qz_rows() + pz_rows()) * own * N;
    }
};

/// The adjoint step's tiles: the strips' columns [0, left_end) and
/// [right_begin, nx), tiles of `own` packs and `rows` rows, `per_shot`
/// tiles a shot (the two strips in turn down the rows); `own` is 0 when the
/// frame kernels do the strips.
struct StripTiles {
    int own = 0, rows = 0, left_end = 0, right_begin = 0, per_shot = 0;
    std::size_t shared_bytes = 0;
};

/// The tiles beside march box `b` (the strips are its sides): of 32 rows,
/// or 16 or 8 where those would take more than kMaxTileShared bytes of
/// shared memory (every block of the launch holds that much); none when 8
/// rows would too (a wide CPML) or there is no interior. The tallest tiles
/// that fit run fastest.
constexpr std::size_t kMaxTileShared = 32 * 1024;
template <typename T, int ORDER>
StripTiles strip_tiles(const GridParams<T>& g, const Interior& b) {
    constexpr int N = kLanes<T>;
    StripTiles t;
    if (b.xb <= b.xa) return t;
    const int own = std::max((b.xa + N - 1) / N, (g.nx - b.xb + N - 1) / N);
    for (int rows = 32; rows >= 8; rows /= 2) {
        const std::size_t bytes = TileShape<T, ORDER>{own, rows}.values() * sizeof(T);
        if (bytes > kMaxTileShared) continue;
        t.own = own;
        t.rows = rows;
        t.left_end = b.xa;
        t.right_begin = b.xb;
        t.per_shot = 2 * ((g.nz + rows - 1) / rows);
        t.shared_bytes = bytes;
        break;
    }
    return t;
}

/// Pack v's values at a (shared memory).
template <typename T, int N>
__device__ __forceinline__ void put(T* a, const Pack<T, N>& v) {
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = v.v[j];
}

/// Tile `tile` of shot `shot`: passes 1-3 of the adjoint step (cpu::
/// adjoint_e_prepare, adjoint_h, adjoint_e_finish) at its nodes, each node's
/// operations the CPU's, in the same order. `smem` holds TileShape::values().
template <typename T, int ORDER>
__device__ __forceinline__ void adjoint_tile(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                                             const CpmlAxis<T>& z, const TmFields<T>& in, const TmFields<T>& out,
                                             const StripTiles& tiles, int tile, int shot, T* smem) {
    using S = TileShape<T, ORDER>;
    constexpr int N = S::N, R = S::R, PH = S::PH, QH = S::QH;
    const S shape{tiles.own, tiles.rows};
    const int own = shape.own, TR = shape.rows, qxw = shape.qx_width(), pxw = shape.px_width(), ow = own * N;
    T* const sq_x = smem;                         // [TR][qxw], column 0 = first - QH*N
    T* const sq_z = sq_x + TR * qxw;              // [qz_rows][ow], row 0 = r0 - 2R + 1
    T* const sp_x = sq_z + shape.qz_rows() * ow;  // [TR][pxw], column 0 = first - PH*N
    T* const sp_z = sp_x + TR * pxw;              // [pz_rows][ow], row 0 = r0 - R
    const bool right = tile & 1;
    const int r0 = (tile >> 1) * TR, r1 = min(r0 + TR, g.nz);
    const int first = right ? tiles.right_begin : 0, end = right ? g.nx : tiles.left_end;
    const std::size_t shot_off = static_cast<std::size_t>(shot) * g.shot_stride;
    auto index = [&](int r, int c) { return g.origin + static_cast<std::ptrdiff_t>(r) * g.stride + c; };
    auto in_grid = [&](int r, int c0) { return r >= 0 && r < g.nz && c0 + N > 0 && c0 < g.nx; };
    auto zero_beyond = [&](Pack<T, N>& v, int c0) {
#pragma unroll
        for (int j = 0; j < N; ++j)
            if (c0 + j >= g.nx) v.v[j] = 0;
    };
    auto x_cpml = [&](int c) { return c < g.nx && in_strip(x, c, g.nx); };
    const int tid = threadIdx.x, threads = blockDim.x;

    // pass 1, q_x at the tile's rows and all its packs (the x memory at the strip's nodes)
    for (int t = tid; t < TR * (own + 2 * QH); t += threads) {
        const int i = t / (own + 2 * QH), pc = t - i * (own + 2 * QH), r = r0 + i, c0 = first + (pc - QH) * N;
        if (r >= r1) continue;
        Pack<T, N> qx{};
        if (in_grid(r, c0)) {
            const std::size_t c = index(r, c0), o = c + shot_off;
            const Pack<T, N> lam = load_pack<N>(in.ey + o), cb = load_pack<N>(m.cb + c);
            const bool mine = c0 >= first && c0 < end, xp = mine && (x_cpml(c0) || x_cpml(c0 + N - 1));
            Pack<T, N> mx;
            if (xp) mx = load_pack<N>(in.psi_hz_x + o);
#pragma unroll
            for (int j = 0; j < N; ++j) {
                const T tv = cb.v[j] * lam.v[j];
                const int ix = c0 + j;
                qx.v[j] = tv;
                if (xp && x_cpml(ix)) qx.v[j] = cpml_stretch_transpose(tv, mx.v[j], x.b_int[ix], x.a_int[ix], x.inv_kappa_int[ix]);
            }
            if (xp) store_pack(in.psi_hz_x + o, mx, g.nx - c0);
            zero_beyond(qx, c0);
        }
        put<T, N>(sq_x + i * qxw + pc * N, qx);
    }
    // pass 1, q_z at the strip's packs, rows r0-2R+1 .. r1+2R-2 (the z memory from `in` to `out` at its rows)
    for (int t = tid; t < shape.qz_rows() * own; t += threads) {
        const int k = t / own, po = t - k * own, r = r0 - 2 * R + 1 + k, c0 = first + po * N;
        Pack<T, N> qz{};
        if (c0 < end && in_grid(r, c0) && r < r1 + 2 * R - 1) {
            const std::size_t c = index(r, c0), o = c + shot_off;
            const Pack<T, N> lam = load_pack<N>(in.ey + o), cb = load_pack<N>(m.cb + c);
            const bool zp = in_strip(z, r, g.nz);
            Pack<T, N> mz;
            T zb = 0, za = 0, zk = 0;
            if (zp) mz = load_pack<N>(in.psi_hx_z + o), zb = z.b_int[r], za = z.a_int[r], zk = z.inv_kappa_int[r];
#pragma unroll
            for (int j = 0; j < N; ++j) {
                const T tv = cb.v[j] * lam.v[j];
                qz.v[j] = -tv;
                if (zp) qz.v[j] = cpml_stretch_transpose(-tv, mz.v[j], zb, za, zk);
            }
            if (zp && r >= r0 && r < r1) store_pack(out.psi_hx_z + o, mz, g.nx - c0);
            zero_beyond(qz, c0);
        }
        put<T, N>(sq_z + k * ow + po * N, qz);
    }
    __syncthreads();

    // pass 2, lambda_hz and p_x at the tile's rows, the strip's packs and PH more each side (x memory at the strip's)
    for (int t = tid; t < TR * (own + 2 * PH); t += threads) {
        const int i = t / (own + 2 * PH), pp = t - i * (own + 2 * PH), r = r0 + i, c0 = first + (pp - PH) * N;
        if (r >= r1) continue;
        Pack<T, N> px{};
        if (in_grid(r, c0)) {
            const std::size_t c = index(r, c0), o = c + shot_off;
            Pack<T, N> lhz = load_pack<N>(in.hz + o);
            const Pack<T, N> cq = load_pack<N>(m.cq + c);
            const bool mine = c0 >= first && c0 < end, xp = mine && (x_cpml(c0) || x_cpml(c0 + N - 1));
            Pack<T, N> mx;
            if (xp) mx = load_pack<N>(in.psi_ey_x + o);
            const T* q = sq_x + i * qxw + (pp - PH + QH) * N;
#pragma unroll
            for (int j = 0; j < N; ++j) {
                const T dx = forward_difference<T, ORDER>(lanes_at(q, j));
                lhz.v[j] = adjoint_h_update(lhz.v[j], dx, g.inv_dx);
                const T sx = cq.v[j] * lhz.v[j];
                const int ix = c0 + j;
                px.v[j] = sx;
                if (xp && x_cpml(ix)) px.v[j] = cpml_stretch_transpose(sx, mx.v[j], x.b_half[ix], x.a_half[ix], x.inv_kappa_half[ix]);
            }
            if (mine) store_pack(out.hz + o, lhz, g.nx - c0);
            if (xp) store_pack(in.psi_ey_x + o, mx, g.nx - c0);
            zero_beyond(px, c0);
        }
        put<T, N>(sp_x + i * pxw + pp * N, px);
    }
    // pass 2, lambda_hx and p_z at the strip's packs, rows r0-R .. r1+R-2 (the z memory from `in` to `out` at its rows)
    for (int t = tid; t < shape.pz_rows() * own; t += threads) {
        const int k = t / own, po = t - k * own, r = r0 - R + k, c0 = first + po * N;
        Pack<T, N> pz{};
        if (c0 < end && in_grid(r, c0) && r < r1 + R - 1) {
            const std::size_t c = index(r, c0), o = c + shot_off;
            Pack<T, N> lhx = load_pack<N>(in.hx + o);
            const Pack<T, N> cq = load_pack<N>(m.cq + c);
            const bool zp = in_strip(z, r, g.nz);
            Pack<T, N> mz;
            T zb = 0, za = 0, zk = 0;
            if (zp) mz = load_pack<N>(in.psi_ey_z + o), zb = z.b_half[r], za = z.a_half[r], zk = z.inv_kappa_half[r];
            const T* q = sq_z + (k + R - 1) * ow + po * N;  // q_z at row r
#pragma unroll
            for (int j = 0; j < N; ++j) {
                const T dz = forward_difference<T, ORDER>(strided_at(q + j, ow));
                lhx.v[j] = adjoint_h_update(lhx.v[j], dz, g.inv_dz);
                const T sz = -cq.v[j] * lhx.v[j];
                pz.v[j] = sz;
                if (zp) pz.v[j] = cpml_stretch_transpose(sz, mz.v[j], zb, za, zk);
            }
            if (r >= r0 && r < r1) {
                store_pack(out.hx + o, lhx, g.nx - c0);
                if (zp) store_pack(out.psi_ey_z + o, mz, g.nx - c0);
            }
            zero_beyond(pz, c0);
        }
        put<T, N>(sp_z + k * ow + po * N, pz);
    }
    __syncthreads();

    // pass 3 at the strip's nodes: lambda_ey = ca * lambda_ey - (Dx-[p_x] + Dz-[p_z])
    for (int t = tid; t < TR * own; t += threads) {
        const int i = t / own, po = t - i * own, r = r0 + i, c0 = first + po * N;
        if (r >= r1 || c0 >= end) continue;
        const std::size_t c = index(r, c0), o = c + shot_off;
        const Pack<T, N> lam = load_pack<N>(in.ey + o), ca = load_pack<N>(m.ca + c);
        const T* p = sp_x + i * pxw + (po + PH) * N;
        const T* pzr = sp_z + (i + R) * ow + po * N;  // p_z at row r
        Pack<T, N> ey;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const T dx = backward_difference<T, ORDER>(lanes_at(p, j));
            const T dz = backward_difference<T, ORDER>(strided_at(pzr + j, ow));
            ey.v[j] = adjoint_ey_finish(ca.v[j] * lam.v[j], dx, g.inv_dx, dz, g.inv_dz);
        }
        store_pack(out.ey + o, ey, g.nx - c0);
    }
}

// The adjoint step in one launch and a small one: the first has the tiles
// of the x strips (strip_tiles), the z strips' and the interior's marching
// warps (the z memories, which the warps recompute for rows of the segment
// above, are read from one buffer and written to the other) and the
// imaging condition; the second adds the next step's adjoint source. The
// imaging condition reads the lambda_ey the step reads (and in pairs of
// steps the one the launch before read) and writes only its accumulators,
// so its blocks (one thread per pack of nodes, all shots in turn) join the
// first launch, spread evenly among the step's blocks: each kind alone
// leaves DRAM bandwidth unused. Where the strips are too wide for
// tiles, the frame (the x strips, all rows) takes three launches instead:
// pass 1 by further blocks of the first, passes 2 and 3 by launches of
// their own, with node kernels (one thread per pack) and q and p in the
// scratch arrays; the warps keep q and p in registers and never write
// them, so pass 1 also writes q (only) over a ring of marched nodes 2R
// wide and pass 2 p (only) over a ring R wide: what the frame's passes 2
// and 3 read there. The tiles save the frame's launches and scratch
// traffic (docs/performance.md, "CUDA tuning constants").
struct AdjointLaunch {
    Interior box, march;         // the interior; with the z strips, all that the warps march (the frame is outside)
    Interior ring1, ring2;       // `march` without the rings of passes 1 and 2
    StripTiles tiles;            // the x strips', when tiles do them (then the frame passes have no packs)
    int bands, strip_blocks, interior_blocks, packs1, packs2, packs3;  // per shot
    int step_blocks, image_blocks;  // the first launch's blocks: the step's (all shots), the imaging's
    int rows;                       // of the interior's segments (kAdjointRows)
    int gradient_blocks;            // ... and before them, the source gradient's
    int inject_blocks;              // the frame's last launch's after its own: the next step's adjoint source
};

/// The shot and the block s of that shot's (tiles, z strips, interior,
/// frame pass 1: AdjointLaunch) that step block o of the first launch does.
/// The shots take turns, block j of every shot before block j + 1 of any,
/// and a shot's blocks come in the order of their rows: its tiles spread
/// evenly among the rest, which are the z strips' above the interior, the
/// interior's, the z strips' below and the frame's. The imaging's blocks,
/// spread evenly over the launch and in the order of their rows too, so
/// read the lambda_ey of all shots while the shots' warps read it, more
/// often from L2 than with each shot's blocks in turn.
__device__ __forceinline__ void adjoint_block(const AdjointLaunch& l, int shots, int o, int& shot, int& s) {
    const int per_shot = l.step_blocks / shots, j = o / shots;
    shot = o - j * shots;
    const int tiles_before = static_cast<int>(static_cast<long long>(j) * l.tiles.per_shot / per_shot);
    if (static_cast<int>(static_cast<long long>(j + 1) * l.tiles.per_shot / per_shot) > tiles_before) {
        s = tiles_before;
        return;
    }
    const int k = j - tiles_before;  // of the rest
    const int top = min((z_strip_segments_above(l.box) * l.bands + kStepWarps - 1) / kStepWarps, l.strip_blocks);
    s = l.tiles.per_shot;
    if (k < top)
        s += k;  // z strips above
    else if (k < top + l.interior_blocks)
        s += l.strip_blocks + k - top;  // the interior
    else if (k < l.strip_blocks + l.interior_blocks)
        s += k - l.interior_blocks;  // z strips below
    else
        s += k;  // the frame's pass 1
}

template <typename T, int ORDER, typename Stored>
__global__ void __launch_bounds__(kStepWarps * 32, step_blocks_per_sm<T>(ORDER))
    adjoint_step_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, AdjointLaunch l,
                        TmFields<T> in, TmFields<T> out, AdjointScratch<T> sc, ImagingView<T, Stored> img,
                        PairedImaging<T, Stored> pair, AdjointSparse sp) {
    wait_for_previous_kernel();
    allow_next_kernel();
    if (static_cast<int>(blockIdx.x) < l.gradient_blocks) {  // of the lambda_ey this step reads
        source_gradient_shot(g, sp.op, in.ey, sp.grad_wavelet, sp.nt, sp.m, (blockIdx.x * blockDim.x + threadIdx.x) / 32);
        return;
    }
    // block b is the imaging's when the count of them up to b grows there
    const long long b = blockIdx.x - l.gradient_blocks, all = l.step_blocks + l.image_blocks;
    const int images_before = static_cast<int>(b * l.image_blocks / all);
    if (static_cast<int>((b + 1) * l.image_blocks / all) > images_before) {
        constexpr int N = kLanes<T>;
        const int row_packs = (g.nx + N - 1) / N, t = images_before * blockDim.x + threadIdx.x;
        const int r = t / row_packs, iz = pair.first_row + r * pair.row_step;
        if (iz < g.nz) image_pack(g, in.ey, img, pair, (t - r * row_packs) * N, iz);
        return;
    }
    int shot, s;
    adjoint_block(l, g.n_shots, static_cast<int>(b) - images_before, shot, s);
    if (s < l.tiles.per_shot) {
        extern __shared__ __align__(16) unsigned char tile_shared[];
        adjoint_tile<T, ORDER>(g, m, x, z, in, out, l.tiles, s, shot, reinterpret_cast<T*>(tile_shared));
        return;
    }
    s -= l.tiles.per_shot;
    if (s < l.strip_blocks) {
        const MarchingWarp<T, ORDER> w(ZStrips{}, g, l.box, l.bands, s, shot);
        adjoint_marching_warp<T, ORDER, true>(g, m, z, in, out, w);
        return;
    }
    s -= l.strip_blocks;
    if (s < l.interior_blocks) {
        const MarchingWarp<T, ORDER> w(g, l.box, l.bands, s, shot, l.rows);
        adjoint_marching_warp<T, ORDER, false>(g, m, z, in, out, w);
        return;
    }
    const int t = (s - l.interior_blocks) * blockDim.x + threadIdx.x;
    int ix0, iz;
    if (t < l.packs1 && frame_nodes(g, l.ring1, t, ix0, iz))
        adjoint_e_prepare_pack<T>(g, m, x, z, in, out, sc, ix0, iz, shot, !inside(l.march, ix0, iz));
}

template <typename T, int ORDER>
__global__ void __launch_bounds__(kStepWarps * 32)
    adjoint_frame_h_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, AdjointLaunch l,
                           TmFields<T> in, TmFields<T> out, AdjointScratch<T> sc) {
    wait_for_previous_kernel();
    allow_next_kernel();
    int ix0, iz;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < l.packs2 && frame_nodes(g, l.ring2, t, ix0, iz))
        adjoint_h_pack<T, ORDER>(g, m, x, z, in, out, sc, ix0, iz, blockIdx.y, !inside(l.march, ix0, iz));
}

template <typename T, int ORDER>
__global__ void __launch_bounds__(kStepWarps * 32)
    adjoint_frame_e_kernel(GridParams<T> g, AdjointLaunch l, TmFields<T> out, AdjointScratch<T> sc, AdjointSparse sp) {
    wait_for_previous_kernel();
    allow_next_kernel();
    const int frame_blocks = static_cast<int>(gridDim.x) - l.inject_blocks;
    if (static_cast<int>(blockIdx.x) >= frame_blocks) {  // step m - 1's adjoint source at the marched nodes
        const int j = (blockIdx.x - frame_blocks) * blockDim.x + threadIdx.x;
        int ix, iz;
        if (blockIdx.y == 0 && j < sp.op.n_nodes && node_at(g, sp.op.node_index[j], ix, iz) && inside(l.march, ix, iz))
            inject_adjoint_node(g, sp.op, sp.adjoint_source, sp.nt, sp.m - 1, out.ey, j);
        return;
    }
    int ix0, iz;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < l.packs3 && frame_nodes(g, l.march, t, ix0, iz)) {  // and the adjoint source at the frame's nodes
        const int first = l.inject_blocks ? sp.frame_first_node[blockIdx.y * l.packs3 + t] : -1;
        adjoint_e_finish_pack<T, ORDER>(g, out, sc, ix0, iz, blockIdx.y, sp, first);
    }
}

// The second-order adjoint's kernels: node kernels over the whole grid, one
// thread per pack of a row and one shot (blockIdx.y), each pass of the
// adjoint's derivative its own launch and in place, as the CPU runs them (the
// passes' frame functions with the fields as both `in` and `out`), and the
// derivative's imaging sums. The fused adjoint_step's tiles and marching warps have no
// coupled pass 1 (yet): the coupled field's steps take these.

template <typename T>
__device__ __forceinline__ bool grid_pack(const GridParams<T>& g, int& ix0, int& iz) {
    constexpr int N = kLanes<T>;
    const int row_packs = (g.nx + N - 1) / N;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= row_packs * g.nz) return false;
    iz = t / row_packs;
    ix0 = (t - iz * row_packs) * N;
    return true;
}

template <typename T>
__global__ void grid_coupled_e_prepare_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z,
                                              TmFields<T> f, AdjointScratch<T> sc, BornCoupling<T> lin) {
    int ix0, iz;
    if (grid_pack(g, ix0, iz))
        adjoint_e_prepare_pack<T, true>(g, m, x, z, f, f, sc, ix0, iz, blockIdx.y, true, &lin);
}

template <typename T, int ORDER>
__global__ void grid_h_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, TmFields<T> f,
                              AdjointScratch<T> sc) {
    int ix0, iz;
    if (grid_pack(g, ix0, iz)) adjoint_h_pack<T, ORDER>(g, m, x, z, f, f, sc, ix0, iz, blockIdx.y, true);
}

template <typename T, int ORDER>
__global__ void grid_e_finish_kernel(GridParams<T> g, TmFields<T> f, AdjointScratch<T> sc) {
    int ix0, iz;
    if (grid_pack(g, ix0, iz)) adjoint_e_finish_pack<T, ORDER>(g, f, sc, ix0, iz, blockIdx.y, AdjointSparse{}, -1);
}

/// The derivative's imaging sums of cpu::second_order_adjoint at a pack of
/// nodes, each node's shots in order: dlambda with Ey (e's levels), then
/// lambda with dEy (de's), into e's accumulators.
template <typename T, typename Stored>
__global__ void second_order_imaging_kernel(GridParams<T> g, const T* __restrict__ lambda_ey,
                                            const T* __restrict__ dlambda_ey, ImagingView<T, Stored> e,
                                            ImagingView<T, Stored> de) {
    constexpr int N = kLanes<T>;
    int ix0, iz;
    if (!grid_pack(g, ix0, iz)) return;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * g.stride + ix0;
    const int n = g.nx - ix0;
    Pack<double, N> gp{}, gn{}, il{};
    if (e.ey_prev) gp = load_pack<N>(e.g_ey_prev + i);
    if (e.ey_next) gn = load_pack<N>(e.g_ey_next + i);
    image_shots(g, dlambda_ey, e, false, i, gp, gn, il);
    image_shots(g, lambda_ey, de, false, i, gp, gn, il);
    if (e.ey_prev) store_pack(e.g_ey_prev + i, gp, n);
    if (e.ey_next) store_pack(e.g_ey_next + i, gn, n);
}

/// zero_halos: shot array c (blockIdx.y, then every gridDim.y) at base + c *
/// shot_stride; its halo values in order: those before node (0, 0), the
/// stride - nx after each row but the last (its right and the next row's
/// left halo), and those after the last node.
template <typename U>
__global__ void zero_halo_kernel(U* base, std::size_t copies, std::size_t shot_stride, std::size_t origin, int stride,
                                 int nx, int nz) {
    const std::size_t gap = stride - nx, gaps = (nz - 1) * gap, halo = shot_stride - static_cast<std::size_t>(nz) * nx;
    const std::size_t last_row = origin + (nz - 1) * static_cast<std::size_t>(stride);
    for (std::size_t c = blockIdx.y; c < copies; c += gridDim.y) {
        U* a = base + c * shot_stride;
        for (std::size_t h = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; h < halo;
             h += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
            std::size_t i = h;
            if (h >= origin) {
                const std::size_t k = h - origin;
                i = k < gaps ? origin + (k / gap) * stride + nx + k % gap : last_row + nx + (k - gaps);
            }
            a[i] = U(0);
        }
    }
}

template <typename T, typename Stored>
__global__ void store_level_kernel(std::size_t n, const T* ey, Stored* level) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        level[i] = store_as<Stored>(ey[i]);
}

/// max |field| of each shot (blockIdx.y), as the bits of a non-negative
/// double, which order like the values (max is exact in any order).
template <typename T>
__global__ void max_abs_kernel(std::size_t n, std::size_t shot_stride, const T* field, unsigned long long* out) {
    const T* f = field + blockIdx.y * shot_stride;
    double m = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        m = fmax(m, fabs(static_cast<double>(f[i])));
    for (int d = 16; d > 0; d /= 2) m = fmax(m, __shfl_down_sync(0xffffffffu, m, d));
    if ((threadIdx.x & 31) == 0) atomicMax(out + blockIdx.y, static_cast<unsigned long long>(__double_as_longlong(m)));
}

/// level = fp8(Ey * 448 / max), scales = max / 448 (1 for a zero field), per shot (blockIdx.y).
template <typename T>
__global__ void quantize_fp8_kernel(std::size_t n, std::size_t shot_stride, const T* field,
                                    const unsigned long long* max_bits, Fp8* level, double* scales) {
    const double max_abs = __longlong_as_double(static_cast<long long>(max_bits[blockIdx.y]));
    const double inv = max_abs > 0 ? kFp8Max / max_abs : 1.0;
    const std::size_t base = blockIdx.y * shot_stride;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        level[base + i] = store_as<Fp8>(static_cast<float>(static_cast<double>(field[base + i]) * inv));
    if (blockIdx.x == 0 && threadIdx.x == 0) scales[blockIdx.y] = max_abs > 0 ? max_abs / kFp8Max : 1.0;
}

/// flags[shot] = stamp where the shot's `field` holds a NaN or Inf, a pack
/// (kLanes<T> values) a thread; a programmatic dependent launch.
template <typename T>
__global__ void flag_non_finite_kernel(std::size_t packs, std::size_t shot_packs, const T* field,
                                       const std::uint16_t* hi, int* flags, int stamp) {
    constexpr int N = kLanes<T>;
    wait_for_previous_kernel();
    allow_next_kernel();
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < packs;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        bool finite = true;
        if (hi) {  // two planes: the exponent lies in the upper one
            const Pack<std::uint16_t, N> u = load_pack<N>(hi + i * N);
#pragma unroll
            for (int j = 0; j < N; ++j) finite = finite && (u.v[j] & 0x7f80u) != 0x7f80u;
        } else {
            const Pack<T, N> v = load_pack<N>(field + i * N);
#pragma unroll
            for (int j = 0; j < N; ++j) finite = finite && isfinite(v.v[j]);
        }
        if (!finite) flags[i / shot_packs] = stamp;
    }
}

int blocks_for(std::size_t n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

/// Rows of the forward's segments without a hole (no step pairs): from 12 to
/// 16, the count whose long blocks (the interior's and the z strips', all
/// shots) fill their last wave of the GPU's resident blocks the most, ties
/// to more rows; or `asked` rows where it is > 0. A block marches for
/// most of a step, so a last wave a quarter empty leaves the GPU part idle
/// for a quarter of the step.
template <typename T, int ORDER>
int forward_rows(const GridParams<T>& g, const Interior& box, int asked) {
    if (asked > 0) return asked;
    const int resident = resident_blocks<step_kernel<T, ORDER, T>>();
    int best = kStepRows;
    double best_fill = -1;
    for (int rows = kStepRows; rows >= 12; --rows) {
        int bands = 0, blocks = 0;
        marching_blocks<T, ORDER>(box, bands, blocks, rows);
        const long long all = static_cast<long long>(blocks + z_strip_blocks(box, g.nz, bands)) * g.n_shots;
        const double fill = static_cast<double>(all % resident == 0 ? resident : all % resident) / resident;
        if (fill > best_fill) {
            best = rows;
            best_fill = fill;
        }
    }
    return best;
}

/// step_kernel's launch over the interior `box` (step_interior): its
/// marching warps less those of `hole` (whole bands and segments of them;
/// none when empty), the z strips' and the frame's blocks.
template <typename T, int ORDER>
StepLaunch step_launch(const GridParams<T>& g, const Interior& box, const Interior& hole, const CudaTuning& tuning) {
    using S = StepShape<T, ORDER>;
    constexpr int band = S::U * S::N;
    StepLaunch l{};
    if (hole.xb <= hole.xa) l.rows = forward_rows<T, ORDER>(g, box, tuning.step_rows);
    marching_blocks<T, ORDER>(box, l.items.bands, l.interior_blocks, l.rows);
    if (hole.xb > hole.xa) {
        l.items.b1 = (hole.xa - box.xa) / band;
        l.items.b2 = (hole.xb - box.xa) / band;
        l.items.s1 = (hole.za - box.za) / kStepRows;
        l.items.s2 = (hole.zb - box.za) / kStepRows;
        l.interior_blocks =
            (l.items.count((box.zb - box.za + kStepRows - 1) / kStepRows) + kStepWarps - 1) / kStepWarps;
    }
    l.strip_blocks = z_strip_blocks(box, g.nz, l.items.bands);
    l.frame = with_z_strips(box, g.nz);
    l.frame_packs = frame_packs(g, l.frame);
    l.frame_blocks = blocks_for(l.frame_packs, kStepWarps * 32);
    return l;
}

/// The blocks of a step launch that take the receivers' samples (a warp a receiver row; none without).
int sample_blocks(const StepSamples* samples) {
    return samples ? blocks_for(static_cast<std::size_t>(samples->op.n_rows) * 32, kStepWarps * 32) : 0;
}

}  // namespace

template <typename T, int ORDER, typename Stored>
void step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
          const TmFields<T>& in, const TmFields<T>& out, Stored* keep, const StepSources* sources,
          const StepSamples* samples, const CudaTuning& tuning, Stream stream) {
    constexpr int kThreads = kStepWarps * 32;
    const Interior box = step_interior<T, ORDER>(g, x, z);
    const StepLaunch l = step_launch<T, ORDER>(g, box, Interior{0, 0, 0, 0}, tuning);
    const dim3 grid(l.strip_blocks + l.interior_blocks + l.frame_blocks + sample_blocks(samples), g.n_shots);
    // Ey as two planes (TmFields::ey_hi; single precision, bf16 levels): the upper one is the level
    constexpr bool kCanSplit = std::is_same_v<T, float> && std::is_same_v<Stored, Bf16>;
    const bool split = kCanSplit && out.ey_hi;
    if (split != (in.ey_hi != nullptr)) throw std::logic_error("step: Ey split in one buffer and not the other");
    auto launch = [&](auto split_tag) {
        constexpr bool SPLIT = decltype(split_tag)::value;
        launch_kernel(tuning, step_kernel<T, ORDER, Stored, false, SPLIT>, grid, dim3(kThreads), stream, g, m, x, z,
                      box, l, in, out, keep, samples ? *samples : StepSamples{});
        // the frame's E, and the source term when its points lie in the interior (whose E is done)
        const bool merged = sources && sources->interior && sources->op.n_source_points > 0;
        const int inject_blocks = merged ? blocks_for(sources->op.n_source_points, kThreads) : 0;
        if (l.frame_blocks + inject_blocks > 0) {
            const dim3 e_grid(l.frame_blocks + inject_blocks, g.n_shots);
            launch_kernel(tuning, frame_e_kernel<T, ORDER, Stored, SPLIT>, e_grid, dim3(kThreads), stream, g, m, x, z,
                          in, out, keep, l.frame, l.frame_blocks, merged ? *sources : StepSources{},
                          Interior{0, 0, 0, 0});
        }
        if (sources && !merged)
            inject_sources<T, Stored>(g, sources->op, sources->wavelets, sources->nt, sources->m, out, keep, stream);
    };
    if constexpr (kCanSplit) {
        if (split) {
            launch(std::true_type{});
            return;
        }
    }
    launch(std::false_type{});
}

template <typename T, int ORDER>
void born_step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
               const TmFields<T>& in, const TmFields<T>& out, const StepSamples* samples, const BornScatter<T>& born,
               const CudaTuning& tuning, Stream stream) {
    constexpr int kThreads = kStepWarps * 32;
    const Interior box = step_interior<T, ORDER>(g, x, z);
    const StepLaunch l = step_launch<T, ORDER>(g, box, Interior{0, 0, 0, 0}, tuning);
    const dim3 grid(l.strip_blocks + l.interior_blocks + l.frame_blocks + sample_blocks(samples), g.n_shots);
    launch_kernel(tuning, born_step_kernel<T, ORDER>, grid, dim3(kThreads), stream, g, m, x, z, box, l, in, out,
                  samples ? *samples : StepSamples{}, born);
    if (l.frame_blocks > 0)
        launch_kernel(tuning, born_frame_e_kernel<T, ORDER>, dim3(l.frame_blocks, g.n_shots), dim3(kThreads), stream,
                      g, m, x, z, in, out, l.frame, l.frame_blocks, born);
}

// Where the pairs pay: stencils 2 and 4 (the pair warps of 6 and 8 hold
// twice the rows in too many registers), where the pair box is most of the
// interior and holds much work; the steps outside the box, twice a pair, and
// the pair's further launches cost the most where the box is a small share
// of the interior or holds little work (docs/performance.md, "CUDA tuning constants").
constexpr double kPairMinShare = 0.88, kPairMinNodes = 5e6;

template <typename T, int ORDER>
bool step_pair_applies(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, const CudaTuning& tuning) {
    if (tuning.pair_rows == 0 || pair_launch<T, ORDER>(g, x, z, tuning.pair_rows).blocks == 0) return false;
    if (tuning.pair_rows != CudaTuning::kPairsWherePay) return true;
    if (ORDER > 4) return false;
    const Interior box = step_interior<T, ORDER>(g, x, z), d = pair_box<T, ORDER>(g, x, z);
    const double nodes = static_cast<double>(d.xb - d.xa) * (d.zb - d.za);
    return nodes >= kPairMinShare * (box.xb - box.xa) * (box.zb - box.za) && nodes * g.n_shots >= kPairMinNodes;
}

template <typename T, int ORDER>
double step_pair_share(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z) {
    const Interior d = pair_box<T, ORDER>(g, x, z);
    return static_cast<double>(d.xb - d.xa) * (d.zb - d.za) / (static_cast<double>(g.nx) * g.nz);
}

template <typename T, int ORDER>
void step_pair(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
               const TmFields<T>& in, const TmFields<T>& mid, const TmFields<T>& out, const StepSources& first,
               const StepSources& second, const StepSamples* samples_in, const StepSamples& samples_mid,
               const CudaTuning& tuning, Stream stream) {
    constexpr int kThreads = kStepWarps * 32;
    const Interior box = step_interior<T, ORDER>(g, x, z);
    const PairLaunch p = pair_launch<T, ORDER>(g, x, z, tuning.pair_rows);
    const StepLaunch l = step_launch<T, ORDER>(g, box, p.box, tuning);  // outside the pair box
    const int inject_blocks = blocks_for(first.op.n_source_points, kThreads);
    const int step_blocks = l.strip_blocks + l.interior_blocks + l.frame_blocks;
    // the first step (and the second in the pair box)
    launch_kernel(tuning, pair_first_kernel<T, ORDER>,
                  dim3(p.blocks + step_blocks + sample_blocks(samples_in), g.n_shots), dim3(kThreads), stream, g, m, x,
                  z, box, l, p, in, mid, out, first, samples_in ? *samples_in : StepSamples{});
    launch_kernel(tuning, frame_e_kernel<T, ORDER, T>, dim3(l.frame_blocks + inject_blocks, g.n_shots), dim3(kThreads),
                  stream, g, m, x, z, in, mid, static_cast<T*>(nullptr), l.frame, l.frame_blocks, first, p.box);
    // the second step outside the pair box
    launch_kernel(tuning, step_kernel<T, ORDER, T, true>, dim3(step_blocks + sample_blocks(&samples_mid), g.n_shots),
                  dim3(kThreads), stream, g, m, x, z, box, l, mid, out, static_cast<T*>(nullptr), samples_mid);
    launch_kernel(tuning, frame_e_kernel<T, ORDER, T>, dim3(l.frame_blocks + inject_blocks, g.n_shots), dim3(kThreads),
                  stream, g, m, x, z, mid, out, static_cast<T*>(nullptr), l.frame, l.frame_blocks, second,
                  Interior{0, 0, 0, 0});
}

template <typename T, int ORDER>
bool step_interior_contains(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, std::size_t index) {
    int ix, iz;
    return node_at(g, index, ix, iz) && inside(step_interior<T, ORDER>(g, x, z), ix, iz);
}

template <typename T, typename Stored>
void inject_sources(const GridParams<T>& g, const SparseOperators& op, const double* wavelets, int nt, int m,
                    const TmFields<T>& f, Stored* keep, Stream stream) {
    if (op.n_source_points == 0) return;
    inject_sources_kernel<T, Stored><<<blocks_for(op.n_source_points, 128), 128, 0, stream>>>(g, op, wavelets, nt, m,
                                                                                             f, keep);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void sample_receivers(const GridParams<T>& g, const SparseOperators& op, const TmFields<T>& f, double* traces, int nt,
                      int m, Stream stream) {
    if (op.n_rows == 0) return;
    sample_receivers_kernel<T><<<blocks_for(static_cast<std::size_t>(op.n_rows) * 32, 128), 128, 0, stream>>>(g, op, f, traces, nt, m);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void inject_adjoint_sources(const GridParams<T>& g, const SparseOperators& op, const double* adjoint_source, int nt,
                            int m, T* lam, const CudaTuning& tuning, Stream stream) {
    if (op.n_nodes == 0) return;
    launch_kernel(tuning, inject_adjoint_kernel<T>, blocks_for(op.n_nodes, 128), 128, stream, g, op, adjoint_source, nt,
                  m, lam);
}

template <typename T, int ORDER, typename Stored>
void adjoint_step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
                  const TmFields<T>& in, const TmFields<T>& out, const AdjointScratch<T>& s,
                  const ImagingView<T, Stored>* img, const PairedImaging<T, Stored>* pair,
                  const AdjointSparse& sparse, const CudaTuning& tuning, Stream stream) {
    constexpr int R = ORDER / 2, kThreads = kStepWarps * 32;
    AdjointLaunch l{};
    l.box = adjoint_interior<T, ORDER>(g, x, z);
    l.march = adjoint_march<T, ORDER>(g, x, z);
    constexpr int N = kLanes<T>;
    l.ring2 = shrink<T>(l.march, R, 0);                          // pass 2 gives p to R nodes (whole packs) inside
    l.ring1 = shrink<T>(l.march, (R + N - 1) / N * N + R, 0);  // pass 1 q to those nodes' stencils
    l.tiles = strip_tiles<T, ORDER>(g, l.march);
    if (l.tiles.own == 0) {
        l.packs1 = frame_packs(g, l.ring1);
        l.packs2 = frame_packs(g, l.ring2);
        l.packs3 = frame_packs(g, l.march);
    }
    l.rows = tuning.adjoint_rows > 0 ? tuning.adjoint_rows : kAdjointRows;
    marching_blocks<T, ORDER>(l.box, l.bands, l.interior_blocks, l.rows);
    l.strip_blocks = z_strip_blocks(l.box, g.nz, l.bands);
    l.step_blocks =
        (l.tiles.per_shot + l.strip_blocks + l.interior_blocks + blocks_for(l.packs1, kThreads)) * g.n_shots;
    const PairedImaging<T, Stored> rows = pair ? *pair : PairedImaging<T, Stored>{};
    const bool imaging = img && (has_levels(*img) || has_levels(rows.later));
    const std::size_t packs = static_cast<std::size_t>((g.nx + N - 1) / N) *
                              ((g.nz - rows.first_row + rows.row_step - 1) / rows.row_step);
    l.image_blocks = imaging ? blocks_for(packs, kThreads) : 0;
    l.gradient_blocks = blocks_for(static_cast<std::size_t>(sparse.op.n_shots) * 32, kThreads);
    l.inject_blocks = sparse.m > 0 ? blocks_for(sparse.op.n_nodes, kThreads) : 0;
    launch_kernel_shared(tuning, adjoint_step_kernel<T, ORDER, Stored>,
                         dim3(l.gradient_blocks + l.step_blocks + l.image_blocks), dim3(kThreads), l.tiles.shared_bytes,
                         stream, g, m, x, z, l, in, out, s, imaging ? *img : ImagingView<T, Stored>{}, rows, sparse);
    if (l.tiles.own) {  // all done but the next step's adjoint source
        if (sparse.m > 0)
            inject_adjoint_sources<T>(g, sparse.op, sparse.adjoint_source, sparse.nt, sparse.m - 1, out.ey, tuning, stream);
        return;
    }
    if (l.packs2)
        launch_kernel(tuning, adjoint_frame_h_kernel<T, ORDER>, dim3(blocks_for(l.packs2, kThreads), g.n_shots),
                      dim3(kThreads), stream, g, m, x, z, l, in, out, s);
    if (l.packs3 || l.inject_blocks)
        launch_kernel(tuning, adjoint_frame_e_kernel<T, ORDER>,
                      dim3(blocks_for(l.packs3, kThreads) + l.inject_blocks, g.n_shots), dim3(kThreads), stream, g, l,
                      out, s, sparse);
}

template <typename T>
dim3 grid_packs_blocks(const GridParams<T>& g, int threads) {
    constexpr int N = kLanes<T>;
    return dim3(blocks_for(static_cast<std::size_t>((g.nx + N - 1) / N) * g.nz, threads), g.n_shots);
}

template <typename T, int ORDER>
void second_order_passes(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                         const CpmlAxis<T>& z, const TmFields<T>& f, const AdjointScratch<T>& s,
                         const BornCoupling<T>& coupling, Stream stream) {
    constexpr int kThreads = 256;
    const dim3 blocks = grid_packs_blocks(g, kThreads);
    grid_coupled_e_prepare_kernel<T><<<blocks, kThreads, 0, stream>>>(g, m, x, z, f, s, coupling);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
    grid_h_kernel<T, ORDER><<<blocks, kThreads, 0, stream>>>(g, m, x, z, f, s);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
    grid_e_finish_kernel<T, ORDER><<<blocks, kThreads, 0, stream>>>(g, f, s);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Stored>
void second_order_imaging(const GridParams<T>& g, const T* lambda_ey, const T* dlambda_ey,
                          const ImagingView<T, Stored>& e, const ImagingView<T, Stored>& de, Stream stream) {
    if (!has_levels(e)) return;
    if ((e.ey_prev != nullptr) != (de.ey_prev != nullptr) || (e.ey_next != nullptr) != (de.ey_next != nullptr))
        throw std::logic_error("second_order_imaging: the levels of Ey and dEy are not of the same steps");
    constexpr int kThreads = 256;
    second_order_imaging_kernel<T, Stored>
        <<<grid_packs_blocks(g, kThreads), kThreads, 0, stream>>>(g, lambda_ey, dlambda_ey, e, de);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, int ORDER>
bool adjoint_uses_scratch(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z) {
    return strip_tiles<T, ORDER>(g, adjoint_march<T, ORDER>(g, x, z)).own == 0;
}

template <typename T, int ORDER>
int adjoint_frame_packs(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z) {
    return frame_packs(g, adjoint_march<T, ORDER>(g, x, z));
}

template <typename T, int ORDER>
int adjoint_frame_pack(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, std::size_t index) {
    constexpr int N = kLanes<T>;
    const Interior box = adjoint_march<T, ORDER>(g, x, z);
    int ix, iz;
    if (!node_at(g, index, ix, iz) || inside(box, ix, iz)) return -1;
    const int ix0 = ix / N * N;  // the pack's first column
    // frame_nodes' order: the rows above and below the interior, then its sides
    const int row_packs = (g.nx + N - 1) / N;
    if (iz < box.za) return iz * row_packs + ix0 / N;
    if (iz >= box.zb) return (box.za + iz - box.zb) * row_packs + ix0 / N;
    const int left = box.xa / N, side = left + row_packs - box.xb / N;
    return row_packs * (box.za + g.nz - box.zb) + (iz - box.za) * side +
           (ix0 < box.xa ? ix0 / N : left + (ix0 - box.xb) / N);
}

template <typename T>
void zero_halos(const GridParams<T>& g, void* base, int value_bytes, std::size_t copies, Stream stream) {
    if (!base || copies == 0) return;
    const std::size_t halo = g.shot_stride - static_cast<std::size_t>(g.nz) * g.nx;
    const dim3 blocks(static_cast<unsigned>(std::min<std::size_t>(blocks_for(halo, 256), 64)),
                      static_cast<unsigned>(std::min<std::size_t>(copies, 32768)));
    auto launch = [&](auto* a) {
        zero_halo_kernel<<<blocks, 256, 0, stream>>>(a, copies, g.shot_stride, g.origin, g.stride, g.nx, g.nz);
    };
    switch (value_bytes) {
    case 1: launch(static_cast<std::uint8_t*>(base)); break;
    case 2: launch(static_cast<std::uint16_t*>(base)); break;
    case 4: launch(static_cast<std::uint32_t*>(base)); break;
    case 8: launch(static_cast<std::uint64_t*>(base)); break;
    default: throw std::invalid_argument("zero_halos: values of " + std::to_string(value_bytes) + " bytes");
    }
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Stored>
void store_level(const GridParams<T>& g, const T* ey, Stored* level, Stream stream) {
    const std::size_t n = g.shot_stride * g.n_shots;
    store_level_kernel<T, Stored><<<std::min(blocks_for(n, 256), 4096), 256, 0, stream>>>(n, ey, level);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void keep_level_fp8(const GridParams<T>& g, const T* ey, Fp8* level, double* scales, unsigned long long* max_scratch,
                    Stream stream) {
    const dim3 grid(std::min(blocks_for(g.shot_stride, 256), 1024), g.n_shots);
    GPRFWI_CUDA_CHECK(cudaMemsetAsync(max_scratch, 0, g.n_shots * sizeof(unsigned long long), stream));
    max_abs_kernel<T><<<grid, 256, 0, stream>>>(g.shot_stride, g.shot_stride, ey, max_scratch);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
    quantize_fp8_kernel<T><<<grid, 256, 0, stream>>>(g.shot_stride, g.shot_stride, ey, max_scratch, level, scales);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void flag_non_finite(const GridParams<T>& g, const TmFields<T>& f, int* flags, int stamp, const CudaTuning& tuning,
                     Stream stream) {
    constexpr int N = kLanes<T>;
    if (g.shot_stride % N != 0) throw std::logic_error("flag_non_finite: a shot's fields are not whole packs");
    const std::size_t shot_packs = g.shot_stride / N, packs = shot_packs * g.n_shots;
    launch_kernel(tuning, flag_non_finite_kernel<T>, dim3(std::min(blocks_for(packs, 256), 4096)), dim3(256), stream,
                  packs, shot_packs, static_cast<const T*>(f.ey), static_cast<const std::uint16_t*>(f.ey_hi), flags,
                  stamp);
}

#define GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, Stored)                                                            \
    template void adjoint_step<T, ORDER, Stored>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, \
                                                 const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&,       \
                                                 const AdjointScratch<T>&, const ImagingView<T, Stored>*,          \
                                                 const PairedImaging<T, Stored>*, const AdjointSparse&,            \
                                                 const CudaTuning&, Stream);
#define GPRFWI_INSTANTIATE_ORDER(T, ORDER)                                                                       \
    template void step<T, ORDER, T>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,            \
                                    const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&, T*,              \
                                    const StepSources*, const StepSamples*, const CudaTuning&, Stream);          \
    template void born_step<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,          \
                                      const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&,                \
                                      const StepSamples*, const BornScatter<T>&, const CudaTuning&, Stream);     \
    template void step_pair<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,          \
                                      const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&,                \
                                      const TmFields<T>&, const StepSources&, const StepSources&,                \
                                      const StepSamples*, const StepSamples&, const CudaTuning&, Stream);        \
    template bool step_pair_applies<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&,      \
                                              const CudaTuning&);                                               \
    template double step_pair_share<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&);     \
    template bool step_interior_contains<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&,  \
                                                   std::size_t);                                                         \
    template int adjoint_frame_packs<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&);     \
    template bool adjoint_uses_scratch<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&);   \
    template int adjoint_frame_pack<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&,       \
                                              std::size_t);                                                       \
    template void step<T, ORDER, Bf16>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,         \
                                       const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&, Bf16*,        \
                                       const StepSources*, const StepSamples*, const CudaTuning&, Stream);       \
    template void second_order_passes<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, \
                                                const CpmlAxis<T>&, const TmFields<T>&, const AdjointScratch<T>&, \
                                                const BornCoupling<T>&, Stream);                                  \
    GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, T) GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, Bf16)                           \
    GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, Fp8)
#define GPRFWI_INSTANTIATE_TYPE(T)                                                                                  \
    GPRFWI_INSTANTIATE_ORDER(T, 2) GPRFWI_INSTANTIATE_ORDER(T, 4) GPRFWI_INSTANTIATE_ORDER(T, 6)                   \
    GPRFWI_INSTANTIATE_ORDER(T, 8)                                                                                  \
    template void inject_sources<T, T>(const GridParams<T>&, const SparseOperators&, const double*, int, int,       \
                                       const TmFields<T>&, T*, Stream);                                             \
    template void inject_sources<T, Bf16>(const GridParams<T>&, const SparseOperators&, const double*, int, int,    \
                                          const TmFields<T>&, Bf16*, Stream);                                       \
    template void sample_receivers<T>(const GridParams<T>&, const SparseOperators&, const TmFields<T>&, double*,    \
                                      int, int, Stream);                                                            \
    template void inject_adjoint_sources<T>(const GridParams<T>&, const SparseOperators&, const double*, int, int,  \
                                            T*, const CudaTuning&, Stream);                                         \
    template void keep_level_fp8<T>(const GridParams<T>&, const T*, Fp8*, double*, unsigned long long*, Stream);   \
    template void zero_halos<T>(const GridParams<T>&, void*, int, std::size_t, Stream);                             \
    template void second_order_imaging<T, T>(const GridParams<T>&, const T*, const T*, const ImagingView<T, T>&,   \
                                             const ImagingView<T, T>&, Stream);                                   \
    template void second_order_imaging<T, Bf16>(const GridParams<T>&, const T*, const T*,                         \
                                                const ImagingView<T, Bf16>&, const ImagingView<T, Bf16>&, Stream); \
    template void second_order_imaging<T, Fp8>(const GridParams<T>&, const T*, const T*,                          \
                                               const ImagingView<T, Fp8>&, const ImagingView<T, Fp8>&, Stream);   \
    template void store_level<T, T>(const GridParams<T>&, const T*, T*, Stream);                                    \
    template void store_level<T, Bf16>(const GridParams<T>&, const T*, Bf16*, Stream);                              \
    template void flag_non_finite<T>(const GridParams<T>&, const TmFields<T>&, int*, int, const CudaTuning&, Stream);
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
