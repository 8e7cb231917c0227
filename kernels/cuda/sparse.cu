// The sparse operators' own launches: source terms and receiver samples
// outside the step kernels, and the adjoint source between adjoint steps.

#include "launch.cuh"
#include "sparse.cuh"

namespace gprfwi::kernels::cuda {

namespace {

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

}  // namespace

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

#define GPRFWI_INSTANTIATE_TYPE(T) \
    template void inject_sources<T, T>(const GridParams<T>&, const SparseOperators&, const double*, int, int, const TmFields<T>&, T*, Stream); \
    template void inject_sources<T, Bf16>(const GridParams<T>&, const SparseOperators&, const double*, int, int, const TmFields<T>&, Bf16*, Stream); \
    template void sample_receivers<T>(const GridParams<T>&, const SparseOperators&, const TmFields<T>&, double*, int, int, Stream); \
    template void inject_adjoint_sources<T>(const GridParams<T>&, const SparseOperators&, const double*, int, int, T*, const CudaTuning&, Stream);
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
