#pragma once
// Inversion campaigns: stages of PETSc TAO bound-constrained optimisation
// (BLMVM by default) over eps_r and sigma. The objective is anything that
// returns a data misfit and its gradient for a model (FWI over MPI ranks, or
// an analytic function in tests); this file owns the scaling, bounds, frozen
// parameters, masks, regularisation, stopping rules, history, checkpoints and
// resuming.

#include <csignal>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/data_misfits.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/model_builder.hpp"
#include "gprfwi/names.hpp"
#include "gprfwi/propagator.hpp"

namespace gprfwi {

/// How a stage's optimiser steps (docs/inversion.md, "Methods"): TAO's
/// bounded L-BFGS (blmvm), or its bounded Newton line search (bnls) with
/// exact Hessian-vector products, Gauss-Newton (J^T H_d J: positive
/// semi-definite, two propagations a product at the current model) or full
/// (the second-order adjoint; CPU backend).
enum class InversionMethod { lbfgs, gauss_newton, newton };
/// What the model's outermost nodes, which set the CPML beyond them, hold
/// (InversionSpec::edges; docs/inversion.md, "Edges").
enum class EdgeRule { follow, fixed, free };
enum class NewtonPreconditioner { smoothing, lbfgs };
inline constexpr NameTable<InversionMethod, 3> kInversionMethodNames{
    "inversion method",
    {{{InversionMethod::lbfgs, "lbfgs"}, {InversionMethod::gauss_newton, "gauss_newton"}, {InversionMethod::newton, "newton"}}}};
inline constexpr NameTable<EdgeRule, 3> kEdgeRuleNames{
    "edge rule", {{{EdgeRule::follow, "follow"}, {EdgeRule::fixed, "fixed"}, {EdgeRule::free, "free"}}}};
inline constexpr NameTable<NewtonPreconditioner, 2> kNewtonPreconditionerNames{
    "Newton preconditioner", {{{NewtonPreconditioner::smoothing, "smoothing"}, {NewtonPreconditioner::lbfgs, "lbfgs"}}}};
InversionMethod parse_inversion_method(const std::string& name);
const char* to_string(InversionMethod m);
EdgeRule parse_edge_rule(const std::string& name);
const char* to_string(EdgeRule r);

struct StageSpec {
    std::string name;
    double max_frequency_hz = 0;  // low-pass cut-off of observed and synthetic data; 0: none
    bool invert_eps_r = true, invert_sigma = false;
    int iterations = 20;                // accepted iterations at most
    /// Stop when J fell by less than this (relative) over `decrease_window`
    /// iterations; 0: off. A stage with the rule ends at its least-J iterate,
    /// however it stops (ends_at_least_misfit).
    double min_relative_decrease = 0;
    int decrease_window = 3;
    /// The rule above applies once the stage has run this many iterations,
    /// and the least-J iterate it ends at is one of those from here on: a
    /// stage that runs at least this long, and on while its misfit still
    /// falls.
    int min_iterations = 0;
    /// With min_relative_decrease: the rule stops the stage only where the
    /// model has settled too, eps_r and sigma each having moved by less than
    /// this over the same window (the sum of its iterations'
    /// HistoryRow::change_eps_r, change_sigma); 0: off. A misfit that has
    /// flattened while the model still moves is a flat valley that the
    /// model is still crossing.
    double min_relative_change = 0;
    double gradient_tolerance = 0;      // stop when |g| < tol |g0| (TAO's gttol); 0: off
    double max_seconds = 0;             // wall-time budget of the stage; 0: none
    int max_evaluations = 0;            // 0: 4 x iterations + 10
    bool estimate_wavelet = false;      // least-squares wavelet at the stage's start (kept by later stages)
    /// Project the wavelet out of the misfit at every evaluation (the best
    /// filter of the stage's wavelet for the model; wavelet_projection.hpp).
    bool project_wavelet = false;
    double smoothing_m = -1;            // gradient smoothing of this stage's eps_r, m; < 0: InversionSpec::smoothing_m
    double smoothing_sigma_m = -1;      // ... and of its sigma; < 0: InversionSpec::smoothing_sigma_m
    std::optional<InversionMethod> method;  // none: InversionSpec::method
    /// Start from the stage before's model flooded (flood_columns against the
    /// campaign's starting model, then flood_step of the band and height
    /// whose model fits this stage's data best), and keep what this stage ends
    /// with only where its misfit is below that of the stage before's model
    /// in this stage's data; else go on from the stage before's model.
    bool flood = false;
};

/// The background scan before the first stage of a fresh run
/// (background_scan.hpp): the starting model's eps_r, then its sigma,
/// outside the mask scaled by the factor whose data fit best.
struct ScanSpec {
    bool eps_r = false, sigma = false;
    /// The scan's data: below this frequency (0: all), in the campaign's misfit.
    double max_frequency_hz = 0;
    /// Grid step of eps_r's factor in ln(factor); it must be finer than the
    /// misfit's basin, whose half-width is about 1 / (f t) for an arrival at
    /// time t and frequency f (a half period's shift in ln slowness, twice in
    /// ln eps_r).
    double eps_r_step = 0.2;
};

struct RegularizationSpec {
    double tikhonov = 0;       // weight of the smoothness term
    double tv = 0;             // weight of the total-variation term
    double tv_beta = 1e-2;     // per metre
};

/// The pairs of past steps L-BFGS keeps (TAO's own default is 5): the
/// curvature between eps_r and sigma is learnt from them, and on the
/// crosshole cases of the benchmark suite 10 came closer to the truth
/// (docs/inversion.md, "Defaults"). PETSc's option
/// -tao_blmvm_mat_lmvm_hist_size in inversion.petsc_options overrides it.
inline constexpr int kLbfgsHistory = 10;

struct InversionSpec {
    double eps_r_min = 1, eps_r_max = 100;      // bounds, physical units
    double sigma_min = 1e-6, sigma_max = 1.0;   // S/m; > 0 (sigma is optimised as log)
    std::vector<StageSpec> stages;
    /// Each trace's L2 relative to its observed energy by default: every
    /// trace counts alike whatever its amplitude (the near traces do not
    /// drown the far ones, which see the ground between the antennas), and
    /// the amplitudes between traces, which carry sigma, still count
    /// (docs/inversion.md, "Defaults").
    MisfitKind misfit = MisfitKind::relative;
    /// L-BFGS's pairs of past steps (0: TAO's own default).
    int lbfgs_history = kLbfgsHistory;
    RegularizationSpec regularize_eps_r, regularize_sigma;
    /// sigma's total variation weighted by sigma_total_variation_share of the
    /// survey's sensitivity (set where regularization.sigma is auto).
    bool sigma_tv_follows_sensitivity = false;
    /// Change of eps_r, and of ln(sigma), per unit of the optimisation
    /// variable; 0: calibrated at the start of each stage so that a unit
    /// gradient step changes eps_r by `calibration_eps_r_step` (relative) and
    /// ln(sigma) by `calibration_sigma_step` at the most sensitive node.
    double scale_eps_r = 0, scale_sigma = 0;
    double calibration_eps_r_step = 0.05, calibration_sigma_step = 0.2;
    std::string petsc_options;          // e.g. "-tao_type blmvm -tao_ls_type more-thuente"
    std::vector<ModelRegion> mask;      // regions that must not change (air, boreholes)
    /// The outermost nodes (inversion.edges). Each also sets the CPML strip
    /// beyond it (the model is extended into the CPML), so its own gradient
    /// sums the whole strip and, free, it soaks up the update (`free`); held at
    /// the start (`fixed`), it leaves a step between the inverted ground and
    /// the CPML wherever the start is wrong at the edge, a reflector no
    /// interior update can remove; `follow` (the default) gives each the value
    /// of its inner neighbour, so the ground goes on into the CPML as the
    /// interior has it, with the exact gradient (the neighbour gathers the edge's).
    EdgeRule edges = EdgeRule::follow;
    /// Taper around sources and receivers (`taper_points`, m): the update of a
    /// node at distance r < taper_radius_m is scaled by sin^2(pi r / (2 R)),
    /// which damps the source and receiver imprint. Applied as a diagonal
    /// change of variables, so TAO still sees an exact gradient.
    double taper_radius_m = 0;
    std::vector<Position> taper_points;
    /// At each stage's end, the nodes the taper alone holds (the antennas'
    /// own nodes, weight 0) take the mean of their free neighbours, for the
    /// parameters the stage inverts (`taper.fill`): the ground around them
    /// rather than the start.
    bool taper_fill = true;
    bool save_models = true, save_gradients = false;
    std::string true_model;             // HDF5 model for synthetic studies: model errors in the history
    std::vector<std::string> defaults;  // what the run file left to `auto` defaults, in words (logged)
    double wavelet_water_level = 0.01;  // of the wavelet estimate, relative to the strongest frequency
    /// > 0: illumination preconditioning. At each stage's start the forward
    /// field energy I (summed over shots and time) scales each node's update
    /// by (1 + a) / (I / I_max + a) with this stabilisation a, a diagonal
    /// change of variables like the taper (so TAO's gradient stays exact).
    double illumination_stabilization = 0;
    /// > 0: Gaussian smoothing of the updates, standard deviation in m. It
    /// is L-BFGS's initial inverse Hessian (gamma S, S symmetric positive
    /// semi-definite, gamma from the latest step as in standard L-BFGS
    /// scaling), so TAO's gradient, bounds and line search are untouched and
    /// the updates it proposes are smooth. Needs TAO type blmvm or lmvm;
    /// in Newton-type stages it preconditions their CG instead
    /// (newton_preconditioner).
    /// One length for eps_r, one for sigma (S is block diagonal).
    double smoothing_m = 0;
    double smoothing_sigma_m = 0;
    ScanSpec scan;
    InversionMethod method = InversionMethod::lbfgs;
    /// Newton-type methods: the inner conjugate-gradient solve of each
    /// iteration stops after this many Hessian-vector products, or where its
    /// residual fell below this share of the gradient's norm (truncated
    /// Newton).
    int newton_cg_iterations = 10;
    double newton_cg_tolerance = 0.1;
    /// What preconditions that CG: the updates' smoothing (restricted to
    /// the free variables), or TAO's own L-BFGS approximation; unset
    /// (`auto`): the smoothing for Gauss-Newton stages, L-BFGS's for full
    /// Newton ones, whose indefinite Hessian takes long smooth steps in the
    /// low band (docs/inversion.md, "Methods"). Without smoothing, L-BFGS's.
    std::optional<NewtonPreconditioner> newton_preconditioner;
    /// > 0: the campaign's budget of propagations (forward, Born and adjoint
    /// runs, as the history counts them): checked after every iteration, the
    /// campaign stops at the first that reaches it and skips its later
    /// stages. What methods compare at (equal cost), and what a user with a
    /// compute budget sets.
    long max_propagations = 0;
};

/// The standard deviation of parameter p's smoothing in `stage` (0: eps_r,
/// 1: sigma), m: the stage's own, else the campaign's.
double smoothing_length(const InversionSpec& spec, const StageSpec& stage, int p);

/// lambda = c0 / (f sqrt(eps_r mu_r)) with eps_r mu_r the model's largest:
/// the shortest dominant wavelength, which the `auto` lengths follow.
double dominant_wavelength(const Model& model, double f_dominant_hz);

/// Defaults of a campaign that does not set them (docs/inversion.md,
/// "Defaults", for the benchmark figures behind them), in dominant
/// wavelengths lambda = c0 / (f_d sqrt(eps_r mu_r)), f_d the wavelet's
/// dominant frequency and eps_r mu_r the starting model's largest: the
/// standard deviation of the updates' smoothing (eps_r, sigma), and the
/// radius of the taper around each antenna. sigma is smoothed over twice
/// the length: the data resolve it about half as finely (its sensitivity is
/// a quarter period out of phase with eps_r's and weaker), and finer sigma
/// structure is where eps_r's data residuals leak into it.
inline constexpr double kAutoSmoothingWavelengths = 0.25;
inline constexpr double kAutoSigmaSmoothingWavelengths = 0.5;
/// With `stages: auto`, the full-band stage smooths by this share of the
/// lengths above: it starts from the low band's model, whose long
/// wavelengths are in place, and its data resolve finer structure (on the
/// suite it brought eps_r and sigma closer to the truth on every case but
/// the noisy one's eps_r: docs/inversion.md, "Defaults").
inline constexpr double kAutoFullBandSmoothingShare = 0.5;
/// The taper around each antenna: a sixteenth of the dominant wavelength,
/// and at least a cell, so that it reaches the antenna's nearest nodes,
/// where the gradient is singular. A wider one blanks the ground along a
/// line of dense antennas (a borehole's), which the data do see: on the
/// suite a quarter of the wavelength left every crosshole case further from
/// the truth, sigma most; under a cell, a campaign of few cells a
/// wavelength stalled in its first line search (docs/inversion.md,
/// "Defaults").
inline constexpr double kAutoTaperWavelengths = 1.0 / 16.0;
/// Total variation of eps_r / eps_ref and of ln sigma when a campaign names
/// no regularisation of them: weight = this x lambda / (the model's area), so
/// that the term is this many times the mean change over a wavelength,
/// whatever the model's size. On eps_r it favours the sharp boundaries of
/// the ground over the ringing that band-limited data leave beside them; on
/// sigma it keeps sigma from taking up, iteration after iteration, what eps_r
/// has not yet explained (docs/inversion.md, "Defaults").
inline constexpr double kAutoTotalVariation = 0.1;
/// Where the campaign names no regularisation of sigma, the weight of its
/// total variation follows the survey's sensitivity to sigma: the automatic
/// weight times sigma_total_variation_share(R), with R = max|sigma dJ/d sigma|
/// / (eps_ref max|dJ/d eps_r|) from the campaign's first calibration (the
/// data's sensitivity to ln sigma against eps_r / eps_ref, the quantities
/// the terms measure). Data that see sigma well (transmission between
/// boreholes) need less of the term to hold sigma, and are biased by more;
/// reflection data, which hardly see sigma, let it drift without the whole
/// term (docs/inversion.md, "Defaults").
inline constexpr double kSigmaSensitivityReference = 0.15;
/// ... and the least share of the automatic weight sigma keeps.
inline constexpr double kSigmaTotalVariationLeastShare = 0.25;
/// min(1, kSigmaSensitivityReference / R), at least
/// kSigmaTotalVariationLeastShare; 1 where R is not known (R <= 0).
double sigma_total_variation_share(double sensitivity);

/// What the constants above give a campaign for what it does not name, from
/// the dominant wavelength (m) and the model's grid: the smoothing lengths
/// (before the full-band share), the taper's radius, and the total
/// variation's weight, per wavelength over the model's area.
struct AutomaticSettings {
    double smoothing_eps_r_m = 0, smoothing_sigma_m = 0, taper_radius_m = 0;
    double area_m2 = 0, total_variation = 0;
};
AutomaticSettings automatic_settings(double wavelength_m, const Grid& grid);

/// The stages of a campaign that names none (`stages: auto`): eps_r and
/// sigma together in every stage (eps_r alone explains the amplitudes of
/// conductive zones by eps_r artefacts), first the data below this share of
/// the wavelet's dominant frequency `f_dominant_hz` (up to 15 iterations),
/// stopping where its misfit falls by less than 0.5% over 5 iterations (and
/// ending at its least-misfit iterate), then
/// the full band for kAutoFullBandIterations with no rule on its misfit,
/// and on while that still falls (kAutoFullBandMinDecrease) or the model
/// still moves (kAutoFullBandMinChange). The
/// first band's wider basin matters most where reflections alone see the
/// ground (docs/inversion.md, "Defaults").
inline constexpr double kAutoLowBandOfDominant = 0.5;
/// The full band's least iterations under `stages: auto` (without
/// flooding; its StageSpec::min_iterations). No rule on the misfit stops it
/// before them: the crosshole models keep improving long after the misfit
/// has settled, at the data's noise or in a flat valley, so a rule from the
/// first iteration stops them early (docs/inversion.md, "Defaults" and
/// "Benchmarks").
inline constexpr int kAutoFullBandIterations = 320;
/// After those the full band goes on while its misfit still falls by at
/// least kAutoFullBandMinDecrease over kAutoFullBandDecreaseWindow
/// iterations, up to kAutoFullBandMaxIterations in all: a misfit still
/// falling that fast is a model still converging, one whose misfit has
/// settled stops where the fixed count did (docs/inversion.md, "Defaults",
/// `stages`).
inline constexpr double kAutoFullBandMinDecrease = 0.03;
inline constexpr int kAutoFullBandDecreaseWindow = 50;
/// ... or while eps_r or sigma still moves by at least this over the window
/// (StageSpec::min_relative_change): a model whose misfit has flattened but
/// which still moves is crossing a flat valley, and its errors still fall
/// (docs/inversion.md, "Defaults", `stages`).
inline constexpr double kAutoFullBandMinChange = 0.003;
inline constexpr int kAutoFullBandMaxIterations = 960;
/// A survey with antennas within the inverted region gets a stage before the
/// two (`inversion.sigma_first`, read with the campaign): sigma alone on the
/// low band's data, eps_r held at the start. A survey that sees the ground
/// from above only gets a third stage between the two (`inversion.flood`,
/// read with the campaign): the low band again
/// from its model flooded (StageSpec::flood), whose reflections leave the
/// ground below the deepest reflector where the start put it; and a last
/// stage of sigma alone (kAutoFloodedSigmaBandOfLowBand).
std::vector<StageSpec> automatic_stages(double f_dominant_hz);
/// With flooding, the full band's iterations, of eps_r alone (reflections
/// hardly see sigma, whose fine structure the full band then drifts in):
/// where the shots see the ground from about one angle (one trace a shot,
/// or a few offsets close together), the model drifts from the truth as the
/// misfit keeps falling past these, each position's traces fitted by
/// structure that is not the ground's; where a shot's offsets span at least
/// the inverted ground's depth, whose angles constrain the layers, the
/// model keeps improving over twice as many (docs/inversion.md, "Flooding's
/// full band").
inline constexpr int kAutoFloodedFullBandIterations = 40;
inline constexpr int kAutoFloodedWideOffsetFullBandIterations = 80;
/// With flooding, the full band smooths eps_r by this share of the full
/// band's automatic length (kAutoFullBandSmoothingShare of the low band's):
/// its traces are reflections, which the full band fits with eps_r
/// structure that is not the ground's, and a longer length puts that
/// structure into the layers' wavelength (docs/inversion.md, "Flooding").
inline constexpr double kAutoFloodedFullBandSmoothingShare = 0.5;
/// With flooding, the flood stage's iterations (the low band's stopping rule
/// still applies): it starts from a model whose layers below the reflectors
/// are new to the data, and its misfit and model keep improving long after the
/// low band's count (docs/inversion.md, "Flooding").
inline constexpr int kAutoFloodIterations = 60;
/// With flooding, a last stage of sigma alone on the data below this share
/// of the low band's highest frequency, up to kAutoFloodedSigmaIterations
/// (the low band's stopping rule still applies). Reflections see sigma
/// through their amplitudes, whose longest wavelengths the lowest band
/// carries; once the full band has placed the layers (eps_r), sigma alone
/// below f_d / 4 fits them without eps_r taking its share, where the two
/// together in a lower band cost eps_r. Surveys from above only: between
/// boreholes the full band has fitted sigma along every ray, and sigma
/// alone after it drifts from the truth (docs/inversion.md, "Flooding's
/// last stage").
inline constexpr double kAutoFloodedSigmaBandOfLowBand = 0.5;
inline constexpr int kAutoFloodedSigmaIterations = 20;

/// The observed traces' amplitude against a model's: the geometric mean over
/// traces of the ratio of their peaks (observed / modelled), over the traces
/// where both exceed kAmplitudeFloor of the largest observed peak (dead and
/// near-silent traces say nothing of the level). A trace's peak is its
/// strongest arrival (the direct wave between boreholes, the air and ground
/// waves at the surface), which a start without the ground's structure still
/// models; its energy would count the reflections that start lacks.
struct AmplitudeRatio {
    double ratio = 0;  // 0: no trace to compare
    long traces = 0;
};
inline constexpr double kAmplitudeFloor = 1e-3;
/// A fresh campaign whose wavelet is known warns where the starting model's
/// traces are off the observed by more than this factor either way: within
/// it, what the inversion mends by itself; beyond it, a start whose sigma (or
/// a wavelet whose amplitude) is off (docs/inversion.md, "Starting
/// background").
inline constexpr double kAmplitudeWarnFactor = 2.0;

/// The data misfit J(m) and its gradient in physical units (dJ/d eps_r, dJ/d
/// sigma per S/m) for a stage's data. Collective: every rank calls it with
/// the same model and gets the same result.
class InversionObjective {
public:
    virtual ~InversionObjective() = default;
    virtual double evaluate(const Model& model, const StageSpec& stage, Array2D& grad_eps_r, Array2D& grad_sigma) = 0;
    /// The misfit alone, in `kind` where the objective can measure it in
    /// another kind than its own (FWI). The default evaluates its own misfit
    /// and gradient and drops the gradient.
    virtual double misfit(const Model& model, const StageSpec& stage, std::optional<MisfitKind> kind = std::nullopt);
    /// The same, and the forward field's energy per node (GradientResult::
    /// illumination). The default has no wavefields: it returns ones.
    virtual double evaluate_with_illumination(const Model& model, const StageSpec& stage, Array2D& grad_eps_r,
                                              Array2D& grad_sigma, Array2D& illumination);
    /// The least-squares source wavelet for the model (all shots share it),
    /// which the objective then uses. Collective.
    virtual std::vector<double> estimate_wavelet(const Model& model, double water_level);
    /// Use this wavelet from now on (a resumed run restores an estimate).
    virtual void set_wavelet(const std::vector<double>& wavelet);
    /// Sampling interval of the wavelet, s.
    virtual double wavelet_dt() const { return 1.0; }
    /// The product of the misfit's Hessian (full or Gauss-Newton, with
    /// respect to eps_r and sigma per S/m) with the direction (v_eps_r,
    /// v_sigma), into hv_*; returns the propagations it took (a forward, a
    /// Born or an adjoint run each). Collective. The default has none
    /// (InvalidArgument).
    virtual int hessian_vector(const Model& model, const StageSpec& stage, const Array2D& v_eps_r,
                               const Array2D& v_sigma, HessianKind kind, Array2D& hv_eps_r, Array2D& hv_sigma);
    /// The propagations one evaluate() takes (a forward, Born or adjoint run
    /// each): the forward and the adjoint by default.
    virtual int evaluation_propagations(const StageSpec&) const { return 2; }
    /// Where the stage projects the wavelet out: the wavelet that fits best
    /// at `model` (collective; a forward run), else empty.
    virtual std::vector<double> projected_wavelet(const Model& model, const StageSpec& stage);
    /// The observed data's amplitude against `model`'s, all of the data
    /// (collective; a forward run). The default has no traces: ratio 0.
    virtual AmplitudeRatio amplitude_ratio(const Model& model);
};

class DistributedRunner;
class WaveletProjection;  // wavelet_projection.hpp

/// Full-waveform inversion's objective: the stage's misfit of band-limited
/// data over this rank's shots, summed over the ranks, through the runner's
/// propagator (DistributedRunner::gradient).
class FwiObjective final : public InversionObjective {
public:
    /// `observed` holds the traces of runner.shots(), in order.
    /// `water_level` stabilises the projected wavelet (InversionSpec::wavelet_water_level).
    FwiObjective(DistributedRunner& runner, Traces observed, MisfitKind kind, double water_level = 0.01);
    ~FwiObjective() override;
    double evaluate(const Model& model, const StageSpec& stage, Array2D& grad_eps_r, Array2D& grad_sigma) override;
    /// Forward modelling only.
    double misfit(const Model& model, const StageSpec& stage, std::optional<MisfitKind> kind = std::nullopt) override;
    double evaluate_with_illumination(const Model& model, const StageSpec& stage, Array2D& grad_eps_r, Array2D& grad_sigma,
                                      Array2D& illumination) override;
    std::vector<double> estimate_wavelet(const Model& model, double water_level) override;
    void set_wavelet(const std::vector<double>& wavelet) override;
    double wavelet_dt() const override;
    int hessian_vector(const Model& model, const StageSpec& stage, const Array2D& v_eps_r, const Array2D& v_sigma,
                       HessianKind kind, Array2D& hv_eps_r, Array2D& hv_sigma) override;
    /// With the wavelet projected out, a forward run first fits it.
    int evaluation_propagations(const StageSpec& stage) const override { return stage.project_wavelet ? 3 : 2; }
    std::vector<double> projected_wavelet(const Model& model, const StageSpec& stage) override;
    AmplitudeRatio amplitude_ratio(const Model& model) override;

private:
    DistributedRunner& runner_;
    Traces observed_;
    /// The observed data's misfit in one kind and band, kept while they stay
    /// (building it filters every observed trace).
    struct CachedMisfit {
        std::unique_ptr<BandLimitedMisfit> misfit;
        MisfitKind kind = MisfitKind::l2;
        double cutoff_hz = -1;
    };
    /// `cache`'s misfit, built anew (collectively) for another kind or band.
    const BandLimitedMisfit& band_misfit(CachedMisfit& cache, MisfitKind kind, double cutoff_hz);

    /// The projection of the stage's band, built anew (collectively) for another band.
    WaveletProjection& projection(double cutoff_hz);
    /// The stage's projection fitted to `synthetic` (this rank's traces; collective).
    WaveletProjection& fitted_projection(const Traces& synthetic, const StageSpec& stage);

    MisfitKind kind_;
    CachedMisfit own_, other_;  // the campaign's kind; misfit() in another
    Array2D last_illumination_;
    double water_level_;
    std::unique_ptr<WaveletProjection> projection_;  // of the band below projection_cutoff_hz_
    double projection_cutoff_hz_ = -1;
};

/// SIGTERM or SIGUSR1 stopped the run; the checkpoint of the last accepted
/// iteration is in place. The command exits with code 3.
class StopRequested : public Error {
public:
    using Error::Error;
};

/// Installs SIGTERM and SIGUSR1 handlers that ask the inversion to stop after
/// the evaluation in flight.
void install_stop_signal_handlers();
/// Whether a stop was asked for (on this rank).
bool stop_requested();
/// Ask for a stop as a signal would (tests), and forget it.
void request_stop();
void clear_stop_request();

struct HistoryRow {
    std::string stage;
    int iteration = 0;
    double misfit = 0, misfit_relative = 0, gradient_norm = 0, step = 0;
    int evaluations = 0;
    /// Propagations so far (a forward, Born or adjoint run each): the cost on
    /// which methods compare.
    int propagations = 0;
    double seconds = 0;
    double error_eps_r = -1, error_sigma = -1;  // relative L2 model errors when a true model is known
    /// How far this iteration moved the model: the L2 norm of the change of
    /// eps_r (of sigma) from the iterate before, relative to the norm of the
    /// new one, over all nodes (0 at a stage's start). Their sums over a
    /// window are what StageSpec::min_relative_change measures.
    double change_eps_r = 0, change_sigma = 0;
};

/// Why a stage stops after its latest iteration (history's last row, of
/// misfit j), by its own rules beyond TAO's, or "" to go on: its misfit
/// fell by less than min_relative_decrease over the last decrease_window
/// iterations of this stage (from its min_iterations-th iteration on), its
/// wall-time budget (max_seconds) is spent after `stage_seconds`, or the
/// campaign's propagations (all stages of the history) reached
/// `max_propagations` (> 0; 0: no budget).
/// Whether the stage ends at its least-misfit iterate rather than its last:
/// a stage with a rule on its misfit is judged by its misfit, which the
/// regularisation can raise while the objective falls (docs/inversion.md,
/// "Stopping").
bool ends_at_least_misfit(const StageSpec& stage);

/// The largest checkpoint.h5 a campaign writes, its history aside: the
/// model, and while a stage that ends at its least misfit is in progress
/// that iterate's eps_r and sigma.
std::uint64_t checkpoint_file_bytes(const InversionSpec& spec, const Grid& grid, const std::string& config);

std::string stage_stop_reason(const StageSpec& stage, const std::vector<HistoryRow>& history, double stage_seconds,
                              long max_propagations);

/// The propagations of the whole campaign so far: each stage's latest row
/// (the history counts per stage).
long campaign_propagations(const std::vector<HistoryRow>& history);

struct InversionResult {
    Model model;
    std::vector<HistoryRow> history;
    /// The observed data's level against the start's, where a fresh campaign
    /// measured it (it warns beyond kAmplitudeWarnFactor); ratio 0 where not.
    AmplitudeRatio start_amplitudes;
    /// The misfit of `model` on the last stage's data (also the root
    /// attribute `misfit` of `model_final.h5`): the iterate's the stage ended
    /// at, or evaluated anew where the taper's fill changed the model after
    /// it or the stage flooded; none where the last stage did not run in
    /// this call.
    std::optional<double> final_misfit;
    /// Relative L2 errors of `model` against InversionSpec::true_model over
    /// all nodes (as the history's columns); -1 without a true model.
    double final_error_eps_r = -1, final_error_sigma = -1;
};

/// Runs the stages from `start` (or, with resume, from `<out>/checkpoint.h5`),
/// writing `<out>/history.csv`, per-iteration models (`<out>/models/`),
/// `checkpoint.h5` after every accepted iteration and `model_final.h5`.
/// Needs PETSc initialised (PetscSession). Collective; rank 0 writes.
InversionResult invert(const Model& start, const InversionSpec& spec, InversionObjective& objective,
                       const std::string& out_dir, const std::string& config_text, bool resume);

/// PETSc for the lifetime of the object (after MPI is initialised; keeps
/// PETSc's own signal handlers out, takes `options` as a PETSc options string).
class PetscSession {
public:
    explicit PetscSession(const std::string& options);
    ~PetscSession();
    PetscSession(const PetscSession&) = delete;
    PetscSession& operator=(const PetscSession&) = delete;
};

/// The PETSc version this build uses, "3.18.5".
std::string petsc_version();

}  // namespace gprfwi
