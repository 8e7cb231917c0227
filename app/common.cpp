#include "common.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "gprfwi/parallel.hpp"

namespace gprfwi::app {

void add_run_options(CLI::App& cmd, RunArgs& args, bool run_file_required) {
    auto* opt = cmd.add_option("run_file", args.run_file, "Run file (YAML)");
    if (run_file_required) opt->required();
    cmd.add_option("--set", args.overrides, "Override a run-file key: --set key.path=value (repeatable)");
    cmd.add_option("-o,--output", args.output_dir, "Output folder (overrides output.dir)");
}

std::string output_dir(const RunArgs& args, const RunConfig& c) { return args.output_dir.empty() ? c.output_dir : args.output_dir; }

void make_output_dir(const std::string& dir) {
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) throw Error(fmt::format("{}: cannot create the output folder: {}", dir, ec.message()));
    });
}

void setup_logging(const std::string& level) {
    const parallel::Place& p = parallel::place();
    auto logger = spdlog::stderr_color_mt("gprfwi");
    if (p.size > 1)
        logger->set_pattern(fmt::format("[%H:%M:%S.%e] [rank {}] [%^%l%$] %v", p.rank));
    else
        logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    logger->set_level(p.rank == 0 ? spdlog::level::from_str(level) : spdlog::level::warn);
    spdlog::set_default_logger(logger);
}

std::string format_seconds(double s) {
    if (s < 60) return fmt::format("{:.3g} s", s);
    if (s < 3600) return fmt::format("{} min {:02} s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    return fmt::format("{} h {:02} min", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
}

}  // namespace gprfwi::app
