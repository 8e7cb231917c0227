#pragma once
// The adjoint step's tiles: the x strips (the CPML columns beside the
// marching warps' box) cut into tiles a block each, passes 1-3 of the
// adjoint step at a tile's nodes with q and p in shared memory.

#include <cstddef>

#include "adjoint_step.cuh"

namespace gprfwi::kernels::cuda {
// Internal to the CUDA backend's sources, which include it (kernels/cuda/):
// each has its own copy of these templates and kernels.
namespace {

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
/// operations the CPU's, in the same order, q and p in shared memory (`smem`,
/// TileShape::values()): a method a field, the block's threads over its packs.
template <typename T, int ORDER>
struct AdjointTile {
    using S = TileShape<T, ORDER>;
    static constexpr int N = S::N, R = S::R, PH = S::PH, QH = S::QH;
    const GridParams<T>& g;
    const MaterialView<T>& m;
    const CpmlAxis<T>& x;
    const CpmlAxis<T>& z;
    const TmFields<T>& in;
    const TmFields<T>& out;
    S shape;
    int own, TR, qxw, pxw, ow;
    T *sq_x, *sq_z, *sp_x, *sp_z;
    int r0, r1, first, end;
    std::size_t shot_off;
    int tid, threads;

    __device__ __forceinline__ AdjointTile(const GridParams<T>& g_, const MaterialView<T>& m_, const CpmlAxis<T>& x_,
                                           const CpmlAxis<T>& z_, const TmFields<T>& in_, const TmFields<T>& out_,
                                           const StripTiles& tiles, int tile, int shot, T* smem)
        : g(g_), m(m_), x(x_), z(z_), in(in_), out(out_), shape{tiles.own, tiles.rows} {
        own = shape.own, TR = shape.rows, qxw = shape.qx_width(), pxw = shape.px_width(), ow = own * N;
        sq_x = smem;                         // [TR][qxw], column 0 = first - QH*N
        sq_z = sq_x + TR * qxw;              // [qz_rows][ow], row 0 = r0 - 2R + 1
        sp_x = sq_z + shape.qz_rows() * ow;  // [TR][pxw], column 0 = first - PH*N
        sp_z = sp_x + TR * pxw;              // [pz_rows][ow], row 0 = r0 - R
        const bool right = tile & 1;
        r0 = (tile >> 1) * TR, r1 = min(r0 + TR, g.nz);
        first = right ? tiles.right_begin : 0, end = right ? g.nx : tiles.left_end;
        shot_off = static_cast<std::size_t>(shot) * g.shot_stride;
        tid = threadIdx.x, threads = blockDim.x;
    }

    __device__ __forceinline__ std::size_t index(int r, int c) const {
        return g.origin + static_cast<std::ptrdiff_t>(r) * g.stride + c;
    }
    __device__ __forceinline__ bool in_grid(int r, int c0) const { return r >= 0 && r < g.nz && c0 + N > 0 && c0 < g.nx; }
    __device__ __forceinline__ void zero_beyond(Pack<T, N>& v, int c0) const {
#pragma unroll
        for (int j = 0; j < N; ++j)
            if (c0 + j >= g.nx) v.v[j] = 0;
    }
    __device__ __forceinline__ bool x_cpml(int c) const { return c < g.nx && in_strip(x, c, g.nx); }

    /// Pass 1, q_x at the tile's rows and all its packs (the x memory at the strip's nodes).
    __device__ __forceinline__ void q_x() const {
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
    }

    /// Pass 1, q_z at the strip's packs, rows r0-2R+1 .. r1+2R-2 (the z memory from `in` to `out` at its rows).
    __device__ __forceinline__ void q_z() const {
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
    }

    /// Pass 2, lambda_hz and p_x at the tile's rows, the strip's packs and PH more each side (the x memory at the strip's).
    __device__ __forceinline__ void p_x() const {
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
    }

    /// Pass 2, lambda_hx and p_z at the strip's packs, rows r0-R .. r1+R-2 (the z memory from `in` to `out` at its rows).
    __device__ __forceinline__ void p_z() const {
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
    }

    /// Pass 3 at the strip's nodes: lambda_ey = ca * lambda_ey - (Dx-[p_x] + Dz-[p_z]).
    __device__ __forceinline__ void lambda_ey() const {
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
};

template <typename T, int ORDER>
__device__ __forceinline__ void adjoint_tile(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                                             const CpmlAxis<T>& z, const TmFields<T>& in, const TmFields<T>& out,
                                             const StripTiles& tiles, int tile, int shot, T* smem) {
    const AdjointTile<T, ORDER> t(g, m, x, z, in, out, tiles, tile, shot, smem);
    t.q_x();
    t.q_z();
    __syncthreads();
    t.p_x();
    t.p_z();
    __syncthreads();
    t.lambda_ey();
}

}  // namespace
}  // namespace gprfwi::kernels::cuda
