// `gprfwi check RUN.yaml`: validates a run file without running it, and prints
// what a run would use: the resolved grid and model, the time stepping, the
// shots, and the memory of a forward and a gradient batch. Allocates nothing
// model-sized. Exit 0 when valid; 2 (with file:line:col) when not.

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

struct CheckArgs {
    std::string run_file;
    std::vector<std::string> overrides;
};

void run_check(const CheckArgs& a) {
    const RunConfig c = load_run_config(a.run_file, a.overrides);
    const PropagatorOptions& o = c.propagator;
    const PaddedGrid g(c.grid, o.cpml.widths);
    const TimeStepping t = plan_time_stepping(c.grid, c.eps_r * c.mu_r, c.dt_s, c.nt, o.stencil_order, o.allow_substeps);
    std::size_t receivers = 0;
    for (const auto& s : c.shots) receivers += s.receivers.size();
    const double gib = 1073741824.0;
    const auto fwd = estimate_batch_memory(g, t.nt_internal, c.shots.size(), receivers, 1, o, false);
    const auto grad = estimate_batch_memory(g, t.nt_internal, c.shots.size(), receivers, 1, o, true);
    fmt::print("{}: valid\n", c.file);
    fmt::print("  grid      {} x {} nodes, dx = {} m, dz = {} m; with CPML ({}, {}, {}, {} cells) {} x {}\n", c.grid.nx,
               c.grid.nz, c.grid.dx, c.grid.dz, o.cpml.widths.left, o.cpml.widths.right, o.cpml.widths.top,
               o.cpml.widths.bottom, g.nx, g.nz);
    fmt::print("  model     eps_r = {}, sigma = {} S/m, mu_r = {}\n", c.eps_r, c.sigma, c.mu_r);
    fmt::print("  wavelet   Ricker, {} Hz, delay {} s, amplitude {} A\n", c.wavelet_frequency_hz,
               c.wavelet_delay_s < 0 ? 1.5 / c.wavelet_frequency_hz : c.wavelet_delay_s, c.wavelet_amplitude_a);
    fmt::print("  time      dt = {} s, nt = {}; CFL limit {:.4g} s, {} internal step(s) per sample\n", c.dt_s, c.nt,
               t.dt_max, t.ratio);
    fmt::print("  survey    {} shot(s), {} receiver(s) in all\n", c.shots.size(), receivers);
    fmt::print("  backend   {}, {} precision, stencil {}\n", to_string(o.backend), to_string(o.precision),
               o.stencil_order);
    fmt::print("  memory    forward {:.3g} GiB, gradient {:.3g} GiB (every level kept) for all shots in one batch\n",
               fwd.total() / gib, grad.total() / gib);
    fmt::print("  output    {}\n", c.output_dir);
}

}  // namespace

void add_check_command(CLI::App& app) {
    auto a = std::make_shared<CheckArgs>();
    CLI::App* cmd = app.add_subcommand("check", "Validate a run file and show what a run would use");
    cmd->add_option("run_file", a->run_file, "The run file (YAML)")->required();
    cmd->add_option("--set", a->overrides, "Override a key: --set key.path=value (repeatable)");
    cmd->callback([a] { run_check(*a); });
}

}  // namespace gprfwi::app
