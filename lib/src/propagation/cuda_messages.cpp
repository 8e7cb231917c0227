#include "gprfwi/cuda_messages.hpp"

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi::cuda_messages {

void throw_cuda_error(const char* name, const char* text, const char* call, const char* file, int line) {
    throw Error(fmt::format("CUDA error {} ({}) in {} at {}:{}", name, text, call, file, line));
}

void throw_out_of_memory(const DeviceMemory& m) {
    const double gib = 1073741824.0;
    throw OutOfMemory(fmt::format(
        "the CUDA backend needs {:.2f} GiB on GPU {} ({}) for this batch of {} shot(s), {:.2f} GiB of them for "
        "kept forward levels; {:.2f} GiB are free of {:.2f} GiB. Options that need less: snapshot compression "
        "bf16 (kept levels {:.2f} GiB), a snapshot interval of 4 (kept levels {:.2f} GiB), or fewer shots per "
        "batch (about {:.2f} GiB per shot)",
        m.needed / gib, m.device, m.device_name, m.shots, m.levels / gib, m.free / gib, m.total / gib,
        m.levels_bf16 / gib, m.levels_every4 / gib, m.needed / gib / m.shots));
}

std::string device_label(int device, const std::string& name) { return fmt::format("cuda (GPU {}: {})", device, name); }

}  // namespace gprfwi::cuda_messages
