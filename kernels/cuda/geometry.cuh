#pragma once
// Where the step kernels work: the interior (no CPML terms) and the frame
// around it, the z strips, the marching warps' bands and segments and the
// march itself, and the CPML profiles and memories a row or a pack loads.


#include <algorithm>
#include <climits>

#include "packs.cuh"

namespace gprfwi::kernels::cuda {
// Internal to the CUDA backend's sources, which include it (kernels/cuda/):
// each has its own copy of these templates and kernels.
namespace {

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

/// The z strips' blocks per shot: a warp for each band and segment of
/// kStripRows rows above and below the interior (none without bands).
inline int z_strip_blocks(const Interior& box, int nz, int bands) {
    const int segs = z_strip_segments_above(box) + z_strip_segments_below(box, nz);
    return (segs * bands + kStepWarps - 1) / kStepWarps;
}

}  // namespace
}  // namespace gprfwi::kernels::cuda
