#pragma once
// The forward step (and the Born run's perturbation step): the marching
// warps of the interior and the z strips, the frame's packs, their kernels
// (two launches a step: H and the interior's E, then the frame's E), and
// the launch's shape. step_pairs.cu launches these kernels too.


#include <algorithm>

#include "geometry.cuh"
#include "launch.cuh"
#include "sparse.cuh"

namespace gprfwi::kernels::cuda {
// Internal to the CUDA backend's sources, which include it (kernels/cuda/):
// each has its own copy of these templates and kernels.
namespace {

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
        // Hz^{n+1/2} at row r: Dx+[Ey] (the step pairs' plain_hz computes the same; called here instead, the
        // same instructions in another order ran the loops with host levels 1.5-2.3% slower: docs/performance.md)
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
inline int sample_blocks(const StepSamples* samples) {
    return samples ? blocks_for(static_cast<std::size_t>(samples->op.n_rows) * 32, kStepWarps * 32) : 0;
}

}  // namespace
}  // namespace gprfwi::kernels::cuda
