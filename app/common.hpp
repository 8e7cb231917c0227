#pragma once
// What the run-file commands share: their common options, loading the run
// file on every rank, logging, and the output folder.

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gprfwi/config.hpp"

namespace gprfwi::app {

struct RunArgs {
    std::string run_file;
    std::vector<std::string> overrides;  // --set key.path=value
    std::string output_dir;              // --output, overrides output.dir
};

/// Adds RUN.yaml (required or not), --set and --output to a command.
void add_run_options(CLI::App& cmd, RunArgs& args, bool run_file_required);

/// The run file with --set applied and --output, where given, as its
/// output.dir: the folder the command writes to, and what a run records as
/// resolved (RunConfig::record).
RunConfig load_run_file(const RunArgs& args);
/// The same for a campaign.
Campaign load_campaign_file(const RunArgs& args);

/// Creates the output folder on the root rank (after the inputs are known
/// good), collectively, so every rank learns if it failed; and, before any
/// computation, checks that the folder has room for `largest_bytes` in a
/// file named `largest_name` (free space, quota, file-size limit;
/// traces_file_bytes and grid_file_bytes of gprfwi/hdf5_io.hpp).
void make_output_dir(const std::string& dir, const std::string& largest_name = {}, std::uint64_t largest_bytes = 0);

/// Logging: rank 0 logs at `level`; other ranks log warnings and errors only,
/// each line tagged with the rank.
void setup_logging(const std::string& level);

/// Collective, at the end of a command: rank 0 lists the warnings and errors
/// the other ranks logged (each rank keeps its last 64).
void summarize_other_ranks_warnings();

/// Warns when OpenMP would run more threads than this process's CPU
/// affinity allows cores (mpirun binds each of up to two ranks to one core
/// by default): the threads would share them and the host's parallel work
/// (the inversion driver, the CPU backend) would crawl.
void warn_if_threads_exceed_cores();

/// A progress display for the time loops (PropagatorOptions::progress), on
/// rank 0 only (empty elsewhere): a bar redrawn in place on an interactive
/// terminal, plain lines at every 25% in a batch log.
std::function<void(const char*, int, int)> make_progress_display();

/// Makes the runner's workspace for `model` (DistributedRunner::reserve) on
/// a thread of its own from construction on, so that the command's first
/// call finds it made: the command reads its data (and starts PETSc)
/// meanwhile. Destruction waits for it, also where that reading throws.
class WorkspaceAhead {
public:
    WorkspaceAhead(DistributedRunner& runner, const Model& model, bool gradient);
    ~WorkspaceAhead();
    WorkspaceAhead(const WorkspaceAhead&) = delete;
    WorkspaceAhead& operator=(const WorkspaceAhead&) = delete;
    /// Waits for the workspace; the seconds from construction to its end.
    double wait();

private:
    std::chrono::steady_clock::time_point start_;
    double seconds_ = 0;
    std::future<void> made_;
};

/// "12.3 s", "4 min 05 s".
std::string format_seconds(double s);

}  // namespace gprfwi::app
