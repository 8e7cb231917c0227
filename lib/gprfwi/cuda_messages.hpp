#pragma once
// Messages of the CUDA backend, formatted in ordinary C++ (fmt does not
// compile under nvcc), so that the .cu files only pass the numbers.

#include <cstddef>
#include <string>

namespace gprfwi::cuda_messages {

/// Throws Error: "CUDA error NAME (TEXT) in CALL at FILE:LINE".
[[noreturn]] void throw_cuda_error(const char* name, const char* text, const char* call, const char* file, int line);

struct DeviceMemory {
    int device;
    std::string device_name;
    int shots;
    std::size_t needed, free, total;      // bytes
    std::size_t levels;                   // bytes of kept forward levels
    std::size_t levels_bf16, levels_every4;  // what two options would keep instead
};

/// Throws OutOfMemory with the bytes needed and free and the options that need less.
[[noreturn]] void throw_out_of_memory(const DeviceMemory& m);

std::string device_label(int device, const std::string& name);

}  // namespace gprfwi::cuda_messages
