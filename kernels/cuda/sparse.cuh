#pragma once
// The sparse operators inside the step kernels: a source point's term, a
// receiver row's samples, a receiver node's adjoint source, and a shot's
// wavelet gradient.


#include "packs.cuh"

namespace gprfwi::kernels::cuda {
// Internal to the CUDA backend's sources, which include it (kernels/cuda/):
// each has its own copy of these templates and kernels.
namespace {

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

}  // namespace
}  // namespace gprfwi::kernels::cuda
