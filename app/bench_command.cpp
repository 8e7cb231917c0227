// `gprfwi bench`: cell-steps per second of forward or gradient runs, next to the
// memory bandwidth of this machine measured in the same run (a parallel copy),
// so the result reads as a fraction of the machine's limit.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <omp.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/wavelet.hpp"

namespace gprfwi::app {

namespace {

struct BenchArgs {
    std::string backend = "cpu";
    std::string mode = "forward";
    std::string precision = "single";
    std::string compression = "none";
    std::string storage = "auto";
    int nx = 1000, nz = 1000, pml = 20, shots = 1, nt = 200, stencil = 4, repeats = 3, interval = 1, checkpoint = 0, binomial = 0;
    int check_every = PropagatorOptions{}.blowup_check_interval;
    int shot_groups = 0;
};

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best-of-5 bandwidth of a parallel copy of 1 GiB into another 1 GiB, far larger than
// any cache (bytes read + bytes written per second).
double host_copy_bandwidth() {
    const std::size_t n = (std::size_t{1} << 30) / sizeof(double);
    std::vector<double> a(n), b(n);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<double>(i % 7), b[i] = 0;
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
        const double t0 = now_s();
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) b[i] = a[i];
        const double t = now_s() - t0;
        best = std::max(best, 2.0 * n * sizeof(double) / t);
        std::swap(a, b);
    }
    return best;
}

// Fewest bytes a cell-step must move through memory in these kernels.
// CPU (coefficients re-read per shot): forward 12 arrays of T (H pass: Ey, Hx,
// Hz, cq in, Hx, Hz out; E pass: Hx, Hz, Ey, ca, cb in, Ey out); the gradient
// adds the kept level, the imaging (lambda_ey and 2 kept levels in, 2 double
// accumulators per node, shared by the shots, in and out) and the three
// adjoint passes (16 arrays of T and the coefficients).
// CUDA (coefficients read once per node for all shots): the forward step
// reads Ey, Hx, Hz and writes them once (6 arrays of T) plus ca, cb and, in a
// magnetic model, cq (2 or 3 per shots; the CPML frame's memories and
// scratch are left out); the adjoint step likewise its lambdas (6 plus the
// same coefficients) and the imaging reads lambda_ey once more; uncompressed
// kept levels are the forward's Ey itself (written once, read twice). With
// the imaging in pairs of steps (RunTimings::imaging_steps), a level is read
// 1.5 times and the accumulators move once for two steps. Forward steps in
// pairs (RunTimings::forward_paired_share of the nodes) read and write the
// three fields and the coefficients once for two steps, and write Ey of the
// step between. A batch in shot groups (RunTimings::shot_groups) reads the
// coefficients and moves the accumulators once a group.
double bytes_per_cell_step(bool cuda, bool gradient, std::size_t word, std::size_t stored, int shots, int groups,
                           bool uniform_mu, bool paired_imaging, double paired_share) {
    const double per_shot = static_cast<double>(groups) / shots;  // what a group moves once, a shot's share
    const double coef = cuda ? (uniform_mu ? 2.0 : 3.0) * per_shot : 3.0;  // ca, cb (, cq): per group, or shot
    const double one = (cuda ? 6.0 : 9.0) * word + coef * word, pair = (7.0 + coef) * word / 2.0;
    const double forward = paired_share * pair + (1.0 - paired_share) * one;
    if (!gradient) return forward;
    const double adjoint = (cuda ? 7.0 : 17.0) * word + coef * word;
    const double reads = paired_imaging ? 1.5 : 2.0, steps = paired_imaging ? 2.0 : 1.0;
    const double level = (cuda && stored == word ? reads : 1.0 + reads) * stored;
    return forward + adjoint + level + 4.0 * 8.0 * per_shot / steps;
}

void run_bench(const BenchArgs& a) {
    const bool gradient = a.mode == "gradient";
    if (!gradient && a.mode != "forward")
        throw InvalidArgument(fmt::format("--mode must be 'forward' or 'gradient', got '{}'", a.mode));
    PropagatorOptions opt;
    opt.backend = parse_backend(a.backend);
    opt.precision = parse_precision(a.precision);
    opt.stencil_order = a.stencil;
    opt.cpml.widths = PmlWidths::uniform(a.pml);
    opt.snapshots.compression = parse_compression(a.compression);
    opt.snapshots.interval = a.interval;
    opt.snapshots.storage = parse_storage(a.storage);
    opt.snapshots.checkpoint_steps = a.checkpoint;
    opt.snapshots.binomial_slots = a.binomial;
    opt.blowup_check_interval = a.check_every;
    opt.shot_groups = a.shot_groups;
    auto prop = make_propagator(opt);
    const bool cuda = prop->name().rfind("cuda", 0) == 0;

    const Grid grid{a.nx, a.nz, 0.01, 0.01};
    Model model = Model::uniform(grid, 9.0, 0.005);
    Survey survey;
    const double v = speed_of_light() / 3.0;
    survey.dt = 0.9 / (v * std::sqrt(2.0) / grid.dx * stencil_abs_sum(a.stencil));
    survey.nt = a.nt;
    for (int s = 0; s < a.shots; ++s) {
        Shot shot;
        const double x = grid.width_m() * (s + 1) / (a.shots + 1);
        shot.sources.push_back({{x, 0.1 * grid.depth_m()}, 1.0});
        for (int r = 0; r < 16; ++r) shot.receivers.push_back({grid.width_m() * r / 15.0, 0.1 * grid.depth_m()});
        shot.wavelet = ricker(a.nt, survey.dt, 0.1 / survey.dt, -1.0, 1.0);
        survey.shots.push_back(shot);
    }
    const MemoryEstimate mem = prop->estimate_memory(model, survey, gradient);
    const double bandwidth = cuda ? cuda_copy_bandwidth() : host_copy_bandwidth();
    const Traces observed = make_traces(survey);

    auto run_once = [&] {
        if (gradient) prop->gradient(model, survey, observed);
        else prop->forward(model, survey);
    };
    run_once();  // warm-up: page faults and first-touch out of the timing
    std::vector<double> times, calls;
    for (int r = 0; r < a.repeats; ++r) {
        const double t0 = now_s();
        run_once();
        calls.push_back(now_s() - t0);
        times.push_back(prop->last_timings().forward_s + prop->last_timings().adjoint_s);
    }
    std::sort(times.begin(), times.end());
    std::sort(calls.begin(), calls.end());
    const double seconds = times[times.size() / 2], call_seconds = calls[calls.size() / 2];
    const double cells = static_cast<double>(a.nx + 2 * a.pml) * (a.nz + 2 * a.pml);
    const double rate = cells * a.shots * a.nt / seconds;
    const std::size_t word = opt.precision == Precision::single ? 4 : 8;
    const auto compression = opt.snapshots.compression;
    const std::size_t stored = compression == SnapshotCompression::bf16 ? 2 : compression == SnapshotCompression::fp8 ? 1 : word;
    // fp8 levels read Ey twice more (max, then quantise) before they are stored
    const bool paired = prop->last_timings().imaging_steps == 2;
    const double paired_share = prop->last_timings().forward_paired_share;
    const int groups = prop->last_timings().shot_groups;
    const double bytes = bytes_per_cell_step(cuda, gradient, word, stored, a.shots, groups, /*uniform_mu=*/true,
                                             paired, paired_share) +
                         (gradient && compression == SnapshotCompression::fp8 ? 2.0 * word : 0.0);
    const double fused_roofline = bandwidth / (gradient ? 2 * 36.0 : 36.0);  // the fused-kernel yardstick
    const double achieved = rate * bytes;
    fmt::print("gprfwi bench: {} {} on {} ({} threads), {} precision, stencil {}, snapshots {}\n", a.mode,
               prop->name(), a.backend, omp_get_max_threads(), a.precision, a.stencil, a.compression);
    fmt::print("  grid {} x {} + CPML {} = {:.0f} cells, {} shot(s) in {} shot group(s), {} steps; median of {} runs: "
               "{:.3f} s in the time loops ({:.3f} s per call with set-up and host work)\n",
               a.nx, a.nz, a.pml, cells, a.shots, groups, a.nt, a.repeats, seconds, call_seconds);
    fmt::print("  {:.4g} cell-steps/s; at {:.0f} bytes/cell-step that is {:.3g} GB/s of the {:.3g} GB/s copy "
               "bandwidth measured now ({:.0f}%)\n",
               rate, bytes, achieved / 1e9, bandwidth / 1e9, 100.0 * achieved / bandwidth);
    fmt::print("  {:.1f}% of the fused-kernel roofline (36 bytes per cell-step and direction: {:.4g} cell-steps/s)\n",
               100.0 * rate / fused_roofline, fused_roofline);
    if (gradient)
        fmt::print("  kept forward levels in {}{}\n", prop->last_timings().level_storage,
                   paired ? "; imaging condition in pairs of adjoint steps" : "");
    if (paired_share > 0)
        fmt::print("  two steps a pass over the fields at {:.0f}% of the nodes (step pairs)\n", 100 * paired_share);
    fmt::print("  memory estimate {:.3g} GiB (fields {:.3g}, snapshots {:.3g}); peak on the device {:.3g} GiB\n",
               mem.total() / 1073741824.0, mem.fields_bytes / 1073741824.0, mem.snapshot_bytes / 1073741824.0,
               prop->peak_device_bytes() / 1073741824.0);
    fmt::print("{{\"backend\":\"{}\",\"mode\":\"{}\",\"precision\":\"{}\",\"stencil\":{},\"compression\":\"{}\","
               "\"nx\":{},\"nz\":{},\"pml\":{},\"shots\":{},\"nt\":{},\"threads\":{},\"seconds\":{:.6g},"
               "\"cell_steps_per_s\":{:.6g},\"bytes_per_cell_step\":{:.0f},\"achieved_bytes_per_s\":{:.6g},"
               "\"copy_bandwidth_bytes_per_s\":{:.6g},\"fraction_of_bandwidth\":{:.4f},\"fraction_of_fused_roofline\":{:.4f},"
               "\"call_seconds\":{:.6g},\"interval\":{},\"storage\":\"{}\",\"level_storage\":\"{}\",\"imaging_steps\":{},"
               "\"forward_paired_share\":{:.4f},\"shot_groups\":{},\"peak_device_bytes\":{},\"peak_bytes\":{}}}\n",
               prop->name(), a.mode, a.precision, a.stencil, a.compression, a.nx, a.nz, a.pml, a.shots, a.nt,
               omp_get_max_threads(), seconds, rate, bytes, achieved, bandwidth, achieved / bandwidth,
               rate / fused_roofline, call_seconds, a.interval, a.storage, prop->last_timings().level_storage,
               prop->last_timings().imaging_steps, paired_share, groups, prop->peak_device_bytes(), mem.total());
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    CLI::App* cmd = app.add_subcommand("bench", "Measure cell-steps per second against memory bandwidth");
    cmd->add_option("--backend", a->backend, "auto | cpu | cuda")->capture_default_str();
    cmd->add_option("--mode", a->mode, "forward | gradient")->capture_default_str();
    cmd->add_option("--precision", a->precision, "single | double")->capture_default_str();
    cmd->add_option("--compression", a->compression, "Snapshot storage type: none | bf16 | fp8")->capture_default_str();
    cmd->add_option("--storage", a->storage, "Where a GPU keeps forward levels: auto | device | host | disk")
        ->capture_default_str();
    cmd->add_option("--interval", a->interval, "Keep every k-th forward level (0: automatic)")->capture_default_str();
    cmd->add_option("--binomial", a->binomial,
                    "Exact gradient by binomial checkpointing with S saved states (0: off, -1: ceil(log2 nt))");
    cmd->add_option("--checkpoint", a->checkpoint,
                    "Exact gradient from checkpoints every C steps (0: keep every level, -1: automatic C)")
        ->capture_default_str();
    cmd->add_option("--nx", a->nx, "Model nodes in x")->capture_default_str();
    cmd->add_option("--nz", a->nz, "Model nodes in z")->capture_default_str();
    cmd->add_option("--pml", a->pml, "CPML cells per side")->capture_default_str();
    cmd->add_option("--shots", a->shots, "Shots in the batch")->capture_default_str();
    cmd->add_option("--nt", a->nt, "Time steps")->capture_default_str();
    cmd->add_option("--stencil", a->stencil, "Stencil order")->capture_default_str();
    cmd->add_option("--repeats", a->repeats, "Timed runs (median reported)")->capture_default_str();
    cmd->add_option("--shot-groups", a->shot_groups,
                    "Run the shots as this many groups, on a GPU at once (0: automatic)")
        ->capture_default_str();
    cmd->add_option("--check-every", a->check_every, "Check the fields for NaN/Inf every N steps (0: first and last only)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->callback([a] { run_bench(*a); });
}

}  // namespace gprfwi::app
