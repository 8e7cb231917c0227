#include "gprfwi/setup.hpp"

#include "gprfwi/checkpoint_schedule.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/material.hpp"
#include "gprfwi/wavelet.hpp"
#include "parallel/parallel_arrays.hpp"

namespace gprfwi {

int PropagationSetup::model_row(int iz) const {
    return std::clamp(iz - grid.pml.top, 0, grid.model.nz - 1);
}

int PropagationSetup::model_col(int ix) const {
    return std::clamp(ix - grid.pml.left, 0, grid.model.nx - 1);
}

std::pair<int, int> PropagationSetup::padded_rows(int mz) const {
    return {mz == 0 ? 0 : mz + grid.pml.top, mz == grid.model.nz - 1 ? grid.nz - 1 : mz + grid.pml.top};
}

namespace {

// What a fill does with its copy of the model (MaterialCoefficients::model).
enum class ModelCopy { drop, keep, make };

// ca, cb at every padded E node and cq at every padded H node. H nodes take
// mu_r of the E node (iz, ix) that precedes them (Hx at (iz+1/2, ix), Hz at
// (iz, ix+1/2)); the same rule holds in the CPML, where values are extended.
// Filled into `c` where it is the only holder of arrays of the grid's size
// (an earlier call's, whose halos hold zeros already), else into new arrays.
std::shared_ptr<const MaterialCoefficients> fill_coefficients(const PropagationSetup& s, const Model& model,
                                                              const ModelCheck& check, ModelCopy copy,
                                                              std::shared_ptr<MaterialCoefficients> c) {
    static std::atomic<std::uint64_t> last_id{0};
    const std::size_t n = s.grid.storage_size();
    if (!c || c.use_count() != 1 || c->ca.size() != n) {
        auto fresh = std::make_shared<MaterialCoefficients>();
        for (auto* a : {&fresh->ca, &fresh->cb, &fresh->cq}) a->assign(n, 0.0);
        if (c && c.use_count() == 1) fresh->model = std::move(c->model);  // (its values or its memory)
        c = std::move(fresh);
    }
    const double dt = s.time.dt_internal;
    const double cq0 = magnetic_coefficient(model.mu_r(0, 0), dt);
    bool uniform = true;
#pragma omp parallel for schedule(static) reduction(&& : uniform)
    for (int iz = 0; iz < s.grid.nz; ++iz) {
        const int mz = s.model_row(iz);
        for (int ix = 0; ix < s.grid.nx; ++ix) {
            const int mx = s.model_col(ix);
            const auto lossy = lossy_coefficients(model.eps_r(mz, mx), model.sigma(mz, mx), dt);
            const std::size_t i = s.grid.index(iz, ix);
            c->ca[i] = lossy.ca;
            c->cb[i] = lossy.cb;
            c->cq[i] = magnetic_coefficient(model.mu_r(mz, mx), dt);
            uniform = uniform && c->cq[i] == cq0;
        }
    }
    c->cq_uniform = uniform ? cq0 : 0.0;
    c->id = ++last_id;
    c->check = check;
    c->grid = s.grid;
    c->dt_internal = dt;
    if (copy == ModelCopy::drop) {
        c->model.reset();
    } else if (copy == ModelCopy::make || !c->model) {  // (keep: a shared one's copy stayed with it)
        if (!c->model) c->model.emplace();
        copy_parallel(model, *c->model);
    }
    return c;
}

double resolve_alpha_max(const CpmlOptions& opt, const Survey& survey) {
    if (opt.alpha_max > 0) return opt.alpha_max;
    if (opt.frequency_hz > 0) return kPi * opt.frequency_hz;
    double f = 0;
    for (std::size_t si = 0; si < survey.shots.size(); ++si)  // (shots that share a wavelet: its spectrum once)
        if (si == 0 || survey.shots[si].wavelet != survey.shots[si - 1].wavelet)
            f = std::max(f, dominant_frequency(survey.shots[si].wavelet, survey.dt));
    if (!(f > 0)) f = 0.25 / survey.dt;  // silent wavelets: a quarter of the sampling rate
    return kPi * f;
}

}  // namespace

PropagationSetup PropagationSetup::build(const Model& model, const Survey& survey, const PropagatorOptions& options,
                                         std::shared_ptr<MaterialCoefficients> recycle, bool model_comes_again,
                                         KeptModel kept) {
    options.validate();
    // a model bit for bit the copy `recycle` keeps passed its checks then; one whose check matches that of
    // the model `recycle` was filled from (without a copy) is likely the same again, and is copied
    const bool known = recycle && recycle->model && kept != KeptModel::other &&
                       (kept == KeptModel::same ? recycle->model->grid == model.grid
                                                : same_bits_parallel(model, *recycle->model));
    const ModelCheck check = known ? recycle->check : model.checked();
    const bool again = recycle && (model_comes_again || (recycle->id != 0 && recycle->grid.model == model.grid &&
                                                         recycle->check.bits_sum == check.bits_sum &&
                                                         recycle->check.min_eps_mu == check.min_eps_mu));
    const double min_eps_mu = check.min_eps_mu;
    survey.validate();
    PropagationSetup s;
    s.grid = PaddedGrid(model.grid, options.cpml.widths);
    s.time = plan_time_stepping(model.grid, min_eps_mu, survey.dt, survey.nt, options.stencil_order,
                                options.allow_substeps);
    s.snapshot_interval = options.snapshots.interval > 0 ? options.snapshots.interval
                                                         : auto_snapshot_interval(survey, s.time.dt_internal);
    s.checkpoint_steps = resolve_checkpoint_steps(options.snapshots.checkpoint_steps, s.time.nt_internal);
    s.binomial_slots = resolve_binomial_slots(options.snapshots.binomial_slots, s.time.nt_internal);
    if (known && recycle->grid == s.grid && recycle->dt_internal == s.time.dt_internal)
        s.coefficients = std::move(recycle);
    else
        s.coefficients = fill_coefficients(s, model, check,
                                           known ? ModelCopy::keep : again ? ModelCopy::make : ModelCopy::drop,
                                           std::move(recycle));

    const double c_ref = options.cpml.reference_velocity > 0 ? options.cpml.reference_velocity
                                                             : speed_of_light() / std::sqrt(min_eps_mu);
    s.alpha_max = resolve_alpha_max(options.cpml, survey);
    const auto& w = options.cpml.widths;
    s.cpml_x = make_cpml_axis(s.grid.nx, model.grid.dx, w.left, w.right, options.cpml, c_ref,
                              s.alpha_max, s.time.dt_internal);
    s.cpml_z = make_cpml_axis(s.grid.nz, model.grid.dz, w.top, w.bottom, options.cpml, c_ref,
                              s.alpha_max, s.time.dt_internal);

    s.upsample = ResampleOperator::upsample_sources(survey.nt, s.time.ratio);
    s.downsample = ResampleOperator::downsample_receivers(survey.nt, s.time.ratio);

    const double inv_cell = 1.0 / (model.grid.dx * model.grid.dz);
    s.shots.resize(survey.shots.size());
    for (std::size_t si = 0; si < survey.shots.size(); ++si) {
        const Shot& shot = survey.shots[si];
        ShotOperators& op = s.shots[si];
        for (std::size_t k = 0; k < shot.sources.size(); ++k) {
            const Source& src = shot.sources[k];
            for (const PointWeight& pw : point_weights(s.grid, src.position, options.interpolation,
                                                       fmt::format("shot {} source {}", si, k))) {
                // J = I / (dx dz) enters as Ey -= cb * J
                const double weight = -s.cb()[pw.index] * pw.weight * src.amplitude * inv_cell;
                auto same = std::find_if(op.source.begin(), op.source.end(),
                                         [&](const PointWeight& q) { return q.index == pw.index; });
                if (same != op.source.end()) same->weight += weight;
                else op.source.push_back({pw.index, weight});
            }
        }
        op.receivers.resize(shot.receivers.size());
        for (std::size_t r = 0; r < shot.receivers.size(); ++r)
            op.receivers[r] = point_weights(s.grid, shot.receivers[r], options.interpolation,
                                            fmt::format("shot {} receiver {}", si, r));
        op.wavelet_internal.assign(static_cast<std::size_t>(s.time.nt_internal), 0.0);
        s.upsample.apply(shot.wavelet.data(), op.wavelet_internal.data());
    }
    return s;
}

PropagationSetup PropagationSetup::shot_range(std::size_t first, std::size_t count) const {
    PropagationSetup part;
    part.grid = grid;
    part.time = time;
    part.alpha_max = alpha_max;
    part.snapshot_interval = snapshot_interval;
    part.checkpoint_steps = checkpoint_steps;
    part.binomial_slots = binomial_slots;
    part.coefficients = coefficients;
    part.cpml_x = cpml_x;
    part.cpml_z = cpml_z;
    part.upsample = upsample;
    part.downsample = downsample;
    part.shots.assign(shots.begin() + static_cast<std::ptrdiff_t>(first),
                      shots.begin() + static_cast<std::ptrdiff_t>(first + count));
    part.first_shot = first_shot + static_cast<int>(first);
    return part;
}

int resolve_checkpoint_steps(int option, int nt) {
    if (option == 0) return 0;
    const int c = option > 0 ? option : static_cast<int>(std::ceil(std::sqrt(7.0 * nt)));
    return std::clamp(c, 1, std::max(nt, 1));
}

void throw_blowup(const PropagationSetup& s, const char* what, int shot, int step) {
    throw NumericalBlowup(fmt::format(
        "NaN or Inf in {} of shot {} at internal step {} of {} (user sample {}, t = {:.6g} s); "
        "dt_internal = {:.6g} s, CFL limit {:.6g} s",
        what, s.first_shot + shot, step, s.time.nt_internal, step / s.time.ratio, (step + 1) * s.time.dt_internal,
        s.time.dt_internal, s.time.dt_max));
}

Array2D fold_to_model(const PropagationSetup& s, std::span<const double> padded) {
    const Grid& model = s.grid.model;
    Array2D out(model.nz, model.nx, 0.0);
    // each model row sums the padded rows that fold onto it (the CPML's onto
    // the edge rows) in padded order: every node's sum is added in the order
    // of a plain loop over the padded grid, whatever the threads
#pragma omp parallel for schedule(static)
    for (int mz = 0; mz < model.nz; ++mz) {
        const auto [first, last] = s.padded_rows(mz);
        for (int iz = first; iz <= last; ++iz)
            for (int ix = 0; ix < s.grid.nx; ++ix) out(mz, s.model_col(ix)) += padded[s.grid.index(iz, ix)];
    }
    return out;
}

}  // namespace gprfwi
