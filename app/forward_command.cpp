// `gprfwi forward`: synthetic traces of the built-in example (until run files
// arrive with the application issue), written as CSV.

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/example.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi::app {

namespace {

struct ForwardArgs {
    std::string output_dir = "gprfwi-example";
    std::string precision = "single";
    std::string backend = "auto";
    int stencil = 4;
    int pml = 20;
};

// Writes traces as CSV: one row per (shot, receiver), samples as columns.
// Written to a temporary name and renamed, so a file is never half-written.
void write_traces_csv(const std::filesystem::path& path, const Survey& survey, const Traces& traces) {
    const auto tmp = std::filesystem::path(path.string() + ".tmp");
    {
        std::ofstream out(tmp);
        if (!out) throw Error(fmt::format("cannot write {}", tmp.string()));
        out << "# Ey traces in V/m; sample n at t = (n + 1) * dt, dt = " << fmt::format("{:.9g}", survey.dt) << " s\n";
        out << "shot,receiver,x_m,z_m";
        for (int n = 0; n < survey.nt; ++n) out << ",s" << n;
        out << "\n";
        for (std::size_t s = 0; s < traces.size(); ++s)
            for (int r = 0; r < traces[s].n_receivers(); ++r) {
                const Position& p = survey.shots[s].receivers[r];
                out << s << ',' << r << ',' << p.x << ',' << p.z;
                for (int n = 0; n < survey.nt; ++n) out << ',' << fmt::format("{:.9g}", traces[s](r, n));
                out << "\n";
            }
        if (!out) throw Error(fmt::format("error while writing {}", tmp.string()));
    }
    std::filesystem::rename(tmp, path);
}

void run_forward(const ForwardArgs& a) {
    PropagatorOptions opt;
    opt.backend = parse_backend(a.backend);
    opt.precision = parse_precision(a.precision);
    opt.stencil_order = a.stencil;
    opt.cpml.widths = PmlWidths::uniform(a.pml);
    const Model model = example_model();
    const Survey survey = example_survey();
    auto prop = make_propagator(opt);
    const TimeStepping ts = plan_time_stepping(model, survey, opt.stencil_order, opt.allow_substeps);
    spdlog::info("built-in crosshole example: {} x {} nodes, dx = {} m, {} shots, {} samples of {:.3g} s",
                 model.grid.nx, model.grid.nz, model.grid.dx, survey.shots.size(), survey.nt, survey.dt);
    spdlog::info("backend {}, {} precision, stencil {}, CPML {} cells; dt limit {:.4g} s, {} internal step(s) per sample",
                 prop->name(), to_string(opt.precision), opt.stencil_order, a.pml, ts.dt_max, ts.ratio);
    const auto t0 = std::chrono::steady_clock::now();
    const Traces traces = prop->forward(model, survey);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double peak = 0;
    for (const auto& t : traces)
        for (double v : t.samples()) peak = std::max(peak, std::abs(v));
    std::filesystem::create_directories(a.output_dir);
    const auto path = std::filesystem::path(a.output_dir) / "synthetic.csv";
    write_traces_csv(path, survey, traces);
    const double cells = static_cast<double>(model.grid.nx + 2 * a.pml) * (model.grid.nz + 2 * a.pml);
    spdlog::info("forward modelling took {:.3f} s ({:.3g} cell-steps/s); peak |Ey| = {:.4g} V/m",
                 seconds, cells * ts.nt_internal * survey.shots.size() / seconds, peak);
    spdlog::info("wrote {}", path.string());
}

}  // namespace

void add_forward_command(CLI::App& app) {
    auto args = std::make_shared<ForwardArgs>();
    CLI::App* cmd = app.add_subcommand("forward", "Synthetic Ey traces of the built-in crosshole example");
    cmd->add_option("-o,--output", args->output_dir, "Output folder")->capture_default_str();
    cmd->add_option("--precision", args->precision, "single | double")->capture_default_str();
    cmd->add_option("--backend", args->backend, "auto | cpu | cuda")->capture_default_str();
    cmd->add_option("--stencil", args->stencil, "Stencil order: 2, 4, 6 or 8")->capture_default_str();
    cmd->add_option("--pml", args->pml, "CPML width in cells on every side")->capture_default_str();
    cmd->callback([args] { run_forward(*args); });
}

}  // namespace gprfwi::app
