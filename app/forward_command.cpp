// `gprfwi forward [RUN.yaml]`: synthetic traces of a run file, or of the
// built-in example, written to OUTPUT/synthetic.h5 (docs/hdf5.md).

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/example.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

struct ForwardArgs {
    std::string run_file;  // empty: the built-in example
    std::vector<std::string> overrides;
    std::string output_dir;  // overrides output.dir
    std::string precision = "single";
    std::string backend = "auto";
    int stencil = 4;
    int pml = 20;
};

void run_forward(const ForwardArgs& a) {
    Model model;
    Survey survey;
    PropagatorOptions opt;
    std::string output_dir, config_text;
    if (!a.run_file.empty()) {
        // everything is validated before anything is written
        const RunConfig c = load_run_config(a.run_file, a.overrides);
        model = c.model();
        survey = c.survey();
        opt = fix_survey_wide_options(c.propagator, model, survey);
        output_dir = a.output_dir.empty() ? c.output_dir : a.output_dir;
        config_text = c.record(a.overrides);
        spdlog::info("{}: {} x {} nodes, {} shots, {} samples of {:.3g} s", a.run_file, model.grid.nx, model.grid.nz,
                     survey.shots.size(), survey.nt, survey.dt);
    } else {
        opt.backend = parse_backend(a.backend);
        opt.precision = parse_precision(a.precision);
        opt.stencil_order = a.stencil;
        opt.cpml.widths = PmlWidths::uniform(a.pml);
        model = example_model();
        survey = example_survey();
        output_dir = a.output_dir.empty() ? "gprfwi-example" : a.output_dir;
        config_text = fmt::format("# built-in crosshole example; backend {}, precision {}, stencil {}, pml {}",
                                  a.backend, a.precision, a.stencil, a.pml);
        spdlog::info("built-in crosshole example: {} x {} nodes, dx = {} m, {} shots, {} samples of {:.3g} s",
                     model.grid.nx, model.grid.nz, model.grid.dx, survey.shots.size(), survey.nt, survey.dt);
    }
    auto prop = make_propagator(opt);
    const TimeStepping ts = plan_time_stepping(model, survey, opt.stencil_order, opt.allow_substeps);
    spdlog::info("backend {}, {} precision, stencil {}, CPML {}/{}/{}/{} cells; dt limit {:.4g} s, {} internal step(s) per sample",
                 prop->name(), to_string(opt.precision), opt.stencil_order, opt.cpml.widths.left, opt.cpml.widths.right,
                 opt.cpml.widths.top, opt.cpml.widths.bottom, ts.dt_max, ts.ratio);
    const auto t0 = std::chrono::steady_clock::now();
    const Traces traces = prop->forward(model, survey);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double peak = 0;
    for (const auto& t : traces)
        for (double v : t.samples()) peak = std::max(peak, std::abs(v));
    std::filesystem::create_directories(output_dir);
    const auto path = (std::filesystem::path(output_dir) / "synthetic.h5").string();
    write_traces_h5(path, survey, traces, config_text);
    const PaddedGrid g(model.grid, opt.cpml.widths);
    spdlog::info("forward modelling took {:.3f} s ({:.3g} cell-steps/s); peak |Ey| = {:.4g} V/m", seconds,
                 static_cast<double>(g.cells()) * ts.nt_internal * static_cast<double>(survey.shots.size()) / seconds, peak);
    spdlog::info("wrote {}", path);
}

}  // namespace

void add_forward_command(CLI::App& app) {
    auto args = std::make_shared<ForwardArgs>();
    CLI::App* cmd = app.add_subcommand(
        "forward", "Synthetic Ey traces of a run file, or of the built-in crosshole example, into OUTPUT/synthetic.h5");
    cmd->add_option("run_file", args->run_file, "Run file (YAML); without one, the built-in example");
    cmd->add_option("--set", args->overrides, "Override a run-file key: --set key.path=value (repeatable)");
    cmd->add_option("-o,--output", args->output_dir, "Output folder (overrides output.dir; example: gprfwi-example)");
    cmd->add_option("--precision", args->precision, "Built-in example: single | double")->capture_default_str();
    cmd->add_option("--backend", args->backend, "Built-in example: auto | cpu | cuda")->capture_default_str();
    cmd->add_option("--stencil", args->stencil, "Built-in example: stencil order 2, 4, 6 or 8")->capture_default_str();
    cmd->add_option("--pml", args->pml, "Built-in example: CPML width in cells")->capture_default_str();
    cmd->callback([args] { run_forward(*args); });
}

}  // namespace gprfwi::app
