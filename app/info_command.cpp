// `gprfwi info`: versions, compiled backends, and the GPUs each rank sees and
// would use (`mpirun -np N gprfwi info` shows every rank's binding).

#include <string>

#include <fmt/format.h>

#include "commands.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/versions.hpp"

namespace gprfwi::app {

void add_info_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("info", "Versions, compiled backends, and the GPU each rank binds");
    cmd->callback([] {
        const parallel::Place& p = parallel::place();
        std::string line = fmt::format("  rank {} on {} (local rank {} of {}): ", p.rank, p.host.empty() ? "this host" : p.host,
                                       p.local_rank, p.local_size);
        if (!cuda_backend_compiled()) {
            line += "CPU (CUDA not compiled)";
        } else {
            const auto gpus = cuda_device_names();
            if (gpus.empty()) {
                line += "CPU (no GPU visible)";
            } else {
                const int d = default_cuda_device();
                line += fmt::format("GPU {} of {} ({})", d, gpus.size(), gpus[static_cast<std::size_t>(d)]);
            }
        }
        const auto lines = parallel::gather(line);
        if (!parallel::is_root()) return;
        fmt::print("gprfwi {} ({})\n", GPRFWI_VERSION, GPRFWI_REVISION);
        for (const auto& [name, version] : library_versions()) fmt::print("  {:<8} {}\n", name, version);
        fmt::print("backends: cpu (OpenMP){}\n", cuda_backend_compiled() ? ", cuda" : " (CUDA not compiled)");
        fmt::print("ranks: {}; each binds GPU local_rank % GPUs on its node (propagator.device overrides)\n", p.size);
        for (const auto& l : lines) fmt::print("{}\n", l);
    });
}

}  // namespace gprfwi::app
