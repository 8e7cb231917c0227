// `gprfwi check RUN.yaml`: validates a run file (and the files it names)
// without running it, and prints what a run would use: the resolved grid and
// model, the time stepping, the shots and their assignment to ranks, the
// memory per rank, and for a campaign its stages and what `auto` chose.
// Exit 0 when valid; 2 (with file:line:col) when not.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "common.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/memory_plan.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

struct CheckArgs {
    RunArgs run;
    int ranks = 0;  // 0: the ranks of this run
};

double minimum(const Array2D& a) { return *std::min_element(a.values().begin(), a.values().end()); }
double maximum(const Array2D& a) { return *std::max_element(a.values().begin(), a.values().end()); }

void run_check(const CheckArgs& a) {
    const RunConfig c = load_run_file(a.run);
    std::optional<InversionSpec> inversion;
    if (c.has_inversion) inversion = load_campaign_file(a.run).inversion;
    if (!parallel::is_root()) return;
    const PropagatorOptions& o = c.propagator;
    const PaddedGrid g(c.grid, o.cpml.widths);
    const Survey survey = c.survey();
    const TimeStepping t = plan_time_stepping(c.model, survey, o.stencil_order, o.allow_substeps);
    std::size_t receivers = 0;
    for (const auto& s : c.shots) receivers += s.receivers.size();
    const double gib = 1073741824.0;
    fmt::print("{}: valid\n", c.file);
    fmt::print("  grid      {} x {} nodes, dx = {} m, dz = {} m; with CPML ({}, {}, {}, {} cells) {} x {}\n", c.grid.nx,
               c.grid.nz, c.grid.dx, c.grid.dz, o.cpml.widths.left, o.cpml.widths.right, o.cpml.widths.top,
               o.cpml.widths.bottom, g.nx, g.nz);
    fmt::print("  model     {}\n            eps_r {} .. {}, sigma {} .. {} S/m, mu_r {} .. {}\n", c.model_summary,
               minimum(c.model.eps_r), maximum(c.model.eps_r), minimum(c.model.sigma), maximum(c.model.sigma),
               minimum(c.model.mu_r), maximum(c.model.mu_r));
    fmt::print("  wavelet   {}\n", c.wavelet_summary);
    fmt::print("  time      dt = {} s, nt = {}; CFL limit {:.4g} s, {} internal step(s) per sample\n", c.dt_s, c.nt,
               t.dt_max, t.ratio);
    fmt::print("  survey    {} shot(s), {} receiver(s) in all\n", c.shots.size(), receivers);
    fmt::print("  backend   {}, {} precision, stencil {}; snapshots every {} step(s), {} compression, {} storage\n",
               to_string(o.backend), to_string(o.precision), o.stencil_order, o.snapshots.interval == 0 ? std::string("auto") : std::to_string(o.snapshots.interval),
               to_string(o.snapshots.compression), to_string(o.snapshots.storage));
    if (c.noise.enabled())
        fmt::print("  noise     {}, seed {}\n", c.noise.snr_db > 0 ? fmt::format("SNR {} dB", c.noise.snr_db) : fmt::format("std {} V/m", c.noise.std_vm),
                   c.noise.seed);
    const int ranks = a.ranks > 0 ? a.ranks : parallel::place().size;
    // the memory plan of each rank's first batch, on the backend a run here would use
    const BackendKind backend = resolve_backend(o.backend);
    fmt::print("  ranks     {} (each binds GPU local_rank % GPUs per node); memory of a batch on the {} backend{}\n",
               ranks, to_string(backend),
               backend == BackendKind::cuda ? " (device memory, kept levels where the storage puts them)"
               : c.shots_per_batch == 0     ? " (batches as half this machine's memory, shared by the ranks, holds)"
                                            : "");
    for (int r = 0; r < ranks; ++r) {
        if (r >= 8 && r != ranks - 1) {
            if (r == 8) fmt::print("    ...\n");
            continue;
        }
        const auto shots = parallel::shots_of_rank(c.shots.size(), ranks, r);
        auto first_shots = [&](std::size_t n) {
            Survey first = survey;
            first.shots.clear();
            for (std::size_t i = 0; i < n; ++i) first.shots.push_back(survey.shots[shots[i]]);
            return PropagationSetup::build(c.model, first, o);
        };
        std::size_t batch = c.shots_per_batch > 0 ? std::min<std::size_t>(c.shots_per_batch, shots.size()) : shots.size();
        if (c.shots_per_batch == 0 && backend == BackendKind::cpu && shots.size() > 1) {
            // as DistributedRunner fits it, with every rank on this machine
            batch = fit_host_batch(c.model, survey, shots, o, std::nullopt, host_batch_room(ranks));
        }
        std::string memory;
        if (batch > 0) {
            const PropagationSetup setup = first_shots(batch);
            try {
                const auto fwd = plan_batch_memory(setup, o, false, backend);
                const auto grad = plan_batch_memory(setup, o, true, backend);
                memory = fmt::format(": memory forward {:.3g} GiB, gradient {:.3g} GiB{}", fwd.total() / gib,
                                     grad.total() / gib,
                                     grad.host_snapshot_bytes
                                         ? fmt::format(" (and {:.3g} GiB of page-locked host memory)",
                                                       grad.host_snapshot_bytes / gib)
                                         : "");
            } catch (const NotCompiled&) {
                memory = ": memory unknown (the CUDA backend is not compiled into this gprfwi)";
            }
        }
        fmt::print("    rank {:>4}: {} shot(s){}, batches of {}{}\n", r, shots.size(),
                   shots.empty() ? "" : fmt::format(" ({}..{})", shots.front(), shots.back()), batch, memory);
    }
    fmt::print("  data      {}\n", c.observed.file.empty() ? "(none)" : c.observed.describe());
    if (inversion) {
        fmt::print("  inversion {} misfit; eps_r in [{}, {}], sigma in [{}, {}] S/m{}\n", to_string(inversion->misfit),
                   inversion->eps_r_min, inversion->eps_r_max, inversion->sigma_min, inversion->sigma_max,
                   inversion->taper_radius_m > 0 ? fmt::format("; taper {:.3g} m", inversion->taper_radius_m) : "");
        for (const StageSpec& s : inversion->stages) {
            fmt::print("    stage {}: {}, {}, up to {} iterations{}; smoothing {:.4g} m (eps_r), {:.4g} m (sigma){}\n", s.name,
                       s.invert_eps_r ? (s.invert_sigma ? "eps_r and sigma" : "eps_r") : "sigma",
                       s.max_frequency_hz > 0 ? fmt::format("below {:.4g} Hz", s.max_frequency_hz) : "full band", s.iterations,
                       s.min_relative_decrease > 0
                           ? fmt::format(" (until the misfit falls by less than {} over {}{}{})", s.min_relative_decrease,
                                         s.decrease_window,
                                         s.min_relative_change > 0
                                             ? fmt::format(" and the model moves by less than {}", s.min_relative_change)
                                             : "",
                                         s.min_iterations > 0 ? fmt::format(", after at least {}", s.min_iterations) : "")
                           : "",
                       smoothing_length(*inversion, s, 0), smoothing_length(*inversion, s, 1), s.flood ? "; flooded" : "");
        }
        // a Newton-type method's Hessian-vector products hold more than a gradient: on the CPU their own batches
        std::vector<InversionMethod> methods;
        for (const StageSpec& s : inversion->stages) methods.push_back(s.method.value_or(inversion->method));
        const auto uses = [&](InversionMethod m) { return std::find(methods.begin(), methods.end(), m) != methods.end(); };
        const auto shots = parallel::shots_of_rank(c.shots.size(), ranks, 0);
        if ((uses(InversionMethod::newton) || uses(InversionMethod::gauss_newton)) && backend == BackendKind::cpu &&
            !shots.empty()) {
            const HessianKind kind = uses(InversionMethod::newton) ? HessianKind::full : HessianKind::gauss_newton;
            const std::size_t batch = c.shots_per_batch > 0
                                          ? std::min<std::size_t>(c.shots_per_batch, shots.size())
                                          : fit_host_batch(c.model, survey, shots, o, kind, host_batch_room(ranks));
            fmt::print("    {} Hessian-vector products: rank 0's in batches of {}, memory {:.3g} GiB\n",
                       kind == HessianKind::full ? "full" : "Gauss-Newton", batch,
                       host_batch_bytes(c.model, survey, shots, batch, o, kind) / gib);
        }
        // what the run file left to auto, as invert logs it (the stages among them written out as a list)
        for (const std::string& d : inversion->defaults) fmt::print("    inversion.{}\n", d);
    }
    fmt::print("  output    {}\n", c.output_dir);
}

}  // namespace

void add_check_command(CLI::App& app) {
    auto a = std::make_shared<CheckArgs>();
    CLI::App* cmd = app.add_subcommand("check", "Validate a run file and show what a run would use");
    add_run_options(*cmd, a->run, true);
    cmd->add_option("--ranks", a->ranks, "Show the shot assignment for this many MPI ranks (default: this run's)");
    cmd->callback([a] { run_check(*a); });
}

}  // namespace gprfwi::app
