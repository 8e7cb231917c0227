#include "gprfwi/propagator.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/wavelet.hpp"

namespace gprfwi {

Precision parse_precision(const std::string& name) { return kPrecisionNames.parse(name); }
BackendKind parse_backend(const std::string& name) { return kBackendNames.parse(name); }

BackendKind resolve_backend(BackendKind requested) {
    if (requested != BackendKind::automatic) return requested;
    return cuda_device_count() > 0 ? BackendKind::cuda : BackendKind::cpu;
}

SnapshotCompression parse_compression(const std::string& name) { return kCompressionNames.parse(name); }
SnapshotStorage parse_storage(const std::string& name) { return kStorageNames.parse(name); }
const char* to_string(SnapshotStorage s) { return kStorageNames.name(s); }
const char* to_string(Precision p) { return kPrecisionNames.name(p); }
const char* to_string(BackendKind b) { return kBackendNames.name(b); }
const char* to_string(SnapshotCompression c) { return kCompressionNames.name(c); }

void PropagatorOptions::validate() const {
    check_stencil_order(stencil_order);
    cpml.validate();
    if (snapshots.interval < 0)
        throw InvalidArgument(fmt::format("snapshot interval must be >= 1, or 0 for automatic, got {}",
                                          snapshots.interval));
    if (snapshots.checkpoint_steps < -1)
        throw InvalidArgument(fmt::format("checkpoint steps must be > 0, 0 (off) or -1 (automatic), got {}",
                                          snapshots.checkpoint_steps));
    if (snapshots.checkpoint_steps != 0 && snapshots.interval != 1)
        throw InvalidArgument(fmt::format("checkpointing recomputes every level and keeps the gradient exact: it "
                                          "needs snapshot interval 1, got {}", snapshots.interval));
    if (snapshots.binomial_slots < -1)
        throw InvalidArgument(fmt::format("binomial checkpoint slots must be > 0, 0 (off) or -1 (automatic), got {}",
                                          snapshots.binomial_slots));
    if (snapshots.binomial_slots != 0 && snapshots.checkpoint_steps != 0)
        throw InvalidArgument("binomial checkpointing and checkpoints every C steps exclude each other: choose one");
    if (snapshots.binomial_slots != 0 && snapshots.interval != 1)
        throw InvalidArgument(fmt::format("binomial checkpointing recomputes every level and keeps the gradient exact: "
                                          "it needs snapshot interval 1, got {}", snapshots.interval));
    if (device < -1) throw InvalidArgument(fmt::format("device must be >= 0, or -1 for automatic, got {}", device));
    if (shot_groups < 0 || shot_groups > kMaxShotGroups)
        throw InvalidArgument(
            fmt::format("shot groups must be 0 (automatic) or 1 to {}, got {}", kMaxShotGroups, shot_groups));
    if (blowup_check_interval < 0)
        throw InvalidArgument(fmt::format("blow-up check interval must be >= 0, got {}", blowup_check_interval));
    if (cuda.step_rows < 0 || cuda.adjoint_rows < 0)
        throw InvalidArgument(fmt::format("cuda step_rows and adjoint_rows must be >= 0 (0: automatic), got {} and {}",
                                          cuda.step_rows, cuda.adjoint_rows));
    if (cuda.pair_rows < CudaTuning::kPairsWherePay)
        throw InvalidArgument(fmt::format("cuda pair_rows must be -2 (where pairs pay), -1 (any pair box), 0 (none) "
                                          "or N > 0 rows, got {}", cuda.pair_rows));
}

TimeStepping plan_time_stepping(const Model& model, const Survey& survey, int order, bool allow_substeps) {
    return plan_time_stepping(model.grid, model.min_eps_mu(), survey.dt, survey.nt, order, allow_substeps);
}

TimeStepping plan_time_stepping(const Grid& g, double min_eps_mu, double dt, int nt, int order, bool allow_substeps) {
    const double v_max = speed_of_light() / std::sqrt(min_eps_mu);
    TimeStepping t;
    t.dt_user = dt;
    t.dt_max = 1.0 / (v_max * std::sqrt(1.0 / (g.dx * g.dx) + 1.0 / (g.dz * g.dz)) * stencil_abs_sum(order));
    // a relative slack of 1e-12 keeps dt == dt_max (computed elsewhere) at ratio 1
    t.ratio = std::max(1, static_cast<int>(std::ceil(dt / t.dt_max * (1.0 - 1e-12))));
    if (t.ratio > 1 && !allow_substeps)
        throw UnstableTimeStep(fmt::format(
            "dt = {:.6g} s exceeds the CFL limit {:.6g} s of stencil order {} on this grid "
            "(v_max = {:.6g} m/s, dx = {} m, dz = {} m); use dt <= {:.6g} s or allow sub-steps",
            dt, t.dt_max, order, v_max, g.dx, g.dz, t.dt_max));
    if (static_cast<double>(t.ratio) * nt > 2.0e9)
        throw UnstableTimeStep(fmt::format(
            "dt = {:.6g} s needs {} internal steps per sample (CFL limit {:.6g} s): {} steps in all is too many",
            dt, t.ratio, t.dt_max, static_cast<double>(t.ratio) * nt));
    t.dt_internal = dt / t.ratio;
    t.nt_internal = nt * t.ratio;
    return t;
}

int auto_snapshot_interval(const Survey& survey, double dt_internal) {
    double f_max = 0;
    for (const Shot& shot : survey.shots) f_max = std::max(f_max, highest_frequency(shot.wavelet, survey.dt));
    if (!(f_max > 0)) return 1;
    return std::max(1, static_cast<int>(std::floor(1.0 / (4.0 * f_max * dt_internal))));
}

PropagatorOptions fix_survey_wide_options(PropagatorOptions o, const Model& model, const Survey& survey) {
    if (!(o.cpml.reference_velocity > 0)) o.cpml.reference_velocity = speed_of_light() / std::sqrt(model.min_eps_mu());
    if (!(o.cpml.alpha_max > 0) && !(o.cpml.frequency_hz > 0)) {
        double f = 0;
        for (const Shot& shot : survey.shots) f = std::max(f, dominant_frequency(shot.wavelet, survey.dt));
        if (f > 0) o.cpml.frequency_hz = f;
    }
    if (o.snapshots.interval == 0) {
        const TimeStepping t = plan_time_stepping(model, survey, o.stencil_order, o.allow_substeps);
        o.snapshots.interval = auto_snapshot_interval(survey, t.dt_internal);
    }
    return o;
}

void Propagator::reserve(const Model&, const Survey&, bool) {}

GradientResult Propagator::gradient(const Model& model, const Survey& survey, const Traces& observed) {
    check_traces_match(observed, survey, "observed data");
    return gradient(model, survey, L2Misfit(observed));
}

double L2Misfit::evaluate(const Traces& synthetic, Traces& adjoint_source) const {
    double j = 0;
    adjoint_source = synthetic;
    for (std::size_t s = 0; s < synthetic.size(); ++s) {
        auto& r = adjoint_source[s].samples();
        const auto& o = observed_.at(s).samples();
        if (o.size() != r.size())
            throw SizeMismatch(fmt::format("observed shot {} has {} samples, synthetic has {}", s, o.size(), r.size()));
        for (std::size_t i = 0; i < r.size(); ++i) {
            r[i] -= o[i];
            j += 0.5 * r[i] * r[i];
        }
    }
    return j;
}

void Misfit::apply_hessian(const Traces&, const Traces&, Traces&) const {
    throw InvalidArgument("this misfit has no Hessian: Hessian-vector products need one (the l2 misfit has)");
}

void L2Misfit::apply_hessian(const Traces& synthetic, const Traces& direction, Traces& out) const {
    if (direction.size() != synthetic.size()) throw SizeMismatch("L2Misfit::apply_hessian: direction and synthetic differ in shots");
    out = direction;
}

void LinearFunctional::apply_hessian(const Traces& synthetic, const Traces&, Traces& out) const {
    out = synthetic;
    for (ShotTraces& t : out) std::fill(t.samples().begin(), t.samples().end(), 0.0);
}

double LinearFunctional::evaluate(const Traces& synthetic, Traces& adjoint_source) const {
    double j = 0;
    adjoint_source = weights_;
    for (std::size_t s = 0; s < synthetic.size(); ++s) {
        const auto& d = synthetic[s].samples();
        const auto& w = weights_.at(s).samples();
        if (w.size() != d.size())
            throw SizeMismatch(fmt::format("weights shot {} has {} samples, synthetic has {}", s, w.size(), d.size()));
        for (std::size_t i = 0; i < d.size(); ++i) j += d[i] * w[i];
    }
    return j;
}

std::unique_ptr<Propagator> make_propagator(const PropagatorOptions& options) {
    options.validate();
    if (resolve_backend(options.backend) == BackendKind::cuda) return make_cuda_propagator(options);
    return std::make_unique<CpuPropagator>(options);
}

}  // namespace gprfwi
