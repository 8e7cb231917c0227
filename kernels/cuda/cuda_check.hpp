#pragma once
// Checked CUDA calls: every failure becomes a gprfwi::Error naming the call,
// the file and line, and CUDA's own message.

#include <cuda_runtime.h>

#include "gprfwi/cuda_messages.hpp"

#define GPRFWI_CUDA_CHECK(call)                                                                        \
    do {                                                                                               \
        const cudaError_t gprfwi_cuda_status = (call);                                                 \
        if (gprfwi_cuda_status != cudaSuccess)                                                         \
            ::gprfwi::cuda_messages::throw_cuda_error(cudaGetErrorName(gprfwi_cuda_status),            \
                                                      cudaGetErrorString(gprfwi_cuda_status), #call,   \
                                                      __FILE__, __LINE__);                             \
    } while (0)
