#pragma once
// The adjoint step's pieces that the second-order adjoint shares: its
// interior, the imaging condition, and passes 1-3 at a pack of nodes.


#include "geometry.cuh"
#include "launch.cuh"
#include "sparse.cuh"

namespace gprfwi::kernels::cuda {
// Internal to the CUDA backend's sources, which include it (kernels/cuda/):
// each has its own copy of these templates and kernels.
namespace {

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

}  // namespace
}  // namespace gprfwi::kernels::cuda
