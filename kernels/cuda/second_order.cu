// The second-order adjoint's passes and its imaging sums (Hessian-vector
// products), as node kernels over the whole grid.

#include "adjoint_step.cuh"

namespace gprfwi::kernels::cuda {

namespace {

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

}  // namespace

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

#define GPRFWI_INSTANTIATE_ORDER(T, ORDER) \
    template void second_order_passes<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&, const AdjointScratch<T>&, const BornCoupling<T>&, Stream);
#define GPRFWI_INSTANTIATE_TYPE(T) \
    GPRFWI_INSTANTIATE_ORDER(T, 2) GPRFWI_INSTANTIATE_ORDER(T, 4) GPRFWI_INSTANTIATE_ORDER(T, 6) GPRFWI_INSTANTIATE_ORDER(T, 8) \
    template void second_order_imaging<T, T>(const GridParams<T>&, const T*, const T*, const ImagingView<T, T>&, const ImagingView<T, T>&, Stream); \
    template void second_order_imaging<T, Bf16>(const GridParams<T>&, const T*, const T*, const ImagingView<T, Bf16>&, const ImagingView<T, Bf16>&, Stream); \
    template void second_order_imaging<T, Fp8>(const GridParams<T>&, const T*, const T*, const ImagingView<T, Fp8>&, const ImagingView<T, Fp8>&, Stream);
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
