#pragma once
// Messages of the CUDA backend, formatted in ordinary C++ (fmt does not
// compile under nvcc), so that the .cu files only pass the numbers. Plain
// C++, built with or without CUDA (the CPU tests check the messages).

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

/// Bytes in the unit that reads best: MiB below a GiB, else GiB.
std::string bytes_text(double bytes);

/// What a batch needs and what is free, and the options that need less,
/// each with its run-file key: the kept levels' compression and interval
/// where the batch keeps levels (a gradient's), and fewer shots per batch.
std::string out_of_memory_message(const DeviceMemory& m);

/// Throws OutOfMemory with out_of_memory_message.
[[noreturn]] void throw_out_of_memory(const DeviceMemory& m);

std::string device_label(int device, const std::string& name);

}  // namespace gprfwi::cuda_messages
