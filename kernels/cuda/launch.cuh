#pragma once
// Launching the CUDA kernels: programmatic dependent launches (Hopper),
// grid sizes, and the blocks of a kernel the GPU holds at once.


#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>

#include "cuda_check.hpp"
#include "gprfwi/cuda_tuning.hpp"
#include "packs.cuh"

namespace gprfwi::kernels::cuda {
// Internal to the CUDA backend's sources, which include it (kernels/cuda/):
// each has its own copy of these templates and kernels.
namespace {

// Programmatic dependent launch (Hopper): the forward step's two kernels and
// the adjoint step's six are launched so that each may start while the
// kernel before it finishes; each waits for that kernel's results
// (griddepcontrol.wait, a no-op for a plain launch) before it reads
// anything, and then lets the next one launch as soon as all its blocks run
// (griddepcontrol.launch_dependents): the next kernel's wait then also
// covers every kernel before.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

/// Launches kernel<<<grid, block, shared_bytes, stream>>>(args...), as a
/// programmatic dependent launch where tuning.dependent_launch (which the
/// propagator keeps only on GPUs that have it).
template <typename... Params, typename... Args>
void launch_kernel_shared(const CudaTuning& tuning, void (*kernel)(Params...), dim3 grid, dim3 block,
                          std::size_t shared_bytes, cudaStream_t stream, Args&&... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = tuning.dependent_launch ? 1 : 0;
    GPRFWI_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}
template <typename... Params, typename... Args>
void launch_kernel(const CudaTuning& tuning, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                   Args&&... args) {
    launch_kernel_shared(tuning, kernel, grid, block, 0, stream, std::forward<Args>(args)...);
}

inline int blocks_for(std::size_t n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

/// The blocks of `Kernel` (kStepWarps warps, no dynamic shared memory) that
/// the current GPU holds at once, worked out once per device (a process may
/// drive several).
template <auto Kernel>
int resident_blocks() {
    static std::array<std::atomic<int>, 64> resident_on{};
    int device = 0;
    GPRFWI_CUDA_CHECK(cudaGetDevice(&device));
    int resident = device < 64 ? resident_on[device].load(std::memory_order_relaxed) : 0;
    if (resident == 0) {
        int sms = 0, blocks = 0;
        GPRFWI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        GPRFWI_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, kStepWarps * 32, 0));
        resident = std::max(1, sms * blocks);
        if (device < 64) resident_on[device].store(resident, std::memory_order_relaxed);
    }
    return resident;
}

}  // namespace
}  // namespace gprfwi::kernels::cuda
