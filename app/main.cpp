// gprfwi: ground-penetrating-radar full-waveform inversion.
// Exit codes: 0 success; 2 bad usage or input; 3 stopped by SIGTERM/SIGUSR1
// (invert: resume with --resume); 1 any other failure.
// Runs alone or as `mpirun -np N gprfwi ...`: every rank reads the run file,
// shots are split over the ranks, rank 0 writes the outputs.

#include <malloc.h>

#include <csignal>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "common.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/parallel.hpp"

namespace {

/// Bad input rather than a failure of the run: exit code 2.
/// Reports an error once: from the root when every rank has it (a bad run
/// file), from each rank that has it when only some do.
void report(const std::exception& e) {
    using gprfwi::parallel::FailureScope;
    const bool everywhere = gprfwi::parallel::last_failure_scope() == FailureScope::all_ranks ||
                            (gprfwi::parallel::last_failure_scope() == FailureScope::none &&
                             dynamic_cast<const gprfwi::ConfigError*>(&e));
    if (gprfwi::parallel::is_root() || !everywhere) spdlog::error("{}", e.what());
}

}  // namespace

int main(int argc, char** argv) {
    // Blocks up to 32 MiB (a 2000 x 2000 model array) from the heap, and freed memory kept by the process:
    // each propagator call and inversion evaluation then reuses the last one's memory instead of faulting
    // in fresh pages, which cost a 1000 x 1000 inversion's evaluations about a tenth of their time
    // (docs/performance.md, "Whole calls").
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    // A file-size limit (ulimit -f, a quota) is an I/O error with the file's name, not a kill: writes past it
    // fail with EFBIG, the writer removes its temporary file and the file it was replacing stays whole.
    std::signal(SIGXFSZ, SIG_IGN);
    gprfwi::parallel::Session mpi(&argc, &argv);
    gprfwi::app::setup_logging("info");
    gprfwi::app::warn_if_threads_exceed_cores();
    CLI::App app{"gprfwi: 2D TM full-waveform inversion of ground-penetrating-radar data"};
    app.set_version_flag("--version", std::string("gprfwi ") + GPRFWI_VERSION + " (" + GPRFWI_REVISION + ")");
    app.require_subcommand(1);
    app.add_option_function<std::string>(
           "--log-level",
           [](const std::string& level) {
               if (gprfwi::parallel::is_root()) spdlog::set_level(spdlog::level::from_str(level));
           },
           "Log level of rank 0: trace, debug, info, warn, error, off (default info; other ranks log warnings)")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
        ->trigger_on_parse();
    gprfwi::app::add_forward_command(app);
    gprfwi::app::add_bench_command(app);
    gprfwi::app::add_check_command(app);
    gprfwi::app::add_gradient_command(app);
    gprfwi::app::add_info_command(app);
    gprfwi::app::add_invert_command(app);
    gprfwi::app::add_convert_command(app);
    gprfwi::app::add_tomography_command(app);
    gprfwi::app::add_born_command(app);
    gprfwi::app::add_hessian_command(app);
    try {
        app.parse(argc, argv);
        gprfwi::app::summarize_other_ranks_warnings();
    } catch (const CLI::ParseError& e) {
        const int code = gprfwi::parallel::is_root() ? app.exit(e) : e.get_exit_code();
        return code == 0 ? 0 : 2;
    } catch (const gprfwi::StopRequested& e) {
        if (gprfwi::parallel::is_root()) spdlog::warn("{}", e.what());
        return 3;
    } catch (const gprfwi::parallel::RemoteFailure& e) {
        if (gprfwi::parallel::is_root()) spdlog::error("{}", e.what());
        return 1;
    } catch (const std::exception& e) {
        report(e);
        return gprfwi::is_input_error(e) ? 2 : 1;
    }
    return 0;
}
