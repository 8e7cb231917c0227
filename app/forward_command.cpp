// `gprfwi forward [RUN.yaml]`: synthetic traces of a run file, or of the
// built-in example, written to OUTPUT/synthetic.h5 (docs/hdf5.md) with the
// model beside them (OUTPUT/model.h5 + .xdmf). Under MPI each rank models its
// own shots; rank 0 gathers the traces, adds the noise and writes
// (also OUTPUT/synthetic.sgy with `output.segy: true`).

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "common.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/example.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/segy.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

struct ForwardArgs {
    RunArgs run;  // run_file empty: the built-in example
    std::string precision = "single";
    std::string backend = "auto";
    int stencil = 4;
    int pml = 20;
};

void run_forward(const ForwardArgs& a) {
    Model model;
    Survey survey;
    PropagatorOptions opt;
    NoiseSpec noise;
    int shots_per_batch = 0;
    bool segy = false;
    std::string dir, config_text, description = "gprfwi forward: built-in example";
    if (!a.run.run_file.empty()) {
        // everything is validated before anything is written
        const RunConfig c = load_run_file(a.run);
        model = c.model;
        survey = c.survey();
        opt = c.propagator;
        noise = c.noise;
        shots_per_batch = c.shots_per_batch;
        segy = c.output_segy;
        description = "gprfwi forward: " + c.file;
        dir = c.output_dir;
        config_text = c.record(a.run.overrides);
        spdlog::info("{}: {} x {} nodes ({}), {} shots, {} samples of {:.3g} s; wavelet {}", c.file, model.grid.nx,
                     model.grid.nz, c.model_summary, survey.shots.size(), survey.nt, survey.dt, c.wavelet_summary);
    } else {
        opt.backend = parse_backend(a.backend);
        opt.precision = parse_precision(a.precision);
        opt.stencil_order = a.stencil;
        opt.cpml.widths = PmlWidths::uniform(a.pml);
        model = example_model();
        survey = example_survey();
        dir = a.run.output_dir.empty() ? "gprfwi-example" : a.run.output_dir;
        config_text = fmt::format("# built-in crosshole example; backend {}, precision {}, stencil {}, pml {}", a.backend,
                                  a.precision, a.stencil, a.pml);
        spdlog::info("built-in crosshole example: {} x {} nodes, dx = {} m, {} shots, {} samples of {:.3g} s", model.grid.nx,
                     model.grid.nz, model.grid.dx, survey.shots.size(), survey.nt, survey.dt);
    }
    opt = fix_survey_wide_options(opt, model, survey);
    opt.progress = make_progress_display();
    const TimeStepping ts = plan_time_stepping(model, survey, opt.stencil_order, opt.allow_substeps);
    DistributedRunner runner(survey, opt, shots_per_batch);
    const parallel::Place& place = parallel::place();
    spdlog::info("backend {}, {} precision, stencil {}, CPML {}/{}/{}/{} cells; dt limit {:.4g} s, {} internal step(s) per "
                 "sample; {} rank(s), rank 0 has {} shot(s)",
                 runner.propagator().name(), to_string(opt.precision), opt.stencil_order, opt.cpml.widths.left,
                 opt.cpml.widths.right, opt.cpml.widths.top, opt.cpml.widths.bottom, ts.dt_max, ts.ratio, place.size,
                 runner.shots().size());
    make_output_dir(dir, "synthetic.h5", traces_file_bytes(survey, config_text));
    const auto t0 = std::chrono::steady_clock::now();
    const Traces local = runner.forward(model);
    const double local_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Traces traces = runner.gather(local);
    const double seconds = parallel::max(local_seconds);
    const auto write0 = std::chrono::steady_clock::now();
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        const double noise_std = add_noise(traces, noise);
        if (noise.enabled()) spdlog::info("added Gaussian noise, standard deviation {:.4g} V/m (seed {})", noise_std, noise.seed);
        double peak = 0;
        for (const auto& t : traces)
            for (double v : t.samples()) peak = std::max(peak, std::abs(v));
        const auto path = (std::filesystem::path(dir) / "synthetic.h5").string();
        const auto model_path = (std::filesystem::path(dir) / "model.h5").string();
        write_traces_h5(path, survey, traces, config_text);
        write_model_h5(model_path, model, config_text);
        if (segy) {
            const auto segy_path = (std::filesystem::path(dir) / "synthetic.sgy").string();
            write_segy(segy_path, survey, traces, description);
            spdlog::info("wrote {}", segy_path);
        }
        const PaddedGrid g(model.grid, opt.cpml.widths);
        spdlog::info("forward modelling took {} on the slowest rank ({:.3g} cell-steps/s in all); peak |Ey| = {:.4g} V/m",
                     format_seconds(seconds),
                     static_cast<double>(g.cells()) * ts.nt_internal * static_cast<double>(survey.shots.size()) / seconds, peak);
        spdlog::info("wrote {} and {} (+ .xdmf)", path, model_path);
    });
    const RunTimings& t = runner.timings();
    spdlog::info("timing (rank 0): set-up {:.3f} s, propagation {:.3f} s, host {:.3f} s, I/O {:.3f} s, communication {:.3f} s",
                 t.setup_s, t.forward_s, t.other_s,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - write0).count(), runner.communication_seconds());
}

}  // namespace

void add_forward_command(CLI::App& app) {
    auto args = std::make_shared<ForwardArgs>();
    CLI::App* cmd = app.add_subcommand(
        "forward", "Synthetic Ey traces of a run file, or of the built-in crosshole example, into OUTPUT/synthetic.h5");
    add_run_options(*cmd, args->run, false);
    cmd->add_option("--precision", args->precision, "Built-in example: single | double")->capture_default_str();
    cmd->add_option("--backend", args->backend, "Built-in example: auto | cpu | cuda")->capture_default_str();
    cmd->add_option("--stencil", args->stencil, "Built-in example: stencil order 2, 4, 6 or 8")->capture_default_str();
    cmd->add_option("--pml", args->pml, "Built-in example: CPML width in cells")->capture_default_str();
    cmd->callback([args] { run_forward(*args); });
}

}  // namespace gprfwi::app
