// `gprfwi invert CAMPAIGN.yaml [--resume]`: the inversion campaign of
// docs/inversion.md. Every rank reads the campaign and the observed traces of
// its own shots; PETSc TAO drives the stages; rank 0 writes history.csv, the
// models, the checkpoint and model_final.h5. SIGTERM or SIGUSR1 finish the
// evaluation in flight and exit with code 3; --resume continues.

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "common.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/versions.hpp"

namespace gprfwi::app {

namespace {

struct InvertArgs {
    RunArgs run;
    bool resume = false;
    std::string petsc_options;
    std::vector<std::string> extras;  // -tao_* and other PETSc options
};

/// What the run records at its start: versions, ranks and devices, options, the campaign.
std::string run_record(const Campaign& c, const std::string& petsc_options, const std::string& config_text,
                       const std::string& backend) {
    const parallel::Place& p = parallel::place();
    std::string device = backend;
    if (backend == "cuda") {
        const auto names = cuda_device_names();
        const int d = c.run.propagator.device >= 0 ? c.run.propagator.device : default_cuda_device();
        device = fmt::format("cuda GPU {} ({})", d, d < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(d)] : "?");
    }
    const auto devices = parallel::gather(fmt::format("rank {} on {}: {}", p.rank, p.host, device));
    std::string s = fmt::format("gprfwi {} ({})\n", GPRFWI_VERSION, GPRFWI_REVISION);
    for (const auto& [name, version] : library_versions()) s += fmt::format("{}: {}\n", name, version);
    s += fmt::format("PETSc options: {}\nranks: {}\n", petsc_options.empty() ? "(none)" : petsc_options, p.size);
    for (const auto& d : devices) s += d + "\n";
    s += "campaign (" + c.run.file + "):\n" + config_text + "\n";
    return s;
}

void run_invert(const InvertArgs& a) {
    const Campaign c = load_campaign_file(a.run);
    const RunConfig& run = c.run;
    const InversionSpec& spec = c.inversion;
    const Survey survey = run.survey();
    const PropagatorOptions opt = fix_survey_wide_options(run.propagator, run.model, survey);
    {
        // the time stepping is planned per evaluation; say when the bounds would change it
        const TimeStepping now = plan_time_stepping(run.model, survey, opt.stencil_order, opt.allow_substeps);
        const double min_mu = *std::min_element(run.model.mu_r.values().begin(), run.model.mu_r.values().end());
        const TimeStepping fastest = plan_time_stepping(run.grid, spec.eps_r_min * min_mu, run.dt_s, run.nt, opt.stencil_order, true);
        if (fastest.ratio != now.ratio)
            spdlog::warn("time.dt {} s needs {} internal step(s) at the lower eps_r bound {} but {} for the starting "
                         "model: the number of sub-steps may change during the inversion; a smaller time.dt avoids it",
                         run.dt_s, fastest.ratio, spec.eps_r_min, now.ratio);
    }
    for (const std::string& d : spec.defaults) spdlog::info("{}: inversion.{}", run.file, d);
    DistributedRunner runner(survey, opt, run.shots_per_batch);
    WorkspaceAhead workspace(runner, run.model, true);  // made while the observed data are read and PETSc starts
    Traces observed;
    parallel::collectively([&] { observed = read_observed(run.observed, survey, runner.shots()); });
    FwiObjective objective(runner, std::move(observed), spec.misfit, spec.wavelet_water_level);

    std::string petsc_options = spec.petsc_options;
    for (const std::string& s : {a.petsc_options}) petsc_options += (petsc_options.empty() ? "" : " ") + s;
    for (const std::string& s : a.extras) petsc_options += (petsc_options.empty() ? "" : " ") + s;
    PetscSession petsc(petsc_options);
    install_stop_signal_handlers();

    const std::string& dir = run.output_dir;
    const std::string config_text = c.record(a.run.overrides);
    make_output_dir(dir, "checkpoint.h5", checkpoint_file_bytes(spec, run.grid, config_text));
    const std::string record = run_record(c, petsc_options, config_text, runner.propagator().name());
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        write_text_atomically((std::filesystem::path(dir) / (a.resume ? "run-info-resume.txt" : "run-info.txt")).string(),
                              record);
    });
    spdlog::info("{}: {} x {} nodes, {} shots over {} rank(s), backend {}, misfit {}, {} stage(s); output {}", run.file,
                 run.grid.nx, run.grid.nz, survey.shots.size(), parallel::place().size, runner.propagator().name(),
                 to_string(spec.misfit), spec.stages.size(), dir);
    spdlog::debug("the propagator's workspace made in {:.3f} s beside the reading of the data", workspace.wait());
    const auto t0 = std::chrono::steady_clock::now();
    const InversionResult r = invert(run.model, spec, objective, dir, config_text, a.resume);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.history.empty()) {
        const HistoryRow& first = r.history.front();
        const HistoryRow& last = r.history.back();
        // the final model is the iterate the last stage ended at (its least misfit, not always its last row),
        // its antennas' nodes filled: its own misfit and errors, not the last row's
        const double j = r.final_misfit.value_or(last.misfit);
        const double j0 = last.misfit_relative > 0 ? last.misfit / last.misfit_relative : 0.0;
        spdlog::info("done in {}: {} iterations in all; the final model's misfit is {:.4g} of the last stage's start",
                     format_seconds(seconds), r.history.size(), j0 > 0 ? j / j0 : 0.0);
        if (first.stage == last.stage || spec.stages.front().max_frequency_hz == 0)
            spdlog::info("misfit {:.6g} -> {:.6g}{}", first.misfit, j,
                         first.misfit > 0 ? fmt::format(" ({:.1f}% lower)", 100 * (1 - j / first.misfit))
                                          : std::string(" (no misfit to lower: the starting model explains the data)"));
        if (first.error_eps_r >= 0 && r.final_error_eps_r >= 0)
            spdlog::info("model error (relative L2 against inversion.true_model): eps_r {:.4f} -> {:.4f} ({:.1f}% lower), "
                         "sigma {:.4f} -> {:.4f} ({:.1f}% lower)",
                         first.error_eps_r, r.final_error_eps_r, 100 * (1 - r.final_error_eps_r / first.error_eps_r),
                         first.error_sigma, r.final_error_sigma, 100 * (1 - r.final_error_sigma / first.error_sigma));
    }
    spdlog::info("wrote {}/history.csv, {}/model_final.h5 (+ .xdmf){}", dir, dir, spec.save_models ? ", models/" : "");
}

/// The option families of PETSc that an inversion reads (its solver, line
/// search, Krylov method and preconditioner, logging and debugging).
constexpr std::array<std::string_view, 11> kPetscOptionFamilies = {
    "tao_", "ksp_", "pc_", "log_", "options_", "malloc", "info", "fp_trap", "on_error_", "help", "version"};

/// Arguments after the run file go to PETSc as they are. PETSc ignores an
/// option it does not know, so a mistyped option of ours (`-s` for `--set`)
/// would run a whole campaign without it: each argument must be an option of
/// a family above, or a value following one.
void check_petsc_extras(const std::vector<std::string>& extras) {
    const auto is_value = [](const std::string& s) {  // a word, or a number such as -1e-3
        return s.rfind('-', 0) != 0 || (s.size() > 1 && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.'));
    };
    for (std::size_t i = 0; i < extras.size(); ++i) {
        const std::string& e = extras[i];
        const bool option = !is_value(e) && e.rfind("--", 0) != 0 &&
                            std::any_of(kPetscOptionFamilies.begin(), kPetscOptionFamilies.end(),
                                        [&](std::string_view f) { return e.compare(1, f.size(), f) == 0; });
        if (option || (i > 0 && is_value(e) && !is_value(extras[i - 1]))) continue;
        throw ConfigError(fmt::format(
            "unexpected argument '{}': arguments after the run file go to PETSc, whose options here begin -{}; "
            "a run-file key is changed with --set key=value",
            e, fmt::join(kPetscOptionFamilies, ", -")));
    }
}

}  // namespace

void add_invert_command(CLI::App& app) {
    auto a = std::make_shared<InvertArgs>();
    CLI::App* cmd = app.add_subcommand("invert", "Invert observed data for eps_r and sigma (PETSc TAO), stage by stage");
    add_run_options(*cmd, a->run, true);
    cmd->add_flag("--resume", a->resume, "Continue from OUTPUT/checkpoint.h5 (after a stop or a crash)");
    cmd->add_option("--petsc-options", a->petsc_options, "PETSc options, e.g. \"-tao_type lmvm -tao_ls_type armijo\"");
    cmd->allow_extras();  // -tao_* options may also be given as they are
    cmd->callback([a, cmd] {
        a->extras = cmd->remaining();
        check_petsc_extras(a->extras);
        run_invert(*a);
    });
}

}  // namespace gprfwi::app
