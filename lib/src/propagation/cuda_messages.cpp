#include "gprfwi/cuda_messages.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi::cuda_messages {

void throw_cuda_error(const char* name, const char* text, const char* call, const char* file, int line) {
    throw Error(fmt::format("CUDA error {} ({}) in {} at {}:{}", name, text, call, file, line));
}

std::string bytes_text(double bytes) {
    constexpr double mib = 1048576.0, gib = 1073741824.0;
    return bytes < gib ? fmt::format("{:.1f} MiB", bytes / mib) : fmt::format("{:.2f} GiB", bytes / gib);
}

std::string out_of_memory_message(const DeviceMemory& m) {
    // the level options only where levels are kept: a forward run keeps none
    const std::string levels =
        m.levels > 0 ? fmt::format(", {} of them for kept forward levels", bytes_text(static_cast<double>(m.levels)))
                     : std::string();
    const std::string level_options =
        m.levels > 0 ? fmt::format("snapshot compression bf16 (propagator.snapshots.compression; kept levels {}), a "
                                   "snapshot interval of 4 (propagator.snapshots.interval; kept levels {}), or ",
                                   bytes_text(static_cast<double>(m.levels_bf16)),
                                   bytes_text(static_cast<double>(m.levels_every4)))
                     : std::string();
    // a batch that needs a small share of the GPU and still does not fit meets memory held elsewhere
    const std::string elsewhere = m.needed < m.total / 10 && m.free < m.total / 10
                                      ? " (the rest is held outside this run: other processes on this GPU?)"
                                      : "";
    return fmt::format("the CUDA backend needs {} on GPU {} ({}) for this batch of {} shot(s){}; {} are free of {}{}. "
                       "Options that need less: {}fewer shots per batch (propagator.shots_per_batch; about {} per shot)",
                       bytes_text(static_cast<double>(m.needed)), m.device, m.device_name, m.shots, levels,
                       bytes_text(static_cast<double>(m.free)), bytes_text(static_cast<double>(m.total)), elsewhere,
                       level_options, bytes_text(static_cast<double>(m.needed) / std::max(m.shots, 1)));
}

void throw_out_of_memory(const DeviceMemory& m) { throw OutOfMemory(out_of_memory_message(m)); }

std::string device_label(int device, const std::string& name) { return fmt::format("cuda (GPU {}: {})", device, name); }

}  // namespace gprfwi::cuda_messages
