#pragma once
// GPRFWI_HD marks functions shared by host code and CUDA device code.
#if defined(__CUDACC__)
#define GPRFWI_HD __host__ __device__ inline
#else
#define GPRFWI_HD inline
#endif
