// `gprfwi gradient RUN.yaml`: the misfit of the run file's model against
// data.observed (HDF5 traces), and its exact gradient with respect to eps_r
// and sigma, into OUTPUT/gradient.h5 with an XDMF sidecar. Each rank reads
// the observed traces of its own shots only; misfit and gradient are summed
// over the ranks; rank 0 writes. Everything is read and checked before
// anything is written.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "common.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/data_misfits.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

void run_gradient(const RunArgs& a) {
    const RunConfig c = load_run_file(a);
    if (c.observed.file.empty())
        throw ConfigError(fmt::format("{}: data.observed: the gradient command needs observed data (HDF5 or SEG-Y traces)", c.file));
    const Survey survey = c.survey();
    PropagatorOptions opt = fix_survey_wide_options(c.propagator, c.model, survey);
    opt.progress = make_progress_display();
    DistributedRunner runner(survey, opt, c.shots_per_batch);
    std::unique_ptr<BandLimitedMisfit> misfit;  // L2, full band
    const auto since = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    const auto read0 = std::chrono::steady_clock::now();
    double io_s = 0, reserve_s = 0;
    {
        WorkspaceAhead workspace(runner, c.model, true);  // made while the observed data are read
        parallel::collectively([&] {
            misfit = std::make_unique<BandLimitedMisfit>(MisfitKind::l2, runner.shots(),
                                                         read_observed(c.observed, survey, runner.shots()), 0.0, survey.dt);
        });
        io_s = since(read0);
        reserve_s = workspace.wait();
    }
    spdlog::info("{}: {} x {} nodes ({}), {} shots over {} rank(s), {} samples; observed data {}; backend {}", c.file,
                 c.grid.nx, c.grid.nz, c.model_summary, survey.shots.size(), parallel::place().size, survey.nt, c.observed.describe(),
                 runner.propagator().name());
    const std::string& dir = c.output_dir;
    make_output_dir(dir, "gradient.h5", grid_file_bytes(c.grid, 2, c.record(a.overrides)));
    const auto t0 = std::chrono::steady_clock::now();
    const GradientResult g = runner.gradient(c.model, *misfit);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const RunTimings& t = runner.timings();
    spdlog::info("misfit {:.6g}; gradient in {} (forward {:.3f} s, adjoint {:.3f} s on rank 0)", g.misfit,
                 format_seconds(seconds), t.forward_s, t.adjoint_s);
    const auto write0 = std::chrono::steady_clock::now();
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        const auto path = (std::filesystem::path(dir) / "gradient.h5").string();
        write_gradient_h5(path, c.grid, g.misfit, g.grad_eps_r, g.grad_sigma, c.record(a.overrides));
        spdlog::info("wrote {} and its .xdmf", path);
    });
    io_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - write0).count();
    spdlog::info("timing (rank 0): set-up {:.3f} s (and {:.3f} s beside the reading of the data), propagation {:.3f} s, "
                 "host {:.3f} s, I/O {:.3f} s, communication {:.3f} s",
                 t.setup_s, reserve_s, t.forward_s + t.adjoint_s, t.other_s, io_s, runner.communication_seconds());
}

}  // namespace

void add_gradient_command(CLI::App& app) {
    auto a = std::make_shared<RunArgs>();
    CLI::App* cmd = app.add_subcommand("gradient", "Misfit against data.observed and its gradient into OUTPUT/gradient.h5");
    add_run_options(*cmd, *a, true);
    cmd->callback([a] { run_gradient(*a); });
}

}  // namespace gprfwi::app
