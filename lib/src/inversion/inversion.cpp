// The inversion driver: PETSc TAO over scaled eps_r and sigma, one stage at a
// time. The TAO vector is an MPI Vec spread over the ranks; each evaluation
// gathers it on every rank (MPI_Allgatherv), builds the model, calls the (collective)
// objective, and scatters the gradient back. Rank 0 writes every file.

#include "gprfwi/inversion.hpp"

#include "gprfwi/model_builder.hpp"

#include <petsctao.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <tuple>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gprfwi/background_scan.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/files.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/numbers.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/regularization.hpp"
#include "gprfwi/wavelet.hpp"
#include "gprfwi/wavelet_estimation.hpp"
#include "gprfwi/wavelet_projection.hpp"
#include "parallel/parallel_arrays.hpp"
#include "inversion/flood.hpp"
#include "inversion/petsc_memory.hpp"
#include "inversion/petsc_vectors.hpp"
#include "inversion/stage_checkpoint.hpp"
#include "inversion/stage_objective.hpp"
#include "inversion/stage_output.hpp"
#include "inversion/stage_regularization.hpp"
#include "inversion/stage_smoothing.hpp"
#include "inversion/stage_solver.hpp"
#include "inversion/stage_variables.hpp"
#include "core/timing.hpp"

namespace gprfwi {

namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int) { g_stop = 1; }

/// Whether any rank has been asked to stop (collective).
bool stop_requested_anywhere() { return parallel::max(g_stop ? 1.0 : 0.0) > 0; }

/// A stage's active parameters in the order of the optimisation vector's
/// blocks (0: eps_r, 1: sigma).
std::vector<int> active_parameters(const StageSpec& stage) {
    std::vector<int> p;
    if (stage.invert_eps_r) p.push_back(0);
    if (stage.invert_sigma) p.push_back(1);
    return p;
}

}  // namespace

long campaign_propagations(const std::vector<HistoryRow>& history) {
    long total = 0;
    for (std::size_t i = 0; i < history.size(); ++i)
        if (i + 1 == history.size() || history[i + 1].stage != history[i].stage) total += history[i].propagations;
    return total;
}

namespace {

bool propagation_budget_spent(long max_propagations, const std::vector<HistoryRow>& history) {
    return max_propagations > 0 && campaign_propagations(history) >= max_propagations;
}

}  // namespace

bool ends_at_least_misfit(const StageSpec& stage) { return stage.min_relative_decrease > 0; }

std::uint64_t checkpoint_file_bytes(const InversionSpec& spec, const Grid& grid, const std::string& config) {
    const bool least = std::any_of(spec.stages.begin(), spec.stages.end(), ends_at_least_misfit);
    return grid_file_bytes(grid, least ? 5 : 3, config);
}

std::string stage_stop_reason(const StageSpec& stage, const std::vector<HistoryRow>& history, double stage_seconds,
                              long max_propagations) {
    std::string why;
    const int w = stage.decrease_window;
    if (stage.min_relative_decrease > 0 && static_cast<int>(history.size()) > w &&
        history.back().iteration >= stage.min_iterations) {
        const double j = history.back().misfit;
        const std::size_t from = history.size() - static_cast<std::size_t>(w);
        const HistoryRow& old = history[from - 1];
        if (old.stage == stage.name && old.misfit > 0 && (old.misfit - j) / old.misfit < stage.min_relative_decrease) {
            why = fmt::format("the misfit fell by less than {} over {} iterations", stage.min_relative_decrease, w);
            if (stage.min_relative_change > 0) {
                double moved_eps_r = 0, moved_sigma = 0;
                for (std::size_t k = from; k < history.size(); ++k) {
                    moved_eps_r += history[k].change_eps_r;
                    moved_sigma += history[k].change_sigma;
                }
                if (moved_eps_r < stage.min_relative_change && moved_sigma < stage.min_relative_change)
                    why += fmt::format(", and eps_r and sigma moved by less than {} ({:.3g}, {:.3g})",
                                       stage.min_relative_change, moved_eps_r, moved_sigma);
                else
                    why.clear();  // the model still crosses the valley
            }
        }
    }
    if (stage.max_seconds > 0 && stage_seconds > stage.max_seconds)
        why = fmt::format("the stage's wall-time budget of {} s is spent", stage.max_seconds);
    if (propagation_budget_spent(max_propagations, history))
        why = fmt::format("the campaign's budget of {} propagations is spent", max_propagations);
    return why;
}

namespace {

/// One stage's TAO problem.
class StageRun final : private StageProblem {
public:
    /// `model` follows `links` (invert forms every model it hands on so); `weight` is update_weights(spec).
    StageRun(const InversionSpec& spec, const StageSpec& stage, InversionObjective& objective, Model& model,
             const EdgeLinks& links, const std::vector<double>& weight, std::vector<HistoryRow>& history,
             const std::string& out_dir, const std::string& config, const std::optional<Model>& truth, int stage_index,
             BackgroundWriter& writer, double& sigma_sensitivity)
        : spec_(spec), stage_(stage), objective_(objective), model_(model), links_(links), history_(history),
          stage_index_(stage_index), sigma_sensitivity_(sigma_sensitivity), n_(model.eps_r.size()),
          params_(active_parameters(stage)),
          output_(spec, stage, stage_index, history, out_dir, config, truth, writer, times_.writing),
          weight_(weight),
          regularization_(spec),
          smoothing_(spec, stage, model.grid, params_) {
        method_ = stage.method.value_or(spec.method);
        masked_.resize(n_);
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n_; ++i) masked_[i] = is_free(weight_[i]) ? 0 : 1;
    }

    /// Runs the stage; `resume` carries the state of a stage interrupted earlier.
    void run(const std::optional<CheckpointState>& resume, double campaign_seconds) {
        campaign_offset_ = campaign_seconds;
        clamp_to_bounds();
        output_.start_at(model_);
        if (resume) {
            iteration_offset_ = resume->iterations;
            evaluation_offset_ = resume->evaluations;
            for (const HistoryRow& r : history_)
                if (r.stage == stage_.name) propagation_offset_ = r.propagations;
            stage_seconds_offset_ = resume->stage_seconds;
            j0_ = resume->j0;
            s_eps_ = resume->scale_eps_r;
            s_sig_ = resume->scale_sigma;
            sigma_ref_ = resume->sigma_ref;
            eps_ref_ = resume->eps_ref;
            spdlog::info("stage {}: resuming after iteration {} ({} evaluations so far)", stage_.name, iteration_offset_,
                         evaluation_offset_);
            resume_least();
            if (spec_.illumination_stabilization > 0) {
                preconditioner_ = output_.read_preconditioner(n_);
                for (std::size_t i = 0; i < n_; ++i) weight_[i] *= preconditioner_[i];
                spdlog::info("stage {}: illumination preconditioning from {}", stage_.name, output_.preconditioner_file());
            }
        } else {
            calibrate();
        }
        share_sigma_regularization();
        const int remaining = stage_.iterations - iteration_offset_;
        if (remaining <= 0) return finish("iteration limit reached before the resume");
        solve(remaining);
    }

    bool stopped_by_signal() const { return stopped_; }
    /// How many nodes the taper's fill changed at the stage's end.
    std::size_t filled() const { return filled_; }
    /// The misfit of the iterate the stage ended at (its last or its least),
    /// before the fill; none where the stage has no history row.
    std::optional<double> end_misfit() const { return end_misfit_; }
    double campaign_seconds() const { return campaign_offset_ + elapsed(); }

private:
    double elapsed() const { return seconds_since(t0_); }

    void clamp_to_bounds() {
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n_; ++i) {
            double& e = model_.eps_r.data()[i];
            double& s = model_.sigma.data()[i];
            if (stage_.invert_eps_r && !masked_[i]) e = std::clamp(e, spec_.eps_r_min, spec_.eps_r_max);
            if (stage_.invert_sigma && !masked_[i]) s = std::clamp(s, spec_.sigma_min, spec_.sigma_max);
        }
    }

    void calibrate() {
        const double* eps = model_.eps_r.data();
        const double* sig = model_.sigma.data();
        const double e_sum = sum_parallel(n_, [&](std::size_t i) { return eps[i]; });
        const double s_log = sum_parallel(n_, [&](std::size_t i) { return std::log(std::max(sig[i], spec_.sigma_min)); });
        eps_ref_ = e_sum / static_cast<double>(n_);
        sigma_ref_ = std::exp(s_log / static_cast<double>(n_));
        double j = 0;
        if (spec_.illumination_stabilization > 0) {
            Array2D illumination;
            j = eval_.evaluate(model_, &illumination);
            precondition(illumination);
            output_.write_preconditioner(preconditioner_);
        } else {
            j = eval_.evaluate(model_);
        }
        j0_ = j > 0 ? j : 1.0;
        const GradientPeaks peaks = gradient_peaks(weight_, masked_, eval_.grad_eps_r(), eval_.grad_sigma(), model_);
        std::tie(s_eps_, s_sig_) = calibrated_scales(spec_, peaks, j0_, eps_ref_);
        if (!(sigma_sensitivity_ > 0)) sigma_sensitivity_ = sigma_sensitivity(peaks, eps_ref_);
        spdlog::info("stage {}: misfit {:.6g}; scaling: eps_r changes {:.4g} and ln(sigma) {:.4g} per unit of the "
                     "optimisation variable ({}; inversion.scaling fixes them)",
                     stage_.name, j, s_eps_, s_sig_,
                     spec_.scale_eps_r > 0 && spec_.scale_sigma > 0 ? "fixed" : "calibrated from the first gradient");
        if (history_.empty() || history_.back().stage != stage_.name || history_.back().iteration != 0)
            output_.record(make_row(0, j, 0.0, 0.0), model_);
        note_least(0, j);
    }

    /// Whether the stage may end at this iterate where its misfit is the least
    /// (the rule applies from StageSpec::min_iterations on).
    bool may_end_at(int iteration) const { return ends_at_least_misfit(stage_) && iteration >= stage_.min_iterations; }

    void note_least(int iteration, double j) {
        if (!may_end_at(iteration) || !(j < least_misfit_)) return;
        least_misfit_ = j;
        least_iteration_ = iteration;
        if (!least_) least_.emplace(model_);
        copy_parallel(model_.eps_r, least_->eps_r);
        copy_parallel(model_.sigma, least_->sigma);
    }

    /// The least-misfit iterate a stopped stage had reached: the history's
    /// least row of the stage, its model the checkpoint's kLeastEpsR and
    /// kLeastSigma, or where the checkpoint has none (that iterate is the one
    /// resumed from, or an earlier version wrote it) the model resumed from.
    void resume_least() {
        if (!ends_at_least_misfit(stage_)) return;
        const std::string checkpoint = output_.checkpoint_file();
        if (!h5_has_dataset(checkpoint, kLeastEpsR)) {
            for (const HistoryRow& r : history_)
                if (r.stage == stage_.name && r.iteration == iteration_offset_) note_least(r.iteration, r.misfit);
            return;
        }
        for (const HistoryRow& r : history_)
            if (r.stage == stage_.name && may_end_at(r.iteration) && r.misfit < least_misfit_) {
                least_misfit_ = r.misfit;
                least_iteration_ = r.iteration;
            }
        least_.emplace(model_);
        least_->eps_r = read_model_array_h5(checkpoint, kLeastEpsR, model_.grid);
        least_->sigma = read_model_array_h5(checkpoint, kLeastSigma, model_.grid);
    }

    /// sigma's total variation at the share the survey's sensitivity to
    /// sigma gives it (where the campaign left it to auto).
    void share_sigma_regularization() {
        if (!spec_.sigma_tv_follows_sensitivity || !stage_.invert_sigma) return;
        const double share = sigma_total_variation_share(sigma_sensitivity_);
        regularization_.set_sigma_tv_share(share);
        spdlog::info("stage {}: total variation of ln sigma at {:.3g} of its weight, {:.3g} (the data's sensitivity to "
                     "ln sigma against eps_r / eps_ref: {:.3g}{})",
                     stage_.name, share, share * spec_.regularize_sigma.tv, sigma_sensitivity_,
                     sigma_sensitivity_ > 0 ? ", from the campaign's first calibration" : ", not known");
    }


    /// Illumination preconditioning (illumination_factors): each node's
    /// weight times its factor.
    void precondition(const Array2D& illumination) {
        const double a = spec_.illumination_stabilization;
        preconditioner_ = illumination_factors(illumination, masked_, a);
        if (preconditioner_.empty()) {
            preconditioner_.assign(n_, 1.0);
            spdlog::warn("stage {}: no forward field energy in the free nodes; no illumination preconditioning", stage_.name);
            return;
        }
        double lo = 1e300, hi = 0;
        for (std::size_t i = 0; i < n_; ++i) {
            if (masked_[i]) continue;
            const double p = preconditioner_[i];
            weight_[i] *= p;
            lo = std::min(lo, p * p);
            hi = std::max(hi, p * p);
        }
        spdlog::info("stage {}: illumination preconditioning (stabilisation {}): updates scaled by {:.3g} to {:.3g}; "
                     "wrote {}", stage_.name, a, lo, hi, output_.preconditioner_file());
    }

    HistoryRow make_row(int iteration, double j, double gnorm, double step) const {
        HistoryRow r;
        r.stage = stage_.name;
        r.iteration = iteration;
        r.misfit = j;
        r.misfit_relative = j / j0_;
        r.gradient_norm = gnorm;
        r.step = step;
        r.evaluations = evaluation_offset_ + eval_.evaluations();
        r.propagations = propagation_offset_ + eval_.propagations();
        r.seconds = campaign_seconds();
        return r;
    }

    /// The model at x, in trial_ (its memory reused from one evaluation to
    /// the next): the stage's model with the active parameters from x. Only
    /// eps_r and sigma change within a stage; mu_r and the grid are copied once.
    Model& trial_model(const double* x) {
        Model& m = trial_;
        if (m.mu_r.size() == 0) {  // the stage's first trial
            m.grid = model_.grid;
            copy_parallel(model_.mu_r, m.mu_r);
        }
        // the stage's values where x sets none: its masked nodes, a parameter it does not invert
        const auto active = [&](int p) { return std::find(params_.begin(), params_.end(), p) != params_.end(); };
        if (active(0)) reshape(m.eps_r, model_.grid.nz, model_.grid.nx);
        else copy_parallel(model_.eps_r, m.eps_r);
        if (active(1)) reshape(m.sigma, model_.grid.nz, model_.grid.nx);
        else copy_parallel(model_.sigma, m.sigma);
        variables().model_from_x(x, m, &model_);
        return m;
    }

    /// The change of variables between TAO's vector and the model (stage_variables.hpp).
    StageVariables variables() const {
        return {params_, weight_, masked_, s_eps_, s_sig_, eps_ref_, sigma_ref_,
                spec_.eps_r_min, spec_.eps_r_max, spec_.sigma_min, spec_.sigma_max, &links_};
    }

    /// Hv = d2f/dx2 v at x: the data term's Hessian through the objective
    /// (the model's map x -> (eps_r, sigma) is linear in eps_r and
    /// exponential in sigma; the full Hessian adds that map's curvature,
    /// dJ/d sigma d2sigma/dx2, which Gauss-Newton leaves out), and the
    /// regularisation's.
    void hessian_product(const std::vector<double>& x, const double* v, double* out) override {
        const Model& m = trial_model(x.data());
        const Grid& g = m.grid;
        const StageVariables vars = variables();
        Array2D ve(g.nz, g.nx), vs(g.nz, g.nx), he, hs;
        vars.direction_to_model(v, m, ve, vs);
        const bool full = method_ == InversionMethod::newton;
        eval_.hessian_vector(m, ve, vs, full ? HessianKind::full : HessianKind::gauss_newton, he, hs);
        if (full) eval_.evaluate(m);  // (TAO's gradient at x: held)
        vars.hessian_to_x(he, hs, m, j0_, v, full ? &eval_.grad_sigma() : nullptr, out);
        regularization_.hessian(m, vars, v, out);
    }

    /// f(x) = J/J0 + R and df/dx over the full vector; every rank stops
    /// when any was signalled.
    double objective(const std::vector<double>& x, std::vector<double>& gx) override {
        const Model& m = trial_model(x.data());
        const double j = eval_.evaluate(m);
        const StageVariables vars = variables();
        vars.gradient_to_x(eval_.grad_eps_r(), eval_.grad_sigma(), m, j0_, gx.data());
        const double f = j / j0_ + regularization_.value(m, vars, gx.data());
        bool finite = std::isfinite(f);
        const double* gp = gx.data();
#pragma omp parallel for schedule(static) reduction(&& : finite)
        for (std::size_t i = 0; i < gx.size(); ++i) finite = finite && std::isfinite(gp[i]);
        if (!finite)
            throw NumericalBlowup(fmt::format("stage {}: the objective or its gradient is not finite (f = {})", stage_.name, f));
        if (stop_requested_anywhere()) stopped_ = true;
        return f;
    }

    bool stopped() const override { return stopped_; }

    /// An accepted iteration: the stage's model, its history row, files and
    /// checkpoint; why the stage stops there, if it does.
    std::string accepted(const AcceptedIteration& it) override {
        variables().model_from_x(it.x.data(), model_);
        const double j = j0_ * (it.f - regularization_.value(model_, variables(), nullptr));
        const int iteration = iteration_offset_ + it.iteration;
        output_.record(make_row(iteration, j, it.gradient_norm, it.step), model_);
        note_least(iteration, j);
        write_iteration(iteration, false);
        std::string why = stage_stop_reason(stage_, history_, stage_seconds_offset_ + elapsed(), spec_.max_propagations);
        if (stop_requested_anywhere()) {
            stopped_ = true;
            why = "stop requested by a signal";
        }
        return why;
    }

    /// The iteration's files and the checkpoint (StageOutput::write).
    void write_iteration(int iteration, bool stage_done) {
        const bool gradient = output_.wants_gradient(iteration, stage_done) && eval_.holds(model_);
        output_.write({model_, gradient ? &eval_.grad_eps_r() : nullptr, gradient ? &eval_.grad_sigma() : nullptr,
                       eval_.misfit(),
                       {stage_index_, stage_done, iteration, evaluation_offset_ + eval_.evaluations(), campaign_seconds(),
                        stage_seconds_offset_ + elapsed(), j0_, s_eps_, s_sig_, sigma_ref_, eps_ref_,
                        sigma_sensitivity_, ""},
                       stage_done || !least_ || least_iteration_ == iteration ? nullptr : &*least_});
    }

    void finish(const std::string& why) {
        spdlog::info("stage {} done: {}", stage_.name, why);
        const HistoryRow* last = history_.empty() ? nullptr : &history_.back();
        if (last && last->stage == stage_.name) {
            end_misfit_ = last->misfit;
            if (least_ && least_iteration_ != last->iteration) {
                spdlog::info("stage {} ends at iteration {}, its least misfit ({:.6g} against {:.6g} at iteration {})",
                             stage_.name, least_iteration_, least_misfit_, last->misfit, last->iteration);
                copy_parallel(least_->eps_r, model_.eps_r);
                copy_parallel(least_->sigma, model_.sigma);
                end_misfit_ = least_misfit_;
            }
        }
        if (spec_.taper_fill) fill_taper_held();
        write_iteration(last ? last->iteration : 0, true);
        log_times();
    }

    /// The antennas' own nodes, which the taper holds at the stage's start,
    /// take the mean of their free neighbours (InversionSpec::taper_fill);
    /// after the stage's last iterate, so that its history stays its own.
    void fill_taper_held() {
        const std::vector<std::size_t> held = taper_held_nodes(spec_, model_.grid);
        filled_ = fill_held_nodes(held, weight_, stage_.invert_eps_r, stage_.invert_sigma, model_);
        follow_edges(links_, model_);  // an antenna node one in from an edge is that edge's inner node
        if (filled_ > 0)
            spdlog::info("stage {}: the {} antenna nodes the taper holds take the mean of their free neighbours "
                         "(inversion.taper.fill)",
                         stage_.name, filled_);
    }

    void log_times() const {
        const StageTimes& t = times_;
        const double wall = elapsed();
        const double in_solve = t.evaluations - t.evaluations_before_solve;
        spdlog::info("stage {}: {:.2f} s, of which {:.2f} s ({:.0f}%) in {} evaluations of the objective; around them "
                     "{:.2f} s of the driver's work, {:.2f} s of set-up (calibration's bookkeeping, weights, TAO's "
                     "vectors {:.2f} s), {:.2f} s smoothing updates, {:.2f} s recording iterations (handing files to the "
                     "writer {:.2f} s), {:.2f} s in TAO's own steps, {:.2f} s finishing",
                     stage_.name, wall, t.evaluations, 100.0 * t.evaluations / std::max(wall, 1e-9), eval_.evaluations(),
                     t.callbacks - in_solve, t.before_solve - t.evaluations_before_solve, t.optimiser_setup,
                     t.smoothing, t.monitor, t.writing,
                     t.solve - t.callbacks - t.monitor - t.smoothing,
                     wall - t.before_solve - t.solve);
    }

    void solve(int max_iterations) {
        StageSolver solver(spec_, stage_, method_, smoothing_, params_.size() * n_, times_, failure_, *this, t0_);
        const StageSolver::Outcome out = solver.solve(variables(), model_, max_iterations);
        if (failure_) std::rethrow_exception(failure_);
        if (stopped_) return;  // the last accepted iteration's checkpoint stands
        if (out.petsc_error != 0)
            throw Error(fmt::format("stage {}: TAO failed (PETSc error code {})", stage_.name, out.petsc_error));
        variables().model_from_x(out.x.data(), model_);
        finish(out.reason);
    }

    const InversionSpec& spec_;
    const StageSpec& stage_;
    InversionObjective& objective_;
    Model& model_;
    const EdgeLinks& links_;  // the edges that follow their inner nodes (spec.edges), the campaign's
    std::vector<HistoryRow>& history_;
    int stage_index_;
    double& sigma_sensitivity_;  // the campaign's (sigma_sensitivity), from its first calibration; 0: not yet
    std::size_t n_;
    std::vector<int> params_;  // 0: eps_r, 1: sigma
    StageTimes times_;
    StageOutput output_;
    std::vector<double> weight_;  // update_weights(spec), times the illumination preconditioner where it is on
    std::vector<double> preconditioner_;  // illumination factors, 1 without
    std::vector<char> masked_;
    double s_eps_ = 1, s_sig_ = 1, eps_ref_ = 1, sigma_ref_ = 1, j0_ = 1;
    std::size_t filled_ = 0;
    int iteration_offset_ = 0, evaluation_offset_ = 0, propagation_offset_ = 0;
    InversionMethod method_ = InversionMethod::lbfgs;
    double stage_seconds_offset_ = 0, campaign_offset_ = 0;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
    bool stopped_ = false;
    std::exception_ptr failure_;
    StageObjective eval_{objective_, stage_, times_.evaluations};  // the data misfit, its gradient, the propagations
    Model trial_;  // the model of the evaluation in progress
    std::optional<Model> least_;  // the least-misfit iterate so far, where the stage ends at it (ends_at_least_misfit)
    int least_iteration_ = -1;
    double least_misfit_ = HUGE_VAL;
    std::optional<double> end_misfit_;
    StageRegularization regularization_;
    StageSmoothing smoothing_;
};

}  // namespace

FwiObjective::FwiObjective(DistributedRunner& runner, Traces observed, MisfitKind kind, double water_level)
    : runner_(runner), observed_(std::move(observed)), kind_(kind), water_level_(water_level) {}

const BandLimitedMisfit& FwiObjective::band_misfit(CachedMisfit& cache, MisfitKind kind, double cutoff_hz) {
    if (!cache.misfit || cache.kind != kind || cache.cutoff_hz != cutoff_hz) {
        parallel::collectively([&] {
            cache.misfit = std::make_unique<BandLimitedMisfit>(kind, runner_.shots(), observed_, cutoff_hz, runner_.survey().dt);
        });
        cache.kind = kind;
        cache.cutoff_hz = cutoff_hz;
    }
    return *cache.misfit;
}

FwiObjective::~FwiObjective() = default;

WaveletProjection& FwiObjective::projection(double cutoff_hz) {
    if (!projection_ || projection_cutoff_hz_ != cutoff_hz) {
        parallel::collectively([&] {
            // the filter's lags: one period of the stage's wavelet either way
            const Survey& survey = runner_.survey();
            const double f = dominant_frequency(survey.shots.front().wavelet, survey.dt);
            const int lags = std::clamp(static_cast<int>(std::lround(1 / (f * survey.dt))), 0, survey.nt - 1);
            projection_ = std::make_unique<WaveletProjection>(kind_, runner_.shots(), observed_, survey.nt, cutoff_hz,
                                                              survey.dt, water_level_, lags);
        });
        projection_cutoff_hz_ = cutoff_hz;
    }
    return *projection_;
}

WaveletProjection& FwiObjective::fitted_projection(const Traces& synthetic, const StageSpec& stage) {
    WaveletProjection& p = projection(stage.max_frequency_hz);
    p.fit(synthetic);
    spdlog::debug("wavelet projected out: the filter's gain {:.4g}", p.gain());
    return p;
}

std::vector<double> InversionObjective::projected_wavelet(const Model&, const StageSpec&) { return {}; }

AmplitudeRatio InversionObjective::amplitude_ratio(const Model&) { return {}; }

AmplitudeRatio FwiObjective::amplitude_ratio(const Model& model) {
    const Traces synthetic = runner_.forward(model);
    std::vector<double> observed_peak, modelled_peak;
    for (std::size_t i = 0; i < synthetic.size(); ++i)
        for (int r = 0; r < synthetic[i].n_receivers(); ++r) {
            observed_peak.push_back(trace_peak(observed_[i].receiver(r), synthetic[i].nt()));
            modelled_peak.push_back(trace_peak(synthetic[i].receiver(r), synthetic[i].nt()));
        }
    double largest = 0;
    for (double o : observed_peak) largest = std::max(largest, o);
    const double floor = kAmplitudeFloor * parallel::max(largest);
    double log_sum = 0, count = 0;
    for (std::size_t k = 0; k < observed_peak.size(); ++k)
        if (observed_peak[k] > floor && modelled_peak[k] > floor) log_sum += std::log(observed_peak[k] / modelled_peak[k]), ++count;
    log_sum = parallel::sum(log_sum);
    count = parallel::sum(count);
    if (count == 0) return {};
    return {std::exp(log_sum / count), static_cast<long>(count)};
}

std::vector<double> FwiObjective::projected_wavelet(const Model& model, const StageSpec& stage) {
    if (!stage.project_wavelet) return {};
    return fitted_projection(runner_.forward(model), stage).filtered(runner_.survey().shots.front().wavelet);
}

double FwiObjective::misfit(const Model& model, const StageSpec& stage, std::optional<MisfitKind> kind) {
    const MisfitKind k = kind.value_or(kind_);
    const Traces synthetic = runner_.forward(model);
    const WaveletProjection* projected = stage.project_wavelet && k == kind_ ? &fitted_projection(synthetic, stage) : nullptr;
    const ShotMisfit& m = projected ? static_cast<const ShotMisfit&>(*projected)
                                    : band_misfit(k == kind_ ? own_ : other_, k, stage.max_frequency_hz);
    double j = 0;
    parallel::collectively([&] {
        for (std::size_t i = 0; i < synthetic.size(); ++i) {
            ShotTraces adjoint;  // (the misfit writes its adjoint source; unused here)
            j += m.evaluate(runner_.shots()[i], synthetic[i], adjoint);
        }
    });
    return parallel::sum(j) + (projected ? projected->regularization() : 0.0);
}

double InversionObjective::misfit(const Model& model, const StageSpec& stage, std::optional<MisfitKind>) {
    Array2D ge(model.grid.nz, model.grid.nx), gs(model.grid.nz, model.grid.nx);  // (evaluate's, the model's shape)
    return evaluate(model, stage, ge, gs);
}

double FwiObjective::evaluate(const Model& model, const StageSpec& stage, Array2D& grad_eps_r, Array2D& grad_sigma) {
    if (stage.project_wavelet) {  // Phi(m) = min_F J(F s(m)) + its term of F; dPhi/dm at the F that fits
        const WaveletProjection& p = fitted_projection(runner_.forward(model), stage);
        GradientResult g = runner_.gradient(model, p);
        grad_eps_r = std::move(g.grad_eps_r);
        grad_sigma = std::move(g.grad_sigma);
        if (runner_.propagator().options().illumination) last_illumination_ = std::move(g.illumination);
        return g.misfit + p.regularization();
    }
    GradientResult g = runner_.gradient(model, band_misfit(own_, kind_, stage.max_frequency_hz));
    grad_eps_r = std::move(g.grad_eps_r);
    grad_sigma = std::move(g.grad_sigma);
    if (runner_.propagator().options().illumination) last_illumination_ = std::move(g.illumination);
    return g.misfit;
}

int FwiObjective::hessian_vector(const Model& model, const StageSpec& stage, const Array2D& v_eps_r,
                                 const Array2D& v_sigma, HessianKind kind, Array2D& hv_eps_r, Array2D& hv_sigma) {
    // with the wavelet projected out: the Hessian at the filter the evaluation at this model fitted (F held)
    const ShotMisfit& misfit = stage.project_wavelet && projection_ ? static_cast<const ShotMisfit&>(*projection_)
                                                                    : band_misfit(own_, kind_, stage.max_frequency_hz);
    HessianResult h = runner_.hessian(model, misfit, {v_eps_r, v_sigma}, kind);
    hv_eps_r = std::move(h.hv_eps_r);
    hv_sigma = std::move(h.hv_sigma);
    // the Born run (and the background's forward unless its levels were kept), the adjoint (two for full products)
    const bool kept = runner_.timings().background_kept;
    return (kept ? 1 : 2) + (kind == HessianKind::full ? 2 : 1);
}

int InversionObjective::hessian_vector(const Model&, const StageSpec&, const Array2D&, const Array2D&, HessianKind,
                                       Array2D&, Array2D&) {
    throw InvalidArgument("this objective has no Hessian-vector products: use inversion.method lbfgs");
}

InversionMethod parse_inversion_method(const std::string& name) { return kInversionMethodNames.parse(name); }
const char* to_string(InversionMethod m) { return kInversionMethodNames.name(m); }
EdgeRule parse_edge_rule(const std::string& name) { return kEdgeRuleNames.parse(name); }
const char* to_string(EdgeRule r) { return kEdgeRuleNames.name(r); }

double FwiObjective::evaluate_with_illumination(const Model& model, const StageSpec& stage, Array2D& grad_eps_r,
                                                Array2D& grad_sigma, Array2D& illumination) {
    runner_.propagator().set_illumination(true);
    double j = 0;
    try {
        j = evaluate(model, stage, grad_eps_r, grad_sigma);
    } catch (...) {
        runner_.propagator().set_illumination(false);
        throw;
    }
    runner_.propagator().set_illumination(false);
    illumination = std::move(last_illumination_);
    return j;
}

double InversionObjective::evaluate_with_illumination(const Model& model, const StageSpec& stage, Array2D& grad_eps_r,
                                                      Array2D& grad_sigma, Array2D& illumination) {
    illumination = Array2D(model.grid.nz, model.grid.nx, 1.0);
    return evaluate(model, stage, grad_eps_r, grad_sigma);
}

std::vector<double> InversionObjective::estimate_wavelet(const Model&, double) {
    throw InvalidArgument("this objective has no source wavelet to estimate");
}

void InversionObjective::set_wavelet(const std::vector<double>&) {
    throw InvalidArgument("this objective has no source wavelet");
}

std::vector<double> FwiObjective::estimate_wavelet(const Model& model, double water_level) {
    const Traces synthetic = runner_.forward(model);
    const Survey& survey = runner_.survey();
    WaveletEstimator estimator(survey.nt);
    for (std::size_t i = 0; i < synthetic.size(); ++i)
        for (int r = 0; r < synthetic[i].n_receivers(); ++r) estimator.add(synthetic[i].receiver(r), observed_[i].receiver(r));
    parallel::sum(estimator.sums().data(), estimator.sums().size());
    const std::vector<double> w = estimator.estimate(survey.shots.front().wavelet, water_level);
    set_wavelet(w);
    return w;
}

double FwiObjective::wavelet_dt() const { return runner_.survey().dt; }

void FwiObjective::set_wavelet(const std::vector<double>& wavelet) {
    runner_.set_wavelet(wavelet);
    own_.misfit.reset();  // nothing cached depends on it, but keep the state simple
    other_.misfit.reset();
    projection_.reset();  // its lags and its water level's scale follow the wavelet
}

void install_stop_signal_handlers() {
    struct sigaction sa = {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGUSR1, &sa, nullptr);
}

bool stop_requested() { return g_stop != 0; }
void request_stop() { g_stop = 1; }
void clear_stop_request() { g_stop = 0; }

namespace {

std::string wavelet_file(const std::string& out_dir, int stage_index, const std::string& name) {
    return (std::filesystem::path(out_dir) / fmt::format("wavelet_{:02}_{}.h5", stage_index + 1, name)).string();
}

/// Before stage k: on a resume, restore the latest estimated wavelet of the
/// stages already begun; then, for a stage that estimates one and has not yet,
/// estimate it (collectively) and write it out (rank 0).
void prepare_wavelet(const InversionSpec& spec, InversionObjective& objective, const Model& model, const std::string& out_dir,
                     const std::string& config, int k, int first, bool resumed) {
    const StageSpec& stage = spec.stages[static_cast<std::size_t>(k)];
    int restored = -1;
    if (resumed && k == first) {
        for (int j = k; j >= 0 && restored < 0; --j) {
            const StageSpec& s = spec.stages[static_cast<std::size_t>(j)];
            const std::string file = wavelet_file(out_dir, j, s.name);
            if (!s.estimate_wavelet || !std::filesystem::exists(file)) continue;
            objective.set_wavelet(read_vector_h5(file, "wavelet", objective.wavelet_dt()));
            restored = j;
            spdlog::info("stage {}: using the wavelet estimated for stage {} ({})", stage.name, s.name, file);
        }
    }
    if (!stage.estimate_wavelet || restored == k) return;
    const std::vector<double> w = objective.estimate_wavelet(model, spec.wavelet_water_level);
    const std::string file = wavelet_file(out_dir, k, stage.name);
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        write_vector_h5(file, "wavelet", w, objective.wavelet_dt(),
                        "wavelet: source current in A at t = (n + 1/2) dt; dt: s", config);
    });
    double peak = 0;
    for (double v : w) peak = std::max(peak, std::abs(v));
    spdlog::info("stage {}: estimated the source wavelet (water level {}), peak {:.4g} A; wrote {}", stage.name,
                 spec.wavelet_water_level, peak, file);
}

/// After a stage that projects the wavelet out: the wavelet that fits its
/// model best, written (rank 0) beside the stage's estimate.
void write_projected_wavelet(InversionObjective& objective, const Model& model, const StageSpec& stage, int k,
                             const std::string& out_dir, const std::string& config) {
    const std::vector<double> w = objective.projected_wavelet(model, stage);
    const std::string file = wavelet_file(out_dir, k, stage.name + "_projected");
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        write_vector_h5(file, "wavelet", w, objective.wavelet_dt(),
                        "wavelet: source current in A at t = (n + 1/2) dt, the stage's wavelet filtered by the projection "
                        "that fits its final model; dt: s", config);
    });
    double peak = 0;
    for (double v : w) peak = std::max(peak, std::abs(v));
    spdlog::info("stage {}: the wavelet that fits its model (projected out at every evaluation), peak {:.4g} A; wrote {}",
                 stage.name, peak, file);
}

std::string flood_file(const std::string& out_dir, int stage_index, const std::string& name) {
    return (std::filesystem::path(out_dir) / fmt::format("flood_{:02}_{}.h5", stage_index + 1, name)).string();
}

/// Where a flooding stage starts from, and the misfit of the model it
/// floods (begin_flood).
struct FloodStart {
    Model model;
    double misfit_before;
};

/// Before a flooding stage k (StageSpec::flood) begins: where the stage
/// before it ended, written to its file (rank 0; a resume reads it back),
/// and `model` flooded, its edges following `links`, with the band
/// (FloodBand: each column's deepest change, and its deepest jump in change
/// where that differs) and step height whose model fits the stage's data
/// best (every height from kFloodLeastHeight to kFloodGreatestHeight in
/// steps of kFloodHeightStep; one forward run each, collective); `model`
/// itself where that step fits the data more than kFloodMisfitFactor times
/// worse than `model` (flood_fits); with `model`'s misfit in the stage's
/// data, which settle_flood needs again after the stage.
FloodStart begin_flood(const Model& model, const Model& start, const std::vector<double>& weight,
                       const EdgeLinks& links, const StageSpec& stage, int k, const InversionSpec& spec,
                       InversionObjective& objective, const std::string& out_dir, const std::string& config) {
    const std::string file = flood_file(out_dir, k, stage.name);
    parallel::collectively([&] {
        if (parallel::is_root()) write_model_h5(file, model, config);
    });
    // the bands to flood from: each column's deepest change, and where they differ its deepest jump in
    // change (a reflector below a near-surface layer that changed more); the data choose between them
    std::vector<std::pair<const char*, std::vector<FloodColumn>>> bands{
        {"deepest change", flood_columns(model, start, weight, FloodBand::change)}};
    if (std::vector<FloodColumn> jumps = flood_columns(model, start, weight, FloodBand::jump); jumps != bands[0].second)
        bands.emplace_back("deepest jump in change", std::move(jumps));
    // the steps' lateral median over the stage's eps_r smoothing length: what its updates resolve
    const int lateral = static_cast<int>(std::lround(smoothing_length(spec, stage, 0) / start.grid.dx));
    const auto t0 = std::chrono::steady_clock::now();
    auto stop_if_asked = [&] {
        if (stop_requested_anywhere())
            throw StopRequested(fmt::format("stopped by a signal while sizing the flood before stage {}; continue "
                                            "with --resume, which sizes it again",
                                            stage.name));
    };
    std::optional<Model> best;
    double best_height = 0, best_j = HUGE_VAL;
    const char* best_band = bands[0].first;
    std::string tried;
    const int steps = static_cast<int>(std::lround((kFloodGreatestHeight - kFloodLeastHeight) / kFloodHeightStep));
    for (const auto& [band, columns] : bands) {
        tried += fmt::format("{}from each column's {}: ", tried.empty() ? "" : "; ", band);
        for (int i = 0; i <= steps; ++i) {
            const double height = kFloodLeastHeight + i * kFloodHeightStep;
            Model flooded = flood_step(model, start, columns, weight, height, spec.eps_r_min, spec.eps_r_max, lateral);
            follow_edges(links, flooded);  // the step goes on into the CPML, as in the stage that starts from it
            const double j = objective.misfit(flooded, stage);
            stop_if_asked();
            tried += fmt::format("{}{:.4g}: {:.6g}", i ? ", " : "", height, j);
            if (j < best_j) {  // (NaN never wins)
                best_j = j, best_height = height, best_band = band;
                best = std::move(flooded);
            }
        }
    }
    if (!best) throw Error(fmt::format("stage {}: no step height of the flood gave a finite misfit ({})", stage.name, tried));
    const double unflooded = objective.misfit(model, stage);
    stop_if_asked();
    if (!flood_fits(best_j, unflooded)) {
        spdlog::warn("stage {}: no flood: its best step (height {:.4g} from each column's {}) fits the data {:.3g} "
                     "times worse than the model of the stage before it (misfit {:.6g} against {:.6g}; heights tried "
                     "{}; {:.1f} s), more than the {:.3g} times a flood of unseen ground allows: the band it floods "
                     "from is not the deepest reflector; the stage goes on from that model unflooded",
                     stage.name, best_height, best_band, best_j / unflooded, best_j, unflooded, tried,
                     seconds_since(t0), kFloodMisfitFactor);
        return {model, unflooded};
    }
    spdlog::info("stage {}: starts from the model of the stage before it with a step below each column's {}, of "
                 "height {:.4g} (its misfit {:.6g} the least of the heights tried {}; without the flood {:.6g}; {:.1f} "
                 "s); wrote where that stage ended to {}",
                 stage.name, best_band, best_height, best_j, tried, unflooded, seconds_since(t0), file);
    return {std::move(*best), unflooded};
}

/// After a flooding stage k: its model where it fits the stage's data
/// better than `before`, where the stage before it ended; else `before`.
/// `before_misfit`: `before`'s misfit where begin_flood computed it (the
/// objective's wavelet is set before the flood and kept through the stage),
/// else computed here (a resumed campaign).
void settle_flood(Model& model, const Model& before, std::optional<double> before_misfit, const StageSpec& stage,
                  InversionObjective& objective) {
    const double j_flooded = objective.misfit(model, stage);
    const double j_before = before_misfit ? *before_misfit : objective.misfit(before, stage);
    const bool keep = j_flooded < j_before;
    spdlog::info("stage {}: misfit {:.6g} at its end against {:.6g} where the stage before it ended: {}", stage.name,
                 j_flooded, j_before, keep ? "its end kept" : "going on from where the stage before it ended");
    if (!keep) model = before;
}

/// A fresh campaign's look at its start: the observed traces' amplitude
/// against the starting model's, logged, and a warning where they differ by
/// more than kAmplitudeWarnFactor. Not where a stage fits the wavelet to the
/// data (its amplitude then takes up the level), nor where the campaign
/// scans sigma itself.
AmplitudeRatio check_start_amplitudes(const Model& start, const InversionSpec& spec, InversionObjective& objective) {
    if (spec.scan.sigma) return {};
    for (const StageSpec& st : spec.stages)
        if (st.estimate_wavelet || st.project_wavelet) return {};
    const AmplitudeRatio a = objective.amplitude_ratio(start);
    if (a.traces == 0) return a;
    const std::string what = fmt::format("the observed traces are {:.3g} times as strong as the starting model's "
                                         "(geometric mean over {} traces)",
                                         a.ratio, a.traces);
    if (a.ratio > kAmplitudeWarnFactor || a.ratio < 1 / kAmplitudeWarnFactor)
        spdlog::warn("{}: the start's sigma, or the wavelet's amplitude, is likely off (the start attenuates too {}); "
                     "`inversion.scan: [sigma]` scales sigma to fit the data first, `gprfwi tomography --amplitudes` "
                     "estimates it (docs/inversion.md, \"Starting background\")",
                     what, a.ratio < 1 ? "little" : "much");
    else
        spdlog::info("{}", what);
    return a;
}

/// The background scan before the first stage (InversionSpec::scan):
/// the scanned model, with scan.csv and scan.h5 written (rank 0).
Model scan_start(const Model& start, const InversionSpec& spec, InversionObjective& objective, const std::string& out_dir,
                 const std::string& config, const std::optional<Model>& truth) {
    StageSpec stage = spec.stages.front();
    stage.name = "scan";
    stage.max_frequency_hz = spec.scan.max_frequency_hz;
    const auto t0 = std::chrono::steady_clock::now();
    const ScanResult scan = scan_background(start, spec, [&](const Model& m, const char* parameter) {
        const bool eps_r = std::string_view(parameter) == "eps_r";
        const double j = objective.misfit(m, stage, eps_r ? std::optional(MisfitKind::normalized) : std::nullopt);
        if (stop_requested_anywhere())
            throw StopRequested("stopped by a signal during the background scan, before any checkpoint; run again without --resume");
        return j;
    });
    const std::filesystem::path dir(out_dir);
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        write_text_atomically((dir / "scan.csv").string(), scan_csv(scan));
        write_model_h5((dir / "scan.h5").string(), scan.model, config);
    });
    double j_best = HUGE_VAL;
    for (const ScanPoint& p : scan.points) j_best = std::min(j_best, p.misfit);
    std::string errors;
    if (truth)
        errors = fmt::format("; model errors eps_r {:.4g} -> {:.4g}, sigma {:.4g} -> {:.4g}", relative_error(start.eps_r, truth->eps_r),
                             relative_error(scan.model.eps_r, truth->eps_r), relative_error(start.sigma, truth->sigma),
                             relative_error(scan.model.sigma, truth->sigma));
    spdlog::info("background scan ({} forward runs, {:.1f} s, {}): eps_r x {:.4g}, sigma x {:.4g}, "
                 "misfit {:.6g}{}; wrote {} and {}",
                 scan.points.size(), seconds_since(t0),
                 stage.max_frequency_hz > 0 ? fmt::format("data below {:.4g} Hz", stage.max_frequency_hz) : "all data",
                 scan.eps_r_factor, scan.sigma_factor, j_best, errors, (dir / "scan.csv").string(),
                 (dir / "scan.h5").string());
    return scan.model;
}

}  // namespace

double dominant_wavelength(const Model& model, double f_dominant_hz) {
    return speed_of_light() / (f_dominant_hz * std::sqrt(model.max_eps_mu()));
}

AutomaticSettings automatic_settings(double wavelength_m, const Grid& grid) {
    AutomaticSettings a;
    a.smoothing_eps_r_m = kAutoSmoothingWavelengths * wavelength_m;
    a.smoothing_sigma_m = kAutoSigmaSmoothingWavelengths * wavelength_m;
    a.taper_radius_m = std::max(kAutoTaperWavelengths * wavelength_m, std::max(grid.dx, grid.dz));
    a.area_m2 = std::max(grid.nx - 1, 1) * grid.dx * std::max(grid.nz - 1, 1) * grid.dz;
    a.total_variation = kAutoTotalVariation * wavelength_m / a.area_m2;
    return a;
}

double sigma_total_variation_share(double sensitivity) {
    if (!(sensitivity > 0)) return 1.0;
    return std::clamp(kSigmaSensitivityReference / sensitivity, kSigmaTotalVariationLeastShare, 1.0);
}

std::vector<StageSpec> automatic_stages(double f_dominant_hz) {
    StageSpec low;
    low.name = "low";
    low.max_frequency_hz = kAutoLowBandOfDominant * f_dominant_hz;
    low.invert_eps_r = low.invert_sigma = true;
    low.iterations = 15;
    low.min_relative_decrease = 0.005;
    low.decrease_window = 5;
    StageSpec full = low;
    full.name = "full";
    full.max_frequency_hz = 0;
    full.iterations = kAutoFullBandMaxIterations;
    full.min_iterations = kAutoFullBandIterations;
    full.min_relative_decrease = kAutoFullBandMinDecrease;
    full.decrease_window = kAutoFullBandDecreaseWindow;
    full.min_relative_change = kAutoFullBandMinChange;
    return {low, full};
}

InversionResult invert(const Model& start, const InversionSpec& spec, InversionObjective& objective,
                       const std::string& out_dir, const std::string& config_text, bool resume) {
    if (spec.stages.empty()) throw InvalidArgument("inversion: no stages");
    if (!(spec.sigma_min > 0)) throw InvalidArgument("inversion: the lower bound of sigma must be > 0 (sigma is optimised as its logarithm)");
    InversionResult result;
    result.model = start;
    std::optional<Model> truth;
    if (!spec.true_model.empty()) truth = read_model_h5(spec.true_model, start.grid);
    std::optional<CheckpointState> state;
    const std::string checkpoint = checkpoint_path(out_dir);
    if (parallel::is_root())
        for (const std::string& f : remove_stale_temporaries(out_dir))
            spdlog::warn("removed {}, left by a run that ended while writing it", f);
    if (resume) {
        if (!std::filesystem::exists(checkpoint))
            throw Error(fmt::format("{}: no checkpoint to resume from (run without --resume first)", checkpoint));
        ModelFileExtras a = checkpoint_attributes({});
        result.model = read_model_h5(checkpoint, start.grid, &a);
        const CheckpointState s = checkpoint_state(a);
        if (s.stage < 0 || s.stage >= static_cast<int>(spec.stages.size()))
            throw Error(fmt::format("{}: stage {} is not a stage of this campaign", checkpoint, s.stage));
        result.history = parse_history(s.history_csv);
        // the checkpoint's last row is of its stage: where this campaign's stage of that index has another
        // name, its stages changed since the run began, and the resume would run them from the wrong place
        if (!result.history.empty() && result.history.back().stage != spec.stages[s.stage].name)
            throw Error(fmt::format("{}: the checkpoint is of stage {} ({}), but this campaign's stage {} is {}: its "
                                    "stages changed since the run began (inversion.stages, or the automatic stages "
                                    "of another version: inversion.sigma_first, inversion.flood); resume with the "
                                    "stages it ran (its log writes them out), or run again without --resume",
                                    checkpoint, s.stage + 1, result.history.back().stage, s.stage + 1,
                                    spec.stages[s.stage].name));
        state = s;
        spdlog::info("resuming from {}: stage {} ({}), {} history rows", checkpoint, spec.stages[s.stage].name,
                     s.stage_done ? "done" : fmt::format("after iteration {}", s.iterations), result.history.size());
    } else if (parallel::is_root()) {
        std::error_code ec;
        std::filesystem::remove(checkpoint, ec);  // a fresh run never resumes an old one by accident
    }
    const EdgeLinks links = edge_links(spec, start.grid);  // every model handed on follows them
    // the start, or a checkpoint (which follows them unless it was written under another rule)
    follow_edges(links, result.model);
    spdlog::info("the model's edges: {} ({})", to_string(spec.edges),
                 spec.edges == EdgeRule::follow  ? "each outermost node outside the mask takes its inner neighbour's value"
                 : spec.edges == EdgeRule::fixed ? "held at the start's values"
                                                 : "variables of their own");
    if (!resume) {
        result.start_amplitudes = check_start_amplitudes(result.model, spec, objective);
        if (spec.scan.eps_r || spec.scan.sigma) result.model = scan_start(result.model, spec, objective, out_dir, config_text, truth);
    }
    double seconds = state ? state->seconds : 0.0;
    const int first = state ? state->stage + (state->stage_done ? 1 : 0) : 0;
    BackgroundWriter writer;  // rank 0's
    double sigma_sensitivity = state ? state->sigma_sensitivity : 0.0;
    const std::vector<double> weight = update_weights(spec, start.grid);
    if (state && state->stage_done && first > 0 && spec.stages[static_cast<std::size_t>(first - 1)].flood) {
        // a flooding stage finished, its choice not yet made
        const StageSpec& flooding = spec.stages[static_cast<std::size_t>(first - 1)];
        const Model before = read_model_h5(flood_file(out_dir, first - 1, flooding.name), start.grid);
        settle_flood(result.model, before, std::nullopt, flooding, objective);
    }
    std::size_t last_filled = 0;  // the nodes the fill changed after the last stage's last row
    std::optional<double> last_end_misfit;  // the iterate's the last stage ended at, where it ran in this call
    bool last_flooded = false;              // ... and where it flooded, settle_flood chose the model after it
    for (int k = first; k < static_cast<int>(spec.stages.size()); ++k) {
        const StageSpec& stage = spec.stages[static_cast<std::size_t>(k)];
        if (propagation_budget_spent(spec.max_propagations, result.history)) {
            spdlog::info("stage {} and any after it skipped: the campaign's budget of {} propagations is spent ({})",
                         stage.name, spec.max_propagations, campaign_propagations(result.history));
            break;
        }
        spdlog::info("stage {} ({} of {}): {}{}, up to {} iterations{}", stage.name, k + 1, spec.stages.size(),
                     stage.invert_eps_r ? (stage.invert_sigma ? "eps_r and sigma" : "eps_r") : "sigma",
                     stage.max_frequency_hz > 0 ? fmt::format(", data below {:.4g} Hz", stage.max_frequency_hz) : "",
                     stage.iterations, "");
        prepare_wavelet(spec, objective, result.model, out_dir, config_text, k, first, state.has_value());
        std::optional<Model> before_flood;  // a flooding stage's: where the stage before it ended
        std::optional<double> before_flood_misfit;  // ... and its misfit, where begin_flood computed it
        if (stage.flood && state && state->stage == k && !state->stage_done) {
            before_flood = read_model_h5(flood_file(out_dir, k, stage.name), start.grid);
        } else if (stage.flood) {
            before_flood = result.model;
            FloodStart flooded =
                begin_flood(result.model, start, weight, links, stage, k, spec, objective, out_dir, config_text);
            result.model = std::move(flooded.model);
            before_flood_misfit = flooded.misfit_before;
        }
        StageRun run(spec, stage, objective, result.model, links, weight, result.history, out_dir, config_text, truth,
                     k, writer, sigma_sensitivity);
        std::optional<CheckpointState> resume_state;
        if (state && state->stage == k && !state->stage_done) resume_state = state;
        try {
            run.run(resume_state, seconds);
        } catch (...) {
            if (parallel::is_root()) try {  // (the last accepted iteration's checkpoint on disk before the error leaves)
                    writer.wait();
                } catch (...) {
                }
            throw;
        }
        parallel::collectively([&] {
            if (parallel::is_root()) writer.wait();
        });
        seconds = run.campaign_seconds();
        if (stage.project_wavelet && !run.stopped_by_signal())
            write_projected_wavelet(objective, result.model, stage, k, out_dir, config_text);
        if (run.stopped_by_signal())
            throw StopRequested(fmt::format("stopped by a signal during stage {}; {} holds the last accepted iteration; "
                                            "continue with --resume", stage.name, checkpoint));
        if (before_flood) settle_flood(result.model, *before_flood, before_flood_misfit, stage, objective);
        if (k + 1 == static_cast<int>(spec.stages.size())) {
            last_filled = run.filled();
            last_end_misfit = run.end_misfit();
            last_flooded = before_flood.has_value();
        }
    }
    const StageSpec& last = spec.stages.back();
    if (last_end_misfit && (last_filled > 0 || last_flooded)) {  // the rows are the iterates': the model's own
        result.final_misfit = objective.misfit(result.model, last);
        spdlog::info("stage {}: misfit {:.6g} of the final model{} (the iterate it ended at {:.6g})", last.name,
                     *result.final_misfit, last_filled > 0 ? ", the antennas' nodes filled" : "", *last_end_misfit);
    } else {
        result.final_misfit = last_end_misfit;
    }
    if (truth) {
        result.final_error_eps_r = relative_error(result.model.eps_r, truth->eps_r);
        result.final_error_sigma = relative_error(result.model.sigma, truth->sigma);
    }
    ModelFileExtras final_extras;
    if (result.final_misfit) {
        final_extras.numbers["misfit"] = *result.final_misfit;
        final_extras.texts["misfit_stage"] = last.name;
    }
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        write_model_h5((std::filesystem::path(out_dir) / "model_final.h5").string(), result.model, config_text,
                       final_extras);
    });
    return result;
}

PetscSession::PetscSession(const std::string& options) {
    install_petsc_allocator();
    GPRFWI_PETSC(PetscInitializeNoArguments());
    PetscPopSignalHandler();                              // SIGTERM/SIGUSR1 are ours (checkpoint and exit 3)
    PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);  // errors come back as codes, reported by us
    if (!options.empty()) GPRFWI_PETSC(PetscOptionsInsertString(nullptr, options.c_str()));
}

PetscSession::~PetscSession() { PetscFinalize(); }

std::string petsc_version() {
    return fmt::format("{}.{}.{}", PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR);
}

}  // namespace gprfwi
