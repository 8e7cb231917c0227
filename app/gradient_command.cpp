// `gprfwi gradient RUN.yaml`: the misfit of the run file's model against
// data.observed (HDF5 traces), and its exact gradient with respect to eps_r
// and sigma, into OUTPUT/gradient.h5 with an XDMF sidecar. Everything is read
// and checked before anything is written.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

struct GradientArgs {
    std::string run_file;
    std::vector<std::string> overrides;
    std::string output_dir;
};

void run_gradient(const GradientArgs& a) {
    const RunConfig c = load_run_config(a.run_file, a.overrides);
    if (c.observed.empty())
        throw ConfigError(fmt::format("{}: data.observed: the gradient command needs observed data (HDF5 traces)", c.file));
    // a relative data path is relative to the run file's folder
    std::filesystem::path observed_path(c.observed);
    if (observed_path.is_relative()) observed_path = std::filesystem::path(c.file).parent_path() / observed_path;
    const Model model = c.model();
    const Survey survey = c.survey();
    const Traces observed = read_traces_h5(observed_path.string(), survey);
    const PropagatorOptions opt = fix_survey_wide_options(c.propagator, model, survey);
    auto prop = make_propagator(opt);
    spdlog::info("{}: {} x {} nodes, {} shots, {} samples; observed data {}; backend {}", c.file, c.grid.nx, c.grid.nz,
                 survey.shots.size(), survey.nt, observed_path.string(), prop->name());
    const auto t0 = std::chrono::steady_clock::now();
    const GradientResult g = prop->gradient(model, survey, observed);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string dir = a.output_dir.empty() ? c.output_dir : a.output_dir;
    std::filesystem::create_directories(dir);
    const auto path = (std::filesystem::path(dir) / "gradient.h5").string();
    write_gradient_h5(path, c.grid, g.misfit, g.grad_eps_r, g.grad_sigma, c.record(a.overrides));
    const RunTimings& t = prop->last_timings();
    spdlog::info("misfit {:.6g}; gradient in {:.3f} s (set-up {:.3f}, forward {:.3f}, adjoint {:.3f}, host {:.3f})", g.misfit,
                 seconds, t.setup_s, t.forward_s, t.adjoint_s, t.other_s);
    spdlog::info("wrote {} and its .xdmf", path);
}

}  // namespace

void add_gradient_command(CLI::App& app) {
    auto a = std::make_shared<GradientArgs>();
    CLI::App* cmd = app.add_subcommand("gradient", "Misfit against data.observed and its gradient into OUTPUT/gradient.h5");
    cmd->add_option("run_file", a->run_file, "The run file (YAML)")->required();
    cmd->add_option("--set", a->overrides, "Override a key: --set key.path=value (repeatable)");
    cmd->add_option("-o,--output", a->output_dir, "Output folder (overrides output.dir)");
    cmd->callback([a] { run_gradient(*a); });
}

}  // namespace gprfwi::app
