#include "common.hpp"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "gprfwi/distributed.hpp"
#include "gprfwi/files.hpp"
#include "gprfwi/parallel.hpp"

namespace gprfwi::app {

void add_run_options(CLI::App& cmd, RunArgs& args, bool run_file_required) {
    auto* opt = cmd.add_option("run_file", args.run_file, "Run file (YAML)");
    if (run_file_required) opt->required();
    cmd.add_option("--set", args.overrides, "Override a run-file key: --set key.path=value (repeatable)");
    cmd.add_option("-o,--output", args.output_dir, "Output folder (overrides output.dir)");
}

RunConfig load_run_file(const RunArgs& args) {
    RunConfig c = load_run_config(args.run_file, args.overrides);
    if (!args.output_dir.empty()) c.output_dir = args.output_dir;
    return c;
}

Campaign load_campaign_file(const RunArgs& args) {
    Campaign c = load_campaign(args.run_file, args.overrides);
    if (!args.output_dir.empty()) c.run.output_dir = args.output_dir;
    return c;
}

void make_output_dir(const std::string& dir, const std::string& largest_name, std::uint64_t largest_bytes) {
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) throw Error(fmt::format("{}: cannot create the output folder: {}", dir, ec.message()));
        if (!largest_name.empty()) check_room_for((std::filesystem::path(dir) / largest_name).string(), largest_bytes);
    });
}

void warn_if_threads_exceed_cores() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    const int cores = CPU_COUNT(&allowed), threads = omp_get_max_threads();
    if (threads <= cores) return;
    spdlog::warn("{} OpenMP threads, but this process may run on {} core{} only (its CPU affinity, which mpirun "
                 "sets: by default one core a rank for up to two ranks), so the threads share {}: the host's work "
                 "runs at a fraction of its speed. Give each rank its cores (mpirun --bind-to none, or --map-by "
                 "slot:PE={}; srun --cpus-per-task={}) or set OMP_NUM_THREADS={}",
                 threads, cores, cores == 1 ? "" : "s", cores == 1 ? "it" : "them", threads, threads, cores);
}

namespace {
// warnings and errors of the other ranks, kept for the summary on rank 0
std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> g_kept;
}  // namespace

void setup_logging(const std::string& level) {
    const parallel::Place& p = parallel::place();
    auto logger = spdlog::stderr_color_mt("gprfwi");
    if (p.rank != 0) {
        g_kept = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
        g_kept->set_level(spdlog::level::warn);
        g_kept->set_pattern(fmt::format("rank {}: %v", p.rank));
        logger->sinks().push_back(g_kept);
    }
    if (p.size > 1)
        logger->set_pattern(fmt::format("[%H:%M:%S.%e] [rank {}] [%^%l%$] %v", p.rank));
    else
        logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    logger->set_level(p.rank == 0 ? spdlog::level::from_str(level) : spdlog::level::warn);
    spdlog::set_default_logger(logger);
}

void summarize_other_ranks_warnings() {
    std::string mine;
    if (g_kept)
        for (const std::string& line : g_kept->last_formatted()) mine += line;  // each ends with a newline
    const auto all = parallel::gather(mine);
    if (!parallel::is_root()) return;
    std::string text;
    for (const auto& t : all) text += t;
    if (text.empty()) return;
    spdlog::warn("warnings from the other ranks (also printed as they happened):\n{}", text);
}

std::function<void(const char*, int, int)> make_progress_display() {
    if (!parallel::is_root() || spdlog::get_level() > spdlog::level::info) return {};
    const bool tty = isatty(STDERR_FILENO) != 0;
    auto last_quarter = std::make_shared<int>(-1);
    return [tty, last_quarter](const char* phase, int done, int total) {
        const int percent = total > 0 ? static_cast<int>(100.0 * done / total) : 100;
        if (tty) {
            const int width = 30, filled = percent * width / 100;
            std::fprintf(stderr, "\r  %-8s [%s%s] %3d%%", phase, std::string(static_cast<std::size_t>(filled), '#').c_str(),
                         std::string(static_cast<std::size_t>(width - filled), '.').c_str(), percent);
            if (done == total) std::fprintf(stderr, "\n");
            std::fflush(stderr);
            return;
        }
        const int quarter = percent / 25;
        if (done == 0 || quarter == *last_quarter) return;
        *last_quarter = done == total ? -1 : quarter;
        spdlog::info("  {} time loop: {}% ({} of {} steps)", phase, percent, done, total);
    };
}

std::string format_seconds(double s) {
    if (s < 60) return fmt::format("{:.3g} s", s);
    if (s < 3600) return fmt::format("{} min {:02} s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    return fmt::format("{} h {:02} min", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
}

WorkspaceAhead::WorkspaceAhead(DistributedRunner& runner, const Model& model, bool gradient)
    : start_(std::chrono::steady_clock::now()) {
    made_ = std::async(std::launch::async, [this, &runner, &model, gradient] {
        runner.reserve(model, gradient);  // (noexcept: an error is left to the call, which meets it again)
        seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    });
}

WorkspaceAhead::~WorkspaceAhead() {
    if (made_.valid()) made_.wait();
}

double WorkspaceAhead::wait() {
    if (made_.valid()) made_.get();
    return seconds_;
}

}  // namespace gprfwi::app
