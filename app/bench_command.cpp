// `gprfwi bench`: cell-steps per second of whole forward or gradient calls
// from a warm process (and of their time loops), next to the memory bandwidth
// of this machine measured in the same run, so the result reads as a fraction
// of the machine's limit; or (--mode inversion) seconds per iteration and the
// inversion efficiency of a real campaign; or (--mode born | hessian) whole
// Born calls or Hessian-vector products beside gradient calls of the same
// batch, as the ratio of their times and of their peak device memory.

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <omp.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/parallel.hpp"
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
    ModelComparison model_comparison = ModelComparison::automatic;
    CudaTuning cuda;
    int iterations = 5;
    bool gauss_newton = false;
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

/// The bench's batch: a.shots shots on a.nx x a.nz nodes of 1 cm, spread
/// along a line at a tenth of the depth, each with 16 receivers on that
/// line, Ricker wavelets, dt at 0.9 of the CFL limit of eps_r `fastest`.
Survey bench_survey(const BenchArgs& a, const Grid& grid, double fastest) {
    Survey survey;
    const double v = speed_of_light() / std::sqrt(fastest);
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
    return survey;
}

PropagatorOptions bench_options(const BenchArgs& a) {
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
    opt.model_comparison = a.model_comparison;
    opt.cuda = a.cuda;
    return opt;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// Forward or gradient calls of one propagator from a warm process: the
/// first call (which makes the workspace) is left out, the median of the
/// others reported, whole calls first and their time loops beside them.
void run_calls(const BenchArgs& a) {
    const bool gradient = a.mode == "gradient";
    const PropagatorOptions opt = bench_options(a);
    auto prop = make_propagator(opt);
    const bool cuda = prop->name().rfind("cuda", 0) == 0;
    const Grid grid{a.nx, a.nz, 0.01, 0.01};
    const Model model = Model::uniform(grid, 9.0, 0.005);
    const Survey survey = bench_survey(a, grid, 9.0);
    const MemoryEstimate mem = prop->estimate_memory(model, survey, gradient);
    const double bandwidth = cuda ? cuda_copy_bandwidth() : host_copy_bandwidth();
    const Traces observed = make_traces(survey);

    auto run_once = [&] {
        if (gradient) prop->gradient(model, survey, observed);
        else prop->forward(model, survey);
    };
    const double first0 = now_s();
    run_once();  // the first call: the workspace, page faults and first touch
    const double first_call = now_s() - first0;
    const RunTimings first = prop->last_timings();
    std::vector<double> loops, calls, setups, builds, hosts;
    for (int r = 0; r < a.repeats; ++r) {
        const double t0 = now_s();
        run_once();
        calls.push_back(now_s() - t0);
        const RunTimings& t = prop->last_timings();
        loops.push_back(t.forward_s + t.adjoint_s);
        setups.push_back(t.setup_s);
        builds.push_back(t.build_s);
        hosts.push_back(t.other_s);
    }
    const double loop_s = median(loops), call_s = median(calls), overhead = call_s - loop_s;
    const double cells = static_cast<double>(a.nx + 2 * a.pml) * (a.nz + 2 * a.pml);
    const double work = cells * a.shots * a.nt;
    const double rate = work / call_s, loop_rate = work / loop_s;
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
    const double limit = bandwidth / bytes;  // cell-steps/s at the copy bandwidth
    const double fused_roofline = bandwidth / (gradient ? 2 * 36.0 : 36.0);  // the fused-kernel yardstick
    fmt::print("gprfwi bench: {} {} on {} ({} threads), {} precision, stencil {}, snapshots {}\n", a.mode,
               prop->name(), a.backend, omp_get_max_threads(), a.precision, a.stencil, a.compression);
    fmt::print("  grid {} x {} + CPML {} = {:.0f} cells, {} shot(s) in {} shot group(s), {} steps; median of {} "
               "warm calls\n",
               a.nx, a.nz, a.pml, cells, a.shots, groups, a.nt, a.repeats);
    fmt::print("  whole call: {:.4g} cell-steps/s ({:.3f} s a call), {:.0f}% of the {:.4g} cell-steps/s that the copy "
               "bandwidth allows at {:.0f} bytes/cell-step\n",
               rate, call_s, 100.0 * rate / limit, limit, bytes);
    fmt::print("  in a call: set-up {:.4f} s (on the host {:.4f} s), time loops {:.3f} s, host work {:.4f} s; overhead "
               "(call - loops) {:.4f} s = {:.1f}% of the call\n",
               median(setups), median(builds), loop_s, median(hosts), overhead, 100.0 * overhead / call_s);
    fmt::print("  the first call (which makes the workspace): {:.3f} s; set-up {:.4f} s (on the host {:.4f} s), time "
               "loops {:.3f} s, host work {:.4f} s\n",
               first_call, first.setup_s, first.build_s, first.forward_s + first.adjoint_s, first.other_s);
    fmt::print("  time loops alone: {:.4g} cell-steps/s, {:.3g} GB/s of the {:.3g} GB/s copy bandwidth measured now "
               "({:.0f}%), {:.1f}% of the fused-kernel roofline\n",
               loop_rate, loop_rate * bytes / 1e9, bandwidth / 1e9, 100.0 * loop_rate / limit,
               100.0 * loop_rate / fused_roofline);
    if (gradient)
        fmt::print("  kept forward levels in {}{}\n", prop->last_timings().level_storage,
                   paired ? "; imaging condition in pairs of adjoint steps" : "");
    if (paired_share > 0)
        fmt::print("  two steps a pass over the fields at {:.0f}% of the nodes (step pairs)\n", 100 * paired_share);
    fmt::print("  memory estimate {:.3g} GiB (fields {:.3g}, snapshots {:.3g}); peak on the device {:.3g} GiB\n",
               mem.total() / 1073741824.0, mem.fields_bytes / 1073741824.0, mem.snapshot_bytes / 1073741824.0,
               prop->peak_device_bytes() / 1073741824.0);
    fmt::print("{{\"backend\":\"{}\",\"mode\":\"{}\",\"precision\":\"{}\",\"stencil\":{},\"compression\":\"{}\","
               "\"nx\":{},\"nz\":{},\"pml\":{},\"shots\":{},\"nt\":{},\"threads\":{},"
               "\"cell_steps_per_s\":{:.6g},\"call_seconds\":{:.6g},\"overhead_seconds\":{:.6g},"
               "\"loop_cell_steps_per_s\":{:.6g},\"seconds\":{:.6g},\"setup_seconds\":{:.6g},\"build_seconds\":{:.6g},"
               "\"host_seconds\":{:.6g},"
               "\"first_call_seconds\":{:.6g},\"bytes_per_cell_step\":{:.0f},\"copy_bandwidth_bytes_per_s\":{:.6g},"
               "\"fraction_of_bandwidth\":{:.4f},\"loop_fraction_of_bandwidth\":{:.4f},"
               "\"fraction_of_fused_roofline\":{:.4f},\"interval\":{},\"storage\":\"{}\",\"level_storage\":\"{}\","
               "\"imaging_steps\":{},\"forward_paired_share\":{:.4f},\"shot_groups\":{},\"peak_device_bytes\":{},"
               "\"peak_bytes\":{}}}\n",
               prop->name(), a.mode, a.precision, a.stencil, a.compression, a.nx, a.nz, a.pml, a.shots, a.nt,
               omp_get_max_threads(), rate, call_s, overhead, loop_rate, loop_s, median(setups), median(builds), median(hosts),
               first_call, bytes, bandwidth, rate / limit, loop_rate / limit, loop_rate / fused_roofline, a.interval,
               a.storage, prop->last_timings().level_storage, prop->last_timings().imaging_steps, paired_share, groups,
               prop->peak_device_bytes(), mem.total());
}

/// Adds up the time loops of an objective's evaluations (DistributedRunner::timings).
class TimedObjective final : public InversionObjective {
public:
    TimedObjective(InversionObjective& inner, const DistributedRunner& runner) : inner_(inner), runner_(runner) {}
    double evaluate(const Model& m, const StageSpec& stage, Array2D& ge, Array2D& gs) override {
        const double t0 = now_s();
        const double j = inner_.evaluate(m, stage, ge, gs);
        count(now_s() - t0);
        return j;
    }
    double evaluate_with_illumination(const Model& m, const StageSpec& stage, Array2D& ge, Array2D& gs,
                                      Array2D& illumination) override {
        const double t0 = now_s();
        const double j = inner_.evaluate_with_illumination(m, stage, ge, gs, illumination);
        count(now_s() - t0);
        return j;
    }
    std::vector<double> estimate_wavelet(const Model& m, double water_level) override {
        return inner_.estimate_wavelet(m, water_level);
    }
    void set_wavelet(const std::vector<double>& w) override { inner_.set_wavelet(w); }
    double wavelet_dt() const override { return inner_.wavelet_dt(); }
    int evaluation_propagations(const StageSpec& stage) const override { return inner_.evaluation_propagations(stage); }
    std::vector<double> projected_wavelet(const Model& m, const StageSpec& stage) override {
        return inner_.projected_wavelet(m, stage);
    }
    int evaluations = 0;
    double call_seconds = 0;   // the evaluations, whole
    double loop_seconds = 0;   // ... their time loops
    double setup_seconds = 0;  // ... the propagator's set-up
    double build_seconds = 0;  // ... of which on the host
    double host_seconds = 0;   // ... the propagator's host work (misfit, chain rule)

private:
    void count(double seconds) {
        const RunTimings& t = runner_.timings();
        ++evaluations;
        call_seconds += seconds;
        loop_seconds += t.forward_s + t.adjoint_s;
        setup_seconds += t.setup_s;
        build_seconds += t.build_s;
        host_seconds += t.other_s;
    }
    InversionObjective& inner_;
    const DistributedRunner& runner_;
};

/// A real campaign, timed: `iterations` iterations of one eps_r and sigma
/// stage of TAO's bounded L-BFGS on the bench's batch over the ranks, from
/// the uniform model to data of a model with a wet and a dry anomaly.
/// Inversion efficiency = the evaluations' time loops / the campaign's wall
/// time (rank 0's loops: every rank runs its share at once).
void run_inversion(const BenchArgs& a) {
    const PropagatorOptions base = bench_options(a);
    const Grid grid{a.nx, a.nz, 0.01, 0.01};
    const Model start = Model::uniform(grid, 9.0, 0.005);
    Model truth = start;
    for (int iz = 0; iz < grid.nz; ++iz)
        for (int ix = 0; ix < grid.nx; ++ix) {
            auto blob = [&](double fx, double fz, double r) {
                const double dx = (ix - fx * grid.nx) / (r * grid.nx), dz = (iz - fz * grid.nz) / (r * grid.nz);
                return std::exp(-(dx * dx + dz * dz));
            };
            truth.eps_r(iz, ix) += 3.0 * blob(0.35, 0.5, 0.1) - 2.0 * blob(0.7, 0.6, 0.08);
            truth.sigma(iz, ix) += 0.01 * blob(0.35, 0.5, 0.1);
        }
    // dt for the least eps_r the bounds allow, so that no model of the campaign needs sub-steps (which
    // would change its number of steps, and so its memory, from one evaluation to the next)
    InversionSpec spec;
    spec.eps_r_min = 4.0;
    spec.eps_r_max = 30.0;
    spec.save_models = false;
    const Survey survey = bench_survey(a, grid, spec.eps_r_min);
    const PropagatorOptions opt = fix_survey_wide_options(base, start, survey);
    // what a campaign that names only data, survey, start and bounds gets (inversion.hpp, "auto")
    const double wavelength = dominant_wavelength(start, dominant_frequency(survey.shots.front().wavelet, survey.dt));
    const AutomaticSettings automatic = automatic_settings(wavelength, grid);
    spec.smoothing_m = automatic.smoothing_eps_r_m;
    spec.smoothing_sigma_m = automatic.smoothing_sigma_m;
    spec.regularize_eps_r.tv = spec.regularize_sigma.tv = automatic.total_variation;
    spec.taper_radius_m = automatic.taper_radius_m;
    for (const Shot& shot : survey.shots) {
        for (const auto& s : shot.sources) spec.taper_points.push_back(s.position);
        spec.taper_points.insert(spec.taper_points.end(), shot.receivers.begin(), shot.receivers.end());
    }
    DistributedRunner runner(survey, opt, 0);
    Traces observed = runner.forward(truth);  // this rank's shots
    FwiObjective fwi(runner, std::move(observed), spec.misfit, spec.wavelet_water_level);
    TimedObjective objective(fwi, runner);
    StageSpec stage;
    stage.name = "bench";
    stage.invert_sigma = true;
    stage.iterations = a.iterations;
    spec.stages.push_back(stage);
    PetscSession petsc("");
    std::string made;  // the campaign's outputs, in a folder of rank 0's under /tmp
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        char pattern[] = "/tmp/gprfwi-bench-XXXXXX";
        if (!mkdtemp(pattern)) throw Error("bench: cannot make a temporary folder under /tmp");
        made = pattern;
    });
    const std::string out = parallel::broadcast(made);
    const double t0 = now_s();
    const InversionResult r = invert(start, spec, objective, out, "", false);
    const double wall = now_s() - t0;
    parallel::barrier();
    if (parallel::is_root()) std::filesystem::remove_all(out);
    const int iterations = r.history.empty() ? 0 : r.history.back().iteration;
    const double cells = static_cast<double>(a.nx + 2 * a.pml) * (a.nz + 2 * a.pml);
    fmt::print("gprfwi bench: inversion on {} over {} rank(s), {} precision, stencil {}, snapshots {} in {}\n",
               runner.propagator().name(), parallel::place().size, a.precision, a.stencil, a.compression,
               runner.timings().level_storage);
    fmt::print("  grid {} x {} + CPML {}, {} shots, {} steps: {} iterations, {} evaluations in {:.2f} s: {:.3f} s an "
               "iteration, {:.3f} s an evaluation\n",
               a.nx, a.nz, a.pml, a.shots, a.nt, iterations, objective.evaluations, wall,
               wall / std::max(iterations, 1), wall / std::max(objective.evaluations, 1));
    fmt::print("  the evaluations' time loops {:.2f} s (rank 0): inversion efficiency {:.1f}%; misfit fell to {:.3g} of "
               "its start\n",
               objective.loop_seconds, 100.0 * objective.loop_seconds / wall,
               r.history.empty() ? 1.0 : r.history.back().misfit_relative);
    fmt::print("  the evaluations {:.2f} s (rank 0): time loops {:.2f} s, the propagator's set-up {:.2f} s (on the host "
               "{:.2f} s) and host work {:.2f} s, the rest (the runner's batches and sums over the ranks) {:.2f} s\n",
               objective.call_seconds, objective.loop_seconds, objective.setup_seconds, objective.build_seconds,
               objective.host_seconds,
               objective.call_seconds - objective.loop_seconds - objective.setup_seconds - objective.host_seconds);
    fmt::print("{{\"mode\":\"inversion\",\"backend\":\"{}\",\"ranks\":{},\"nx\":{},\"nz\":{},\"shots\":{},\"nt\":{},"
               "\"iterations\":{},\"evaluations\":{},\"seconds\":{:.6g},\"seconds_per_iteration\":{:.6g},"
               "\"loop_seconds\":{:.6g},\"inversion_efficiency\":{:.4f},\"cell_steps_per_s\":{:.6g}}}\n",
               runner.propagator().name(), parallel::place().size, a.nx, a.nz, a.shots, a.nt, iterations,
               objective.evaluations, wall, wall / std::max(iterations, 1), objective.loop_seconds,
               objective.loop_seconds / wall, cells * a.shots * a.nt * objective.evaluations / wall);
}

/// Born calls or Hessian-vector products (full, or Gauss-Newton with
/// --gauss-newton) and gradient calls of the same batch and options, each
/// from a warm propagator of its own: the medians of the warm calls, their
/// ratio, and the peak device memory of each.
void run_second_order(const BenchArgs& a) {
    const PropagatorOptions opt = bench_options(a);
    const Grid grid{a.nx, a.nz, 0.01, 0.01};
    const Model model = Model::uniform(grid, 9.0, 0.005);
    const Survey survey = bench_survey(a, grid, 9.0);
    const Traces observed = make_traces(survey);
    const L2Misfit misfit(observed);
    const ModelDirection v{Array2D(grid.nz, grid.nx, 0.5), Array2D(grid.nz, grid.nx, 1e-3)};
    const bool born = a.mode == "born";
    const HessianKind kind = a.gauss_newton ? HessianKind::gauss_newton : HessianKind::full;
    struct Timed {
        double call = 0, loops = 0, first = 0;
        std::size_t peak = 0;
        std::string name;
    };
    auto time = [&](auto&& once) {
        auto prop = make_propagator(opt);
        Timed t;
        t.name = prop->name();
        const double first0 = now_s();
        once(*prop);
        t.first = now_s() - first0;
        std::vector<double> calls, loops;
        for (int r = 0; r < a.repeats; ++r) {
            const double t0 = now_s();
            once(*prop);
            calls.push_back(now_s() - t0);
            loops.push_back(prop->last_timings().forward_s + prop->last_timings().adjoint_s);
        }
        t.call = median(calls);
        t.loops = median(loops);
        t.peak = prop->peak_device_bytes();
        return t;
    };
    // products at one model (an inner conjugate-gradient loop: the background from the first one's levels
    // where they are exact), and at a new model each (the background stepped every time)
    const Timed second = time([&](Propagator& p) {
        if (born) p.born(model, survey, v);
        else p.hessian(model, survey, misfit, v, kind);
    });
    const Model other = Model::uniform(grid, 9.0, 0.006);
    int calls = 0;
    const Timed fresh = time([&](Propagator& p) {
        if (!born) p.hessian(++calls % 2 ? model : other, survey, misfit, v, kind);
    });
    const Timed gradient = time([&](Propagator& p) { p.gradient(model, survey, misfit); });
    const std::string what = born ? "Born" : kind == HessianKind::full ? "full Hessian-vector product" : "Gauss-Newton Hessian-vector product";
    const double cells = static_cast<double>(a.nx + 2 * a.pml) * (a.nz + 2 * a.pml);
    const double work = cells * a.shots * a.nt;
    fmt::print("gprfwi bench: {} against gradient on {}, {} precision, stencil {}, snapshots {} in {}\n", what,
               second.name, a.precision, a.stencil, a.compression, a.storage);
    fmt::print("  grid {} x {} + CPML {} = {:.0f} cells, {} shot(s), {} steps; median of {} warm calls each\n", a.nx,
               a.nz, a.pml, cells, a.shots, a.nt, a.repeats);
    fmt::print("  {}: {:.3f} s a call ({:.4g} cell-steps/s; time loops {:.3f} s; first call {:.3f} s); peak device "
               "memory {:.3g} GiB\n",
               what, second.call, work / second.call, second.loops, second.first, second.peak / 1073741824.0);
    if (!born)
        fmt::print("  the same at a new model each call (the background stepped): {:.3f} s a call ({:.3f} x the "
                   "gradient's)\n",
                   fresh.call, fresh.call / gradient.call);
    fmt::print("  gradient: {:.3f} s a call ({:.4g} cell-steps/s; time loops {:.3f} s); peak device memory {:.3g} GiB\n",
               gradient.call, work / gradient.call, gradient.loops, gradient.peak / 1073741824.0);
    fmt::print("  ratio: {:.3f} x the gradient's time, {:.3f} x its peak device memory\n", second.call / gradient.call,
               gradient.peak ? static_cast<double>(second.peak) / gradient.peak : 0.0);
    fmt::print("{{\"mode\":\"{}\",\"hessian\":\"{}\",\"backend\":\"{}\",\"precision\":\"{}\",\"nx\":{},\"nz\":{},"
               "\"shots\":{},\"nt\":{},\"call_seconds\":{:.6g},\"loop_seconds\":{:.6g},\"gradient_call_seconds\":{:.6g},"
               "\"time_ratio\":{:.4f},\"new_model_call_seconds\":{:.6g},\"peak_device_bytes\":{},"
               "\"gradient_peak_device_bytes\":{}}}\n",
               a.mode, born ? "none" : kind == HessianKind::full ? "full" : "gauss-newton", second.name, a.precision, a.nx,
               a.nz, a.shots, a.nt, second.call, second.loops, gradient.call, second.call / gradient.call,
               born ? 0.0 : fresh.call, second.peak,
               gradient.peak);
}

void run_bench(const BenchArgs& a) {
    if (a.mode == "inversion") return run_inversion(a);
    if (a.mode == "born" || a.mode == "hessian") return run_second_order(a);
    if (a.mode != "gradient" && a.mode != "forward")
        throw InvalidArgument(fmt::format(
            "--mode must be 'forward', 'gradient', 'born', 'hessian' or 'inversion', got '{}'", a.mode));
    run_calls(a);
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    CLI::App* cmd = app.add_subcommand("bench", "Measure cell-steps per second against memory bandwidth");
    cmd->add_option("--backend", a->backend, "auto | cpu | cuda")->capture_default_str();
    cmd->add_option("--mode", a->mode,
                    "forward | gradient | born | hessian (beside gradient calls) | inversion (an invert campaign on "
                    "the bench's batch)")
        ->capture_default_str();
    cmd->add_flag("--gauss-newton", a->gauss_newton, "--mode hessian: Gauss-Newton products instead of full ones");
    cmd->add_option("--iterations", a->iterations, "Iterations of --mode inversion")->capture_default_str();
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
    cmd->add_option("--repeats", a->repeats, "Timed calls after the first (median reported)")->capture_default_str();
    cmd->add_option("--shot-groups", a->shot_groups,
                    "Run the shots as this many groups, on a GPU at once (0: automatic)")
        ->capture_default_str();
    cmd->add_option("--model-comparison", a->model_comparison,
                    "When a call compares a model that came again with the kept copy: auto | before | during its "
                    "time loops")
        ->transform(CLI::CheckedTransformer(std::map<std::string, ModelComparison>{
            {"auto", ModelComparison::automatic}, {"before", ModelComparison::before},
            {"during", ModelComparison::during}}))
        ->default_str("auto");
    cmd->add_option("--check-every", a->check_every, "Check the fields for NaN/Inf every N steps (0: first and last only)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    // the CUDA backend's knobs (docs/gpu.md), for measurements
    cmd->add_option("--step-rows", a->cuda.step_rows, "CUDA: rows of the forward's segments (0: automatic)")
        ->capture_default_str();
    cmd->add_option("--adjoint-rows", a->cuda.adjoint_rows, "CUDA: rows of the adjoint's segments (0: automatic)")
        ->capture_default_str();
    cmd->add_option("--pair-rows", a->cuda.pair_rows,
                    "CUDA: the forward's step pairs: -2 where they pay, -1 wherever there is a pair box, 0 none, N "
                    "rows a segment")
        ->capture_default_str();
    cmd->add_flag("!--no-l2-persist", a->cuda.l2_persist, "CUDA: no L2 persisting window over the coefficients");
    cmd->add_flag("!--no-dependent-launch", a->cuda.dependent_launch,
                  "CUDA: plain launches instead of programmatic dependent ones");
    cmd->callback([a] { run_bench(*a); });
}

}  // namespace gprfwi::app
