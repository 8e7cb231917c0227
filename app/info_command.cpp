// `gprfwi info`: versions, compiled backends and the GPUs this process sees.

#include <string>

#include <fmt/format.h>

#include "commands.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/versions.hpp"

namespace gprfwi::app {

void add_info_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("info", "Versions, compiled backends and visible GPUs");
    cmd->callback([] {
        fmt::print("gprfwi {} (git {})\n", GPRFWI_VERSION, GPRFWI_GIT_REVISION);
        for (const auto& [name, version] : library_versions()) fmt::print("  {:<8} {}\n", name, version);
        fmt::print("backends: cpu (OpenMP){}\n", cuda_backend_compiled() ? ", cuda" : " (CUDA not compiled)");
        const auto gpus = cuda_device_names();
        if (cuda_backend_compiled()) {
            fmt::print("GPUs visible: {}; this process would use GPU {}\n", gpus.size(), gpus.empty() ? -1 : default_cuda_device());
            for (std::size_t d = 0; d < gpus.size(); ++d) fmt::print("  GPU {}: {}\n", d, gpus[d]);
        }
    });
}

}  // namespace gprfwi::app
