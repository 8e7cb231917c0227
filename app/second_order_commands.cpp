// `gprfwi born RUN.yaml --perturbation D.h5`: the derivative of the run
// file's traces along a model perturbation (Born, or tangent-linear,
// modelling), into OUTPUT/born.h5 in the synthetic.h5 layout.
// `gprfwi hessian RUN.yaml --direction D.h5 [--gauss-newton]`: the product of
// the misfit's Hessian (against data.observed, as `gradient`) with a model
// direction, into OUTPUT/hessian.h5.
// D.h5 holds /eps_r and /sigma [nz][nx] (per unit eps_r and in S/m), e.g.
// the difference of two model files. Under MPI each rank runs its own shots;
// traces are gathered and products summed on rank 0, which writes.
// Everything is read and checked before anything is written.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "common.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/data_misfits.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/field_data.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

struct SecondOrderArgs {
    RunArgs run;
    std::string direction;  // D.h5
    bool gauss_newton = false;
};

/// The direction file's /eps_r and /sigma on the run's grid.
ModelDirection read_direction(const std::string& path, const Grid& grid) {
    ModelDirection v;
    parallel::collectively([&] {
        v.eps_r = read_model_array_h5(path, "eps_r", grid);
        v.sigma = read_model_array_h5(path, "sigma", grid);
    });
    return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_born(const SecondOrderArgs& a) {
    const RunConfig c = load_run_file(a.run);
    const Survey survey = c.survey();
    const ModelDirection dm = read_direction(a.direction, c.grid);
    PropagatorOptions opt = fix_survey_wide_options(c.propagator, c.model, survey);
    opt.progress = make_progress_display();
    DistributedRunner runner(survey, opt, c.shots_per_batch);
    spdlog::info("{}: {} x {} nodes ({}), {} shots over {} rank(s), {} samples; perturbation {}; backend {}", c.file,
                 c.grid.nx, c.grid.nz, c.model_summary, survey.shots.size(), parallel::place().size, survey.nt,
                 a.direction, runner.propagator().name());
    const std::string& dir = c.output_dir;
    const std::string config = c.record(a.run.overrides);
    make_output_dir(dir, "born.h5", traces_file_bytes(survey, config));
    const auto t0 = std::chrono::steady_clock::now();
    const Traces local = runner.born(c.model, dm);
    const double seconds = parallel::max(seconds_since(t0));
    const Traces traces = runner.gather(local);
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        const auto path = (std::filesystem::path(dir) / "born.h5").string();
        write_traces_h5(path, survey, traces, config);
        double peak = 0;
        for (const auto& t : traces)
            for (double v : t.samples()) peak = std::max(peak, std::abs(v));
        spdlog::info("Born modelling took {} on the slowest rank; peak |dEy| = {:.4g} V/m; wrote {}",
                     format_seconds(seconds), peak, path);
    });
    const RunTimings& t = runner.timings();
    spdlog::info("timing (rank 0): set-up {:.3f} s, propagation {:.3f} s, host {:.3f} s, communication {:.3f} s",
                 t.setup_s, t.forward_s, t.other_s, runner.communication_seconds());
}

void run_hessian(const SecondOrderArgs& a) {
    const RunConfig c = load_run_file(a.run);
    if (c.observed.file.empty())
        throw ConfigError(fmt::format("{}: data.observed: the hessian command needs observed data (HDF5 or SEG-Y traces)", c.file));
    const Survey survey = c.survey();
    const ModelDirection v = read_direction(a.direction, c.grid);
    const HessianKind kind = a.gauss_newton ? HessianKind::gauss_newton : HessianKind::full;
    PropagatorOptions opt = fix_survey_wide_options(c.propagator, c.model, survey);
    opt.progress = make_progress_display();
    DistributedRunner runner(survey, opt, c.shots_per_batch);
    std::unique_ptr<BandLimitedMisfit> misfit;  // L2, full band, as `gradient`
    parallel::collectively([&] {
        misfit = std::make_unique<BandLimitedMisfit>(MisfitKind::l2, runner.shots(),
                                                     read_observed(c.observed, survey, runner.shots()), 0.0, survey.dt);
    });
    const char* name = kind == HessianKind::full ? "full" : "gauss-newton";
    spdlog::info("{}: {} x {} nodes ({}), {} shots over {} rank(s), {} samples; observed data {}; direction {}; {} "
                 "Hessian; backend {}",
                 c.file, c.grid.nx, c.grid.nz, c.model_summary, survey.shots.size(), parallel::place().size, survey.nt,
                 c.observed.describe(), a.direction, name, runner.propagator().name());
    const std::string& dir = c.output_dir;
    const std::string config = c.record(a.run.overrides);
    make_output_dir(dir, "hessian.h5", grid_file_bytes(c.grid, 2, config));
    const auto t0 = std::chrono::steady_clock::now();
    const HessianResult h = runner.hessian(c.model, *misfit, v, kind);
    const double seconds = seconds_since(t0);
    const RunTimings& t = runner.timings();
    spdlog::info("misfit {:.6g}; Hessian-vector product in {} (Born {:.3f} s, adjoint {:.3f} s on rank 0)", h.misfit,
                 format_seconds(seconds), t.forward_s, t.adjoint_s);
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        const auto path = (std::filesystem::path(dir) / "hessian.h5").string();
        write_hessian_h5(path, c.grid, h.misfit, h.hv_eps_r, h.hv_sigma, name, config);
        spdlog::info("wrote {} and its .xdmf", path);
    });
    spdlog::info("timing (rank 0): set-up {:.3f} s, propagation {:.3f} s, host {:.3f} s, communication {:.3f} s",
                 t.setup_s, t.forward_s + t.adjoint_s, t.other_s, runner.communication_seconds());
}

}  // namespace

void add_born_command(CLI::App& app) {
    auto a = std::make_shared<SecondOrderArgs>();
    CLI::App* cmd = app.add_subcommand(
        "born", "Born (tangent-linear) traces along a model perturbation into OUTPUT/born.h5");
    add_run_options(*cmd, a->run, true);
    cmd->add_option("--perturbation", a->direction, "HDF5 file with /eps_r and /sigma [nz][nx]: the model perturbation")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->callback([a] { run_born(*a); });
}

void add_hessian_command(CLI::App& app) {
    auto a = std::make_shared<SecondOrderArgs>();
    CLI::App* cmd = app.add_subcommand(
        "hessian", "Hessian of the misfit against data.observed times a model direction into OUTPUT/hessian.h5");
    add_run_options(*cmd, a->run, true);
    cmd->add_option("--direction", a->direction, "HDF5 file with /eps_r and /sigma [nz][nx]: the direction v")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_flag("--gauss-newton", a->gauss_newton, "The Gauss-Newton Hessian J^T J instead of the full one");
    cmd->callback([a] { run_hessian(*a); });
}

}  // namespace gprfwi::app
