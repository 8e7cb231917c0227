#pragma once
// The CUDA kernels' building blocks: packs of kLanes<T> nodes (16 bytes)
// loaded and stored whole, the windows of a row around a thread's nodes,
// Ey's view (one plane or two), the accessors of the differences of
// common/operators.hpp, and the shapes and constants of the step kernels.
//
// Each kernel is the CPU reference's loop body (kernels/cpu/), operation for
// operation, through the operators of kernels/common/operators.hpp, so that
// with FMA contraction off (CMake sets -fmad=false) the two backends agree
// bit for bit. Equations: lib/gprfwi/kernels.hpp. Assumptions of every
// kernel:
//  - the PaddedGrid layout with a zero halo of kMaxHalo nodes and rows of a
//    multiple of 4 values (16-byte aligned in float and double);
//  - one thread per 16 bytes of a row (4 float or 2 double nodes, x fastest),
//    a warp per band of such packs in the steps' interiors; materials are
//    shared by the shots;
//  - CPML memories are touched only in the CPML strips.
// Memory traffic per cell-step (float): the forward step reads Ey, Hx, Hz
// and writes them (24 B) plus ca, cb (and cq in a magnetic model) once for
// all shots, the CPML memories in the frame, and a kept level's store; the
// adjoint step likewise its three lambdas (q and p stay in registers except
// near the CPML), and the imaging condition lambda_ey, two kept levels and
// the per-node accumulators (in pairs of steps: the accumulators once and
// three levels for two steps, PairedImaging).


#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/operators.hpp"
#include "gprfwi/grid.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/storage.hpp"

namespace gprfwi::kernels::cuda {
// Internal to the CUDA backend's sources, which include it (kernels/cuda/):
// each has its own copy of these templates and kernels.
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

}  // namespace
}  // namespace gprfwi::kernels::cuda
