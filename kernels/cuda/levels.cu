// Kept levels and fields: zeroing halos, storing a level (float, bf16,
// scaled fp8), and flagging non-finite fields.

#include <stdexcept>

#include "launch.cuh"

namespace gprfwi::kernels::cuda {

namespace {

/// zero_halos: shot array c (blockIdx.y, then every gridDim.y) at base + c *
/// shot_stride; its halo values in order: those before node (0, 0), the
/// stride - nx after each row but the last (its right and the next row's
/// left halo), and those after the last node.
template <typename U>
__global__ void zero_halo_kernel(U* base, std::size_t copies, std::size_t shot_stride, std::size_t origin, int stride,
                                 int nx, int nz) {
    const std::size_t gap = stride - nx, gaps = (nz - 1) * gap, halo = shot_stride - static_cast<std::size_t>(nz) * nx;
    const std::size_t last_row = origin + (nz - 1) * static_cast<std::size_t>(stride);
    for (std::size_t c = blockIdx.y; c < copies; c += gridDim.y) {
        U* a = base + c * shot_stride;
        for (std::size_t h = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; h < halo;
             h += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
            std::size_t i = h;
            if (h >= origin) {
                const std::size_t k = h - origin;
                i = k < gaps ? origin + (k / gap) * stride + nx + k % gap : last_row + nx + (k - gaps);
            }
            a[i] = U(0);
        }
    }
}

template <typename T, typename Stored>
__global__ void store_level_kernel(std::size_t n, const T* ey, Stored* level) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        level[i] = store_as<Stored>(ey[i]);
}

/// max |field| of each shot (blockIdx.y), as the bits of a non-negative
/// double, which order like the values (max is exact in any order).
template <typename T>
__global__ void max_abs_kernel(std::size_t n, std::size_t shot_stride, const T* field, unsigned long long* out) {
    const T* f = field + blockIdx.y * shot_stride;
    double m = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        m = fmax(m, fabs(static_cast<double>(f[i])));
    for (int d = 16; d > 0; d /= 2) m = fmax(m, __shfl_down_sync(0xffffffffu, m, d));
    if ((threadIdx.x & 31) == 0) atomicMax(out + blockIdx.y, static_cast<unsigned long long>(__double_as_longlong(m)));
}

/// level = fp8(Ey * 448 / max), scales = max / 448 (1 for a zero field), per shot (blockIdx.y).
template <typename T>
__global__ void quantize_fp8_kernel(std::size_t n, std::size_t shot_stride, const T* field,
                                    const unsigned long long* max_bits, Fp8* level, double* scales) {
    const double max_abs = __longlong_as_double(static_cast<long long>(max_bits[blockIdx.y]));
    const double inv = max_abs > 0 ? kFp8Max / max_abs : 1.0;
    const std::size_t base = blockIdx.y * shot_stride;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        level[base + i] = store_as<Fp8>(static_cast<float>(static_cast<double>(field[base + i]) * inv));
    if (blockIdx.x == 0 && threadIdx.x == 0) scales[blockIdx.y] = max_abs > 0 ? max_abs / kFp8Max : 1.0;
}

/// flags[shot] = stamp where the shot's `field` holds a NaN or Inf, a pack
/// (kLanes<T> values) a thread; a programmatic dependent launch.
template <typename T>
__global__ void flag_non_finite_kernel(std::size_t packs, std::size_t shot_packs, const T* field,
                                       const std::uint16_t* hi, int* flags, int stamp) {
    constexpr int N = kLanes<T>;
    wait_for_previous_kernel();
    allow_next_kernel();
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < packs;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        bool finite = true;
        if (hi) {  // two planes: the exponent lies in the upper one
            const Pack<std::uint16_t, N> u = load_pack<N>(hi + i * N);
#pragma unroll
            for (int j = 0; j < N; ++j) finite = finite && (u.v[j] & 0x7f80u) != 0x7f80u;
        } else {
            const Pack<T, N> v = load_pack<N>(field + i * N);
#pragma unroll
            for (int j = 0; j < N; ++j) finite = finite && isfinite(v.v[j]);
        }
        if (!finite) flags[i / shot_packs] = stamp;
    }
}

}  // namespace

template <typename T>
void zero_halos(const GridParams<T>& g, void* base, int value_bytes, std::size_t copies, Stream stream) {
    if (!base || copies == 0) return;
    const std::size_t halo = g.shot_stride - static_cast<std::size_t>(g.nz) * g.nx;
    const dim3 blocks(static_cast<unsigned>(std::min<std::size_t>(blocks_for(halo, 256), 64)),
                      static_cast<unsigned>(std::min<std::size_t>(copies, 32768)));
    auto launch = [&](auto* a) {
        zero_halo_kernel<<<blocks, 256, 0, stream>>>(a, copies, g.shot_stride, g.origin, g.stride, g.nx, g.nz);
    };
    switch (value_bytes) {
    case 1: launch(static_cast<std::uint8_t*>(base)); break;
    case 2: launch(static_cast<std::uint16_t*>(base)); break;
    case 4: launch(static_cast<std::uint32_t*>(base)); break;
    case 8: launch(static_cast<std::uint64_t*>(base)); break;
    default: throw std::invalid_argument("zero_halos: values of " + std::to_string(value_bytes) + " bytes");
    }
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Stored>
void store_level(const GridParams<T>& g, const T* ey, Stored* level, Stream stream) {
    const std::size_t n = g.shot_stride * g.n_shots;
    store_level_kernel<T, Stored><<<std::min(blocks_for(n, 256), 4096), 256, 0, stream>>>(n, ey, level);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void keep_level_fp8(const GridParams<T>& g, const T* ey, Fp8* level, double* scales, unsigned long long* max_scratch,
                    Stream stream) {
    const dim3 grid(std::min(blocks_for(g.shot_stride, 256), 1024), g.n_shots);
    GPRFWI_CUDA_CHECK(cudaMemsetAsync(max_scratch, 0, g.n_shots * sizeof(unsigned long long), stream));
    max_abs_kernel<T><<<grid, 256, 0, stream>>>(g.shot_stride, g.shot_stride, ey, max_scratch);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
    quantize_fp8_kernel<T><<<grid, 256, 0, stream>>>(g.shot_stride, g.shot_stride, ey, max_scratch, level, scales);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void flag_non_finite(const GridParams<T>& g, const TmFields<T>& f, int* flags, int stamp, const CudaTuning& tuning,
                     Stream stream) {
    constexpr int N = kLanes<T>;
    if (g.shot_stride % N != 0) throw std::logic_error("flag_non_finite: a shot's fields are not whole packs");
    const std::size_t shot_packs = g.shot_stride / N, packs = shot_packs * g.n_shots;
    launch_kernel(tuning, flag_non_finite_kernel<T>, dim3(std::min(blocks_for(packs, 256), 4096)), dim3(256), stream,
                  packs, shot_packs, static_cast<const T*>(f.ey), static_cast<const std::uint16_t*>(f.ey_hi), flags,
                  stamp);
}

#define GPRFWI_INSTANTIATE_TYPE(T) \
    template void keep_level_fp8<T>(const GridParams<T>&, const T*, Fp8*, double*, unsigned long long*, Stream); \
    template void zero_halos<T>(const GridParams<T>&, void*, int, std::size_t, Stream); \
    template void store_level<T, T>(const GridParams<T>&, const T*, T*, Stream); \
    template void store_level<T, Bf16>(const GridParams<T>&, const T*, Bf16*, Stream); \
    template void flag_non_finite<T>(const GridParams<T>&, const TmFields<T>&, int*, int, const CudaTuning&, Stream);
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
