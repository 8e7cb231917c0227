// The adjoint step (and its imaging condition) in one launch and a small
// one: the x strips' tiles, the z strips' and the interior's marching
// warps, the imaging blocks; or, where the strips are too wide for tiles,
// the frame in three launches.

#include <cstddef>

#include "adjoint_step.cuh"
#include "adjoint_tiles.cuh"

namespace gprfwi::kernels::cuda {

namespace {

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

}  // namespace

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

#define GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, Stored)                                                            \
    template void adjoint_step<T, ORDER, Stored>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, \
                                                 const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&,       \
                                                 const AdjointScratch<T>&, const ImagingView<T, Stored>*,          \
                                                 const PairedImaging<T, Stored>*, const AdjointSparse&,            \
                                                 const CudaTuning&, Stream);
#define GPRFWI_INSTANTIATE_ORDER(T, ORDER) \
    GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, T) GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, Bf16) GPRFWI_INSTANTIATE_ADJOINT(T, ORDER, Fp8) \
    template int adjoint_frame_packs<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&); \
    template bool adjoint_uses_scratch<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&); \
    template int adjoint_frame_pack<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, std::size_t);
#define GPRFWI_INSTANTIATE_TYPE(T) \
    GPRFWI_INSTANTIATE_ORDER(T, 2) GPRFWI_INSTANTIATE_ORDER(T, 4) GPRFWI_INSTANTIATE_ORDER(T, 6) GPRFWI_INSTANTIATE_ORDER(T, 8)
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
