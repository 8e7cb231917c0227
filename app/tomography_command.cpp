// `gprfwi tomography RUN.yaml`: a starting model from first-arrival
// traveltimes (lib/gprfwi/tomography.hpp). The run file's `model` is the
// traveltime inversion's starting model and `data.observed` the data, as for
// `gradient`. Each rank picks the first breaks of its own shots (or reads
// them from --picks), calibrates them with the same picker on traces it
// models in the starting model, picked at the observed traces' noise, and the inversion driver (one stage over
// eps_r, TAO's bounded L-BFGS, smooth updates) fits the eikonal traveltimes
// to them. With --amplitudes, sigma follows from the first arrivals'
// amplitudes: each rank models its shots again in the traveltime model (the
// calibration), and a second stage, over sigma alone, fits the ray integrals
// of the attenuation to the log ratios of observed to modelled amplitudes.
// Writes OUTPUT/picks.csv (for editing and --picks), OUTPUT/tomography.h5
// (+ .xdmf) in the model.h5 layout, which `model.file` reads, and the
// inversions' histories in OUTPUT/tomography/ and OUTPUT/amplitudes/.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "common.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/files.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/tomography.hpp"
#include "gprfwi/wavelet.hpp"

namespace gprfwi::app {

namespace {

struct TomographyArgs {
    RunArgs run;
    std::string picks;  // a picks file instead of automatic picks
    int iterations = 30;
    bool fit_time_zero = false;
    bool amplitudes = false;  // sigma from the first arrivals' amplitudes
    int amplitude_iterations = 10;  // docs/inversion.md, "Starting models from traveltimes": early stopping regularises
    double amplitude_smoothing_m = -1;  // < 0: as the traveltimes'
    double smoothing_m = -1;  // < 0: half the dominant wavelength in the starting model
};

/// One stage of the driver over eps_r or sigma alone, stopping where its misfit falls by less than 0.1% over 3
/// iterations.
StageSpec tomography_stage(const char* name, bool eps_r, int iterations) {
    StageSpec stage;
    stage.name = name;
    stage.invert_eps_r = eps_r;
    stage.invert_sigma = !eps_r;
    stage.iterations = iterations;
    stage.min_relative_decrease = 1e-3;
    return stage;
}

/// sigma from the first arrivals' amplitudes (tomography.hpp), starting from `m` (the traveltime model with
/// the starting sigma), which calibrates them: the spec's other settings are the traveltime stage's.
Model amplitude_tomography(const TomographyArgs& a, InversionSpec spec, DistributedRunner& runner,
                           const Model& m, const Picks& observed_noise, const Picks& observed_amplitudes,
                           double f_dom, const std::string& dir, const std::string& config_text) {
    const Survey& survey = runner.survey();
    const std::vector<std::size_t>& shots = runner.shots();
    const Traces modelled = runner.forward(m);
    const Picks picks = pick_first_breaks(modelled, survey.dt, survey.dt, f_dom, observed_noise);
    const Picks amplitudes = first_arrival_amplitudes(modelled, survey.dt, survey.dt, f_dom, picks);
    Picks log_ratios = observed_amplitudes;
    for (std::size_t s = 0; s < log_ratios.size(); ++s)
        for (std::size_t r = 0; r < log_ratios[s].size(); ++r)
            log_ratios[s][r] = std::log(observed_amplitudes[s][r] / amplitudes[s][r]);  // NaN where either is
    AmplitudeObjective objective(survey, shots, log_ratios, m, f_dom);
    double c_before = 0;
    const auto [before, used] = rms_difference(objective.predicted(m, c_before), log_ratios);
    const StageSpec stage = tomography_stage("amplitude", false, a.amplitude_iterations);
    spec.stages = {stage};
    spec.smoothing_sigma_m = a.amplitude_smoothing_m >= 0 ? a.amplitude_smoothing_m : spec.smoothing_m;
    spdlog::info("amplitude inversion: {} first-arrival amplitudes against traces modelled in the traveltime model "
                 "(RMS log ratio {:.3g} after the sources' ratio, exp {:.3g}); sigma in [{}, {}], attenuation at "
                 "{:.3g} MHz, up to {} iterations, updates smoothed over {:.3g} m",
                 used, before, std::exp(c_before), spec.sigma_min, spec.sigma_max, f_dom / 1e6, stage.iterations,
                 spec.smoothing_sigma_m);
    const std::string history_dir = (std::filesystem::path(dir) / "amplitudes").string();
    make_output_dir(history_dir);
    InversionResult r = invert(m, spec, objective, history_dir, config_text, false);
    double c_after = 0;
    const auto after = rms_difference(objective.predicted(r.model, c_after), log_ratios).first;
    const auto& sigma = r.model.sigma.values();
    spdlog::info("RMS log amplitude ratio {:.3g} -> {:.3g} over {} traces (the observed sources x {:.3g} the "
                 "modelled ones); sigma {:.3g} to {:.3g} S/m",
                 before, after, used, std::exp(c_after), *std::min_element(sigma.begin(), sigma.end()),
                 *std::max_element(sigma.begin(), sigma.end()));
    return std::move(r.model);
}

void run_tomography(const TomographyArgs& a) {
    const RunConfig c = load_run_file(a.run);
    if (c.observed.file.empty())
        throw ConfigError(fmt::format("{}: data.observed: the tomography command needs observed data (HDF5 or SEG-Y "
                                      "traces)", c.file));
    InversionSpec spec;  // the campaign's bounds where the run file has them
    if (c.has_inversion) spec = load_campaign_file(a.run).inversion;
    spec.lbfgs_history = 0;  // TAO's own: the campaigns' memory was chosen on full-waveform stages
    const Survey survey = c.survey();
    const PropagatorOptions opt = fix_survey_wide_options(c.propagator, c.model, survey);
    DistributedRunner runner(survey, opt, c.shots_per_batch);
    const std::vector<std::size_t>& shots = runner.shots();
    const double f_dom = dominant_frequency(survey.shots.front().wavelet, survey.dt);
    const std::string& dir = c.output_dir;

    // first breaks: observed (picked, or read), and the calibration's in the starting model
    Picks observed_picks, observed_noise, observed_amplitudes;
    parallel::collectively([&] {
        const Traces observed = read_observed(c.observed, survey, shots);
        observed_noise = trace_noise(observed, survey.dt, f_dom);
        observed_picks = a.picks.empty() ? pick_first_breaks(observed, survey.dt, survey.dt, f_dom, observed_noise)
                                         : read_picks_csv(a.picks, survey, shots);
        if (a.amplitudes)
            observed_amplitudes = first_arrival_amplitudes(observed, survey.dt, survey.dt, f_dom, observed_picks);
    });
    const Traces modelled = runner.forward(c.model);
    const Picks modelled_picks = pick_first_breaks(modelled, survey.dt, survey.dt, f_dom, observed_noise);
    Picks traveltimes = observed_picks;
    TomographyObjective start_times(survey, shots, observed_picks);
    const Picks eikonal = start_times.times(c.model);
    for (std::size_t s = 0; s < traveltimes.size(); ++s)
        for (std::size_t r = 0; r < traveltimes[s].size(); ++r)
            traveltimes[s][r] = observed_picks[s][r] - (modelled_picks[s][r] - eikonal[s][r]);
    const auto [before, picked] = rms_difference(traveltimes, eikonal);
    const auto [offset, calibrated] = mean_difference(modelled_picks, eikonal);
    std::size_t n_traces = 0;
    for (const Shot& shot : survey.shots) n_traces += shot.receivers.size();
    spdlog::info("{}: {} first breaks of {} traces {}; calibrated by the picker on traces modelled in the starting "
                 "model, at the observed traces' noise (their picks {:.3g} ns after the eikonal times on average, {} "
                 "traces); RMS traveltime residual in the starting model {:.3g} ns",
                 c.file, picked, n_traces,
                 a.picks.empty() ? "picked (AIC; none where the arrival is under 20 noise deviations)"
                                 : "read from " + a.picks,
                 1e9 * offset, calibrated, 1e9 * before);

    make_output_dir(dir);
    // every rank's picks into one file on rank 0, in survey order (each rank's shots are a contiguous block)
    const std::vector<std::string> rows = parallel::gather(picks_csv_rows(observed_picks, shots));
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        std::string text = picks_csv_header();
        for (const std::string& part : rows) text += part;
        write_text_atomically((std::filesystem::path(dir) / "picks.csv").string(), text);
    });

    TomographyObjective objective(survey, shots, traveltimes, a.fit_time_zero);
    const double lambda = dominant_wavelength(c.model, f_dom);
    const StageSpec stage = tomography_stage("traveltime", true, a.iterations);
    spec.stages = {stage};
    spec.smoothing_m = a.smoothing_m >= 0 ? a.smoothing_m : 0.5 * lambda;
    spec.taper_radius_m = 0;
    spec.illumination_stabilization = 0;
    spec.regularize_eps_r = {};
    spec.regularize_sigma = {};
    spec.save_models = false;
    spec.save_gradients = false;
    spec.true_model.clear();
    spdlog::info("traveltime inversion: eps_r in [{}, {}], up to {} iterations, updates smoothed over {:.3g} m (half "
                 "the dominant wavelength, {:.3g} m, in the starting model)",
                 spec.eps_r_min, spec.eps_r_max, stage.iterations, spec.smoothing_m, lambda);
    PetscSession petsc("");
    const std::string config_text = c.record(a.run.overrides);
    const std::string history_dir = (std::filesystem::path(dir) / "tomography").string();
    make_output_dir(history_dir);
    InversionResult r = invert(c.model, spec, objective, history_dir, config_text, false);
    Picks fitted = objective.times(r.model);
    // the final model's time zero: the mean of picked minus eikonal times, as the objective fits it
    const double time_zero = a.fit_time_zero ? mean_difference(traveltimes, fitted).first : 0.0;
    for (auto& shot : fitted)
        for (double& v : shot) v += time_zero;
    const auto [after, used] = rms_difference(traveltimes, fitted);
    if (a.fit_time_zero) spdlog::info("time zero: the picks are {:.3g} ns late", 1e9 * time_zero);
    spdlog::info("RMS traveltime residual {:.3g} ns -> {:.3g} ns over {} traces; eps_r {:.3g} to {:.3g}", 1e9 * before,
                 1e9 * after, used, *std::min_element(r.model.eps_r.values().begin(), r.model.eps_r.values().end()),
                 *std::max_element(r.model.eps_r.values().begin(), r.model.eps_r.values().end()));
    if (a.amplitudes)
        r.model = amplitude_tomography(a, spec, runner, r.model, observed_noise, observed_amplitudes, f_dom, dir,
                                       config_text);
    const std::string out = (std::filesystem::path(dir) / "tomography.h5").string();
    parallel::collectively([&] {
        if (parallel::is_root()) write_model_h5(out, r.model, config_text);
    });
    spdlog::info("wrote {} and {}/picks.csv", out, dir);
}

}  // namespace

void add_tomography_command(CLI::App& app) {
    auto a = std::make_shared<TomographyArgs>();
    CLI::App* cmd = app.add_subcommand(
        "tomography", "Starting model from first-arrival traveltimes into OUTPUT/tomography.h5 (picks in OUTPUT/picks.csv)");
    add_run_options(*cmd, a->run, true);
    cmd->add_option("--picks", a->picks, "Read the first breaks from this CSV (as written in OUTPUT/picks.csv)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--iterations", a->iterations, "Iterations of the traveltime inversion")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_flag("--estimate-time-zero", a->fit_time_zero,
                  "Fit one unknown time shift of every pick with the model (a field survey's time zero)");
    cmd->add_flag("--amplitudes", a->amplitudes,
                  "Then sigma from the first arrivals' amplitudes (a second inversion, over sigma, along the rays)");
    cmd->add_option("--smoothing", a->smoothing_m,
                    "Standard deviation of the updates' smoothing, m (default: half the dominant wavelength)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--amplitude-iterations", a->amplitude_iterations, "Iterations of the amplitude inversion")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--amplitude-smoothing", a->amplitude_smoothing_m,
                    "Standard deviation of the amplitude inversion's smoothing, m (default: the traveltimes')")
        ->check(CLI::NonNegativeNumber);
    cmd->callback([a] { run_tomography(*a); });
}

}  // namespace gprfwi::app
