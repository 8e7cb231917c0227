// Two forward steps in one march (no level kept, no receivers between):
// the pair warps carry the first step's fields to the second in registers,
// so that the pair box's nodes are read and written once for both steps;
// the steps' kernels (forward_step.cuh) do the rest of each step.

#include <stdexcept>
#include <type_traits>

#include "forward_step.cuh"

namespace gprfwi::kernels::cuda {

namespace {

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
    constexpr int HL = S::HL;
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

}  // namespace

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

#define GPRFWI_INSTANTIATE_ORDER(T, ORDER) \
    template void step_pair<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&, const TmFields<T>&, const StepSources&, const StepSources&, const StepSamples*, const StepSamples&, const CudaTuning&, Stream); \
    template bool step_pair_applies<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, const CudaTuning&); \
    template double step_pair_share<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&);
#define GPRFWI_INSTANTIATE_TYPE(T) \
    GPRFWI_INSTANTIATE_ORDER(T, 2) GPRFWI_INSTANTIATE_ORDER(T, 4) GPRFWI_INSTANTIATE_ORDER(T, 6) GPRFWI_INSTANTIATE_ORDER(T, 8)
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
