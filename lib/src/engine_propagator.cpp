// The orchestration shared by every backend:
//   forward:  traces = D (engine forward)
//   gradient: J, r = misfit(traces); lambda source = D^T r;
//             (g_prev, g_next, dJ/dw_internal) = engine adjoint;
//             dJ/dca = g_prev, dJ/dcb = (g_next - ca g_prev)/cb at every padded
//             node; chain rule to (eps_r, sigma); fold onto the model;
//             dJ/dwavelet = U^T dJ/dw_internal.

#include "gprfwi/engine.hpp"

#include <chrono>

#include "gprfwi/checkpoint_schedule.hpp"
#include "gprfwi/material.hpp"

namespace gprfwi {

InternalTraces make_internal_traces(const PropagationSetup& s) {
    InternalTraces t(s.shots.size());
    for (std::size_t i = 0; i < s.shots.size(); ++i)
        t[i].assign(s.shots[i].receivers.size(), std::vector<double>(s.time.nt_internal, 0.0));
    return t;
}

namespace {

Traces to_user(const PropagationSetup& s, const InternalTraces& internal, int nt) {
    Traces out;
    for (std::size_t si = 0; si < internal.size(); ++si) {
        out.emplace_back(static_cast<int>(internal[si].size()), nt);
        for (std::size_t r = 0; r < internal[si].size(); ++r)
            s.downsample.apply(internal[si][r].data(), out[si].receiver(static_cast<int>(r)));
    }
    return out;
}

InternalTraces to_internal_adjoint(const PropagationSetup& s, const Traces& adjoint_source) {
    InternalTraces r = make_internal_traces(s);
    for (std::size_t si = 0; si < s.shots.size(); ++si)
        for (std::size_t k = 0; k < r[si].size(); ++k)
            s.downsample.apply_transpose(adjoint_source[si].receiver(static_cast<int>(k)), r[si][k].data());
    return r;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// ca, cb as the engine used them (rounded to the arithmetic type).
double as_used(double v, Precision p) { return p == Precision::single ? static_cast<double>(static_cast<float>(v)) : v; }

}  // namespace

Traces EnginePropagator::forward(const Model& model, const Survey& survey) {
    timings_ = {};
    auto t0 = std::chrono::steady_clock::now();
    const PropagationSetup s = PropagationSetup::build(model, survey, options_);
    auto engine = make_engine(s, false);
    timings_.setup_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const InternalTraces internal = engine->forward(false);
    timings_.forward_s = seconds_since(t0);
    timings_.forward_paired_share = engine->forward_paired_share();
    t0 = std::chrono::steady_clock::now();
    Traces out = to_user(s, internal, survey.nt);
    timings_.other_s = seconds_since(t0);
    return out;
}

GradientResult EnginePropagator::gradient(const Model& model, const Survey& survey, const Misfit& misfit) {
    timings_ = {};
    auto t0 = std::chrono::steady_clock::now();
    const PropagationSetup s = PropagationSetup::build(model, survey, options_);
    auto engine = make_engine(s, true);
    timings_.setup_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const InternalTraces internal = engine->forward(true);
    timings_.forward_s = seconds_since(t0);
    timings_.level_storage = engine->level_storage();
    timings_.imaging_steps = engine->imaging_steps();
    timings_.forward_paired_share = engine->forward_paired_share();
    t0 = std::chrono::steady_clock::now();
    GradientResult out;
    out.synthetic = to_user(s, internal, survey.nt);
    Traces adjoint_source = make_traces(survey);
    out.misfit = misfit.evaluate(out.synthetic, adjoint_source);
    check_traces_match(adjoint_source, survey, "adjoint source");
    const InternalTraces r_internal = to_internal_adjoint(s, adjoint_source);
    timings_.other_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const AdjointResult a = engine->adjoint(r_internal);
    timings_.adjoint_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();

    // chain rule through ca(eps_r, sigma), cb(eps_r, sigma) at every padded node
    std::vector<double> g_eps(a.g_prev.size(), 0.0), g_sig(a.g_prev.size(), 0.0);
    for (int iz = 0; iz < s.grid.nz; ++iz)
        for (int ix = 0; ix < s.grid.nx; ++ix) {
            const int mz = s.model_row(iz), mx = s.model_col(ix);
            const std::size_t i = s.grid.index(iz, ix);
            const double ca = as_used(s.ca[i], options_.precision), cb = as_used(s.cb[i], options_.precision);
            const double grad_ca = a.g_prev[i];
            const double grad_cb = (a.g_next[i] - ca * a.g_prev[i]) / cb;
            const auto d = lossy_coefficient_derivatives(model.eps_r(mz, mx), model.sigma(mz, mx), s.time.dt_internal);
            g_eps[i] = grad_ca * d.dca_deps_r + grad_cb * d.dcb_deps_r;
            g_sig[i] = grad_ca * d.dca_dsigma + grad_cb * d.dcb_dsigma;
        }
    out.grad_eps_r = fold_to_model(s, g_eps);
    out.grad_sigma = fold_to_model(s, g_sig);
    if (!a.illumination.empty()) out.illumination = fold_to_model(s, a.illumination);
    out.grad_wavelet.resize(s.shots.size());
    for (std::size_t si = 0; si < s.shots.size(); ++si) {
        out.grad_wavelet[si].assign(survey.nt, 0.0);
        s.upsample.apply_transpose(a.grad_wavelet_internal[si].data(), out.grad_wavelet[si].data());
    }
    timings_.other_s += seconds_since(t0);
    return out;
}

MemoryEstimate EnginePropagator::estimate_memory(const Model& model, const Survey& survey, bool gradient) const {
    const PaddedGrid g(model.grid, options_.cpml.widths);
    const TimeStepping t = plan_time_stepping(model, survey, options_.stencil_order, options_.allow_substeps);
    std::size_t receivers = 0;
    for (const Shot& shot : survey.shots) receivers += shot.receivers.size();
    const int interval = options_.snapshots.interval > 0 ? options_.snapshots.interval
                                                         : auto_snapshot_interval(survey, t.dt_internal);
    return estimate_batch_memory(g, t.nt_internal, survey.shots.size(), receivers, interval, options_, gradient);
}

MemoryEstimate estimate_batch_memory(const PaddedGrid& g, int nt_internal, std::size_t shots, std::size_t receivers,
                                     int interval, const PropagatorOptions& options, bool gradient) {
    const std::size_t word = options.precision == Precision::single ? 4 : 8;
    const std::size_t level = g.storage_size() * shots;
    MemoryEstimate e;
    // coefficients (3) + forward fields (7; 11 on a GPU, whose steps read
    // Ey, Hx, Hz and psi_ey_z from one buffer and write them to another);
    // gradient: adjoint fields (7; 13 on a GPU, Ey, Hx, Hz, psi_ey_z and
    // psi_hx_z twice and Ey a third time, for imaging in pairs of steps:
    // 12 with binomial checkpointing, host levels or fp8), scratch (4) and
    // two double accumulators summed over the shots (three with
    // illumination); on a GPU also, at most, the map of the adjoint frame's
    // receiver nodes (an int per 16 bytes of a level).
    // A GPU needs the scratch and the map only where its CPML's x strips
    // are too wide for the adjoint's tiles (kernels::cuda::
    // adjoint_uses_scratch), counted here all the same: an upper bound.
    // A GPU's forward also has, where it takes its steps in pairs
    // (kernels::cuda::step_pair_applies; in a gradient only with every
    // uncompressed level kept), a middle buffer of 4 arrays: counted for
    // every such GPU run, an upper bound.
    const bool cpu = options.backend == BackendKind::cpu;
    const bool pairs = !cpu && (!gradient || (options.snapshots.compression == SnapshotCompression::none &&
                                              !options.snapshots.checkpoint_steps && !options.snapshots.binomial_slots));
    e.fields_bytes = 3 * g.storage_size() * word + ((cpu ? 7 : 11) + (pairs ? 4 : 0)) * level * word;
    if (gradient) {
        e.fields_bytes += ((cpu ? 7 : 13) + 4) * level * word + (options.illumination ? 3 : 2) * g.storage_size() * sizeof(double);
        if (!cpu) e.fields_bytes += level * word / 16 * sizeof(int);
        const auto c = options.snapshots.compression;
        const std::size_t stored = c == SnapshotCompression::bf16 ? 2 : c == SnapshotCompression::fp8 ? 1 : word;
        e.snapshot_bytes = static_cast<std::size_t>(nt_internal / interval) * level * stored;
        if (const int steps = resolve_checkpoint_steps(options.snapshots.checkpoint_steps, nt_internal)) {
            const std::size_t segments = static_cast<std::size_t>((nt_internal + steps - 1) / steps);
            e.snapshot_bytes = segments * 7 * level * word + static_cast<std::size_t>(steps + 1) * level * stored;
        }
        if (const int slots = resolve_binomial_slots(options.snapshots.binomial_slots, nt_internal))
            e.snapshot_bytes = static_cast<std::size_t>(slots) * 7 * level * word + 2 * level * stored;
    }
    e.traces_bytes = receivers * static_cast<std::size_t>(nt_internal) * sizeof(double) * (gradient ? 2 : 1);
    return e;
}

}  // namespace gprfwi
