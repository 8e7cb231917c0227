#include "gprfwi/tomography.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/eikonal.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/numbers.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

namespace {

constexpr double kNoPick = std::numeric_limits<double>::quiet_NaN();
constexpr double kTrigger = 0.1;       // of the trace's peak: where the window around the onset is placed ...
constexpr double kNoiseTrigger = 5.0;  // ... or this many noise standard deviations, whichever is higher
// No pick where the peak is under this many noise standard deviations: the trigger would then reach the
// level of a wavelet's side lobes (a Ricker's are 45% of its peak) and jump a lobe with the noise.
constexpr double kMinimumSnr = 20.0;
constexpr int kQuietSamples = 16;      // the fewest samples before an arrival that measure the noise

/// The standard deviation of a trace's noise over its peak; 0 for a silent trace. From the samples before
/// the first arrival (a period before the trace first reaches kTrigger of its peak), or where the arrival
/// comes too soon for that, from the median absolute value of the whole trace.
double relative_noise(const double* x, int nt, int period) {
    const double peak = trace_peak(x, nt);
    if (!(peak > 0)) return 0;
    int quiet = 0;
    while (quiet < nt && std::abs(x[quiet]) < kTrigger * peak) ++quiet;
    quiet -= period;
    if (quiet >= kQuietSamples) {
        double mean = 0, square = 0;
        for (int n = 0; n < quiet; ++n) mean += x[n];
        mean /= quiet;
        for (int n = 0; n < quiet; ++n) square += (x[n] - mean) * (x[n] - mean);
        return std::sqrt(square / quiet) / peak;
    }
    std::vector<double> magnitude(x, x + nt);
    for (double& v : magnitude) v = std::abs(v);
    std::nth_element(magnitude.begin(), magnitude.begin() + nt / 2, magnitude.end());
    return magnitude[static_cast<std::size_t>(nt / 2)] / 0.6745 / peak;
}

/// The AIC pick of one trace, in samples (fractional), or NaN, as if the trace carried noise of
/// `noise` times its peak: the trigger and the variances' floor come from it, so that a noise-free trace
/// picked at the noise of an observed one has the observed one's bias.
double aic_pick(const double* x, int nt, int period, double noise) {
    const double peak = trace_peak(x, nt);
    if (!(peak > 0) || noise * kMinimumSnr > 1) return kNoPick;
    const double threshold = std::max(kTrigger, kNoiseTrigger * noise) * peak;
    int trigger = 0;
    while (trigger < nt && std::abs(x[trigger]) < threshold) ++trigger;
    if (trigger == nt) return kNoPick;
    const int w0 = std::max(0, trigger - period), w1 = std::min(nt, trigger + std::max(2, period / 4));
    const int len = w1 - w0;
    if (len < 4) return static_cast<double>(trigger);
    // var of x[w0 .. w0+k] and x[w0+k+1 .. w1) from running sums, plus the noise's (a floor, too, that keeps
    // noise-free onsets finite)
    std::vector<double> s1(len + 1, 0.0), s2(len + 1, 0.0);
    for (int k = 0; k < len; ++k) {
        s1[k + 1] = s1[k] + x[w0 + k];
        s2[k + 1] = s2[k] + x[w0 + k] * x[w0 + k];
    }
    const double floor = std::max(noise * noise, 1e-12) * peak * peak;
    auto var = [&](int a, int b) {  // [a, b)
        const double n = b - a, m = (s1[b] - s1[a]) / n;
        return std::max((s2[b] - s2[a]) / n - m * m, 0.0) + floor;
    };
    double best = std::numeric_limits<double>::infinity();
    int pick = trigger;
    for (int k = 1; k < len - 1; ++k) {
        const double aic = (k + 1) * std::log(var(0, k + 1)) + (len - k - 1) * std::log(var(k + 1, len));
        if (aic < best) {
            best = aic;
            pick = w0 + k;
        }
    }
    return static_cast<double>(pick);
}

int pick_period(double dt, double dominant_hz) {
    return std::max(2, static_cast<int>(std::lround(1.0 / (dominant_hz * dt))));
}

}  // namespace

Picks trace_noise(const Traces& traces, double dt, double dominant_hz) {
    const int period = pick_period(dt, dominant_hz);
    Picks noise(traces.size());
    for (std::size_t s = 0; s < traces.size(); ++s) {
        const ShotTraces& t = traces[s];
        noise[s].resize(static_cast<std::size_t>(t.n_receivers()));
#pragma omp parallel for schedule(dynamic)
        for (int r = 0; r < t.n_receivers(); ++r)
            noise[s][static_cast<std::size_t>(r)] = relative_noise(t.receiver(r), t.nt(), period);
    }
    return noise;
}

Picks pick_first_breaks(const Traces& traces, double dt, double t0, double dominant_hz, const Picks& noise) {
    const int period = pick_period(dt, dominant_hz);
    const Picks own = noise.empty() ? trace_noise(traces, dt, dominant_hz) : Picks{};
    const Picks& level = noise.empty() ? own : noise;
    if (level.size() != traces.size())
        throw SizeMismatch(fmt::format("pick_first_breaks: {} shots of traces and {} of noise levels", traces.size(),
                                       level.size()));
    Picks picks(traces.size());
    for (std::size_t s = 0; s < traces.size(); ++s) {
        const ShotTraces& t = traces[s];
        picks[s].resize(static_cast<std::size_t>(t.n_receivers()));
        if (level[s].size() != picks[s].size())
            throw SizeMismatch(fmt::format("pick_first_breaks: shot {} has {} traces and {} noise levels", s,
                                                    picks[s].size(), level[s].size()));
#pragma omp parallel for schedule(dynamic)
        for (int r = 0; r < t.n_receivers(); ++r) {
            const double k = aic_pick(t.receiver(r), t.nt(), period, level[s][static_cast<std::size_t>(r)]);
            picks[s][static_cast<std::size_t>(r)] = t0 + k * dt;  // (NaN stays NaN: no pick)
        }
    }
    return picks;
}

std::string picks_csv_header() {
    return "# first-break picks (gprfwi tomography): survey shot, receiver of the shot, time in s (sample n at "
           "(n + 1) dt; nan: none). Edit, then pass with --picks.\nshot,receiver,time_s\n";
}

std::string picks_csv_rows(const Picks& picks, const std::vector<std::size_t>& shots) {
    std::string text;
    for (std::size_t s = 0; s < picks.size(); ++s)
        for (std::size_t r = 0; r < picks[s].size(); ++r)
            text += std::isnan(picks[s][r]) ? fmt::format("{},{},nan\n", shots[s], r)
                                            : fmt::format("{},{},{:.9e}\n", shots[s], r, picks[s][r]);
    return text;
}

Picks read_picks_csv(const std::string& path, const Survey& survey, const std::vector<std::size_t>& shots) {
    std::ifstream in(path);
    if (!in) throw InputFileError(fmt::format("{}: cannot open the picks file", path));
    Picks picks(shots.size());
    std::vector<long> index(survey.shots.size(), -1);
    for (std::size_t s = 0; s < shots.size(); ++s) {
        index[shots[s]] = static_cast<long>(s);
        picks[s].assign(survey.shots[shots[s]].receivers.size(), kNoPick);
    }
    std::string line;
    int number = 0;
    bool header = false;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty() || line[0] == '#') continue;
        if (!header) {  // the column names
            header = true;
            if (line.rfind("shot", 0) == 0) continue;
        }
        std::stringstream ss(line);
        std::string a, b, c;
        if (!std::getline(ss, a, ',') || !std::getline(ss, b, ',') || !std::getline(ss, c))
            throw InputFileError(fmt::format("{}:{}: expected shot,receiver,time_s", path, number));
        long shot = 0, receiver = 0;
        const std::optional<double> time = c == "nan" ? std::optional<double>(kNoPick) : parse_finite_double(c);
        try {
            std::size_t used = 0;
            shot = std::stol(a, &used);
            if (used != a.size()) throw std::invalid_argument(a);
            receiver = std::stol(b, &used);
            if (used != b.size()) throw std::invalid_argument(b);
        } catch (const std::exception&) {
            shot = -1;
        }
        if (shot < 0 || !time)
            throw InputFileError(fmt::format("{}:{}: expected shot,receiver,time_s (integers, and a finite time in s or "
                                             "nan), got '{}'", path, number, line));
        const double t = *time;
        if (shot < 0 || static_cast<std::size_t>(shot) >= survey.shots.size())
            throw InputFileError(fmt::format("{}:{}: shot {} is not in the survey ({} shots)", path, number, shot,
                                          survey.shots.size()));
        if (receiver < 0 || static_cast<std::size_t>(receiver) >= survey.shots[static_cast<std::size_t>(shot)].receivers.size())
            throw InputFileError(fmt::format("{}:{}: shot {} has no receiver {} ({} receivers)", path, number, shot,
                                          receiver, survey.shots[static_cast<std::size_t>(shot)].receivers.size()));
        if (const long s = index[static_cast<std::size_t>(shot)]; s >= 0)
            picks[static_cast<std::size_t>(s)][static_cast<std::size_t>(receiver)] = t;
    }
    return picks;
}

namespace {

/// Refuses per-trace values that do not fit `shots` of `survey`, or a shot without exactly one source (its
/// rays start there); `what` names the objective and `values` its data in the messages.
void check_ray_data(const Survey& survey, const std::vector<std::size_t>& shots, const Picks& data, const char* what,
                    const char* values) {
    if (data.size() != shots.size())
        throw SizeMismatch(fmt::format("{}: {} shots of {} for {} shots", what, data.size(), values, shots.size()));
    for (std::size_t s = 0; s < shots.size(); ++s) {
        const Shot& shot = survey.shots[shots[s]];
        if (shot.sources.size() != 1)
            throw InvalidArgument(fmt::format("{}: shot {} has {} sources; {} need one a shot", what, shots[s],
                                              shot.sources.size(), values));
        if (data[s].size() != shot.receivers.size())
            throw SizeMismatch(fmt::format("{}: shot {} has {} receivers but {} {}", what, shots[s],
                                           shot.receivers.size(), data[s].size(), values));
    }
}

/// The mean of f(a - b) over every rank's traces where both are finite, and how many (collective).
template <typename F>
std::pair<double, std::size_t> mean_over_traces(const Picks& a, const Picks& b, F&& f) {
    double all[2] = {0, 0};
    for (std::size_t s = 0; s < a.size(); ++s)
        for (std::size_t r = 0; r < a[s].size(); ++r)
            if (std::isfinite(a[s][r]) && std::isfinite(b[s][r])) {
                all[0] += f(a[s][r] - b[s][r]);
                all[1] += 1;
            }
    parallel::sum(all, 2);
    return {all[1] > 0 ? all[0] / all[1] : 0.0, static_cast<std::size_t>(all[1])};
}

}  // namespace

std::pair<double, std::size_t> mean_difference(const Picks& a, const Picks& b) {
    return mean_over_traces(a, b, [](double d) { return d; });
}

std::pair<double, std::size_t> rms_difference(const Picks& a, const Picks& b) {
    const auto [mean_square, n] = mean_over_traces(a, b, [](double d) { return d * d; });
    return {std::sqrt(mean_square), n};
}

TomographyObjective::TomographyObjective(const Survey& survey, std::vector<std::size_t> shots, Picks traveltimes,
                                         bool fit_time_zero)
    : survey_(survey), shots_(std::move(shots)), traveltimes_(std::move(traveltimes)), fit_time_zero_(fit_time_zero) {
    check_ray_data(survey_, shots_, traveltimes_, "tomography", "traveltimes");
}

namespace {

std::vector<double> slowness_of(const Model& m) {
    std::vector<double> s(m.eps_r.size());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = std::sqrt(m.eps_r.data()[i] * m.mu_r.data()[i]) / speed_of_light();
    return s;
}

/// Each shot's eikonal field in the slowness s, one shot a thread.
std::vector<std::optional<EikonalField>> shot_fields(const Survey& survey, const std::vector<std::size_t>& shots,
                                                     const Grid& grid, const std::vector<double>& s) {
    std::vector<std::optional<EikonalField>> fields(shots.size());
#pragma omp parallel for schedule(dynamic)
    for (std::size_t k = 0; k < shots.size(); ++k) fields[k].emplace(grid, s, survey.shots[shots[k]].sources[0].position);
    return fields;
}

/// J = 1/2 sum r^2 over every rank's traces with a residual (NaN: none) and its gradient in the quantity
/// the residuals' rays integrate, each residual's derivative being `sign` times its ray: per node, summed
/// over the ranks, with J last (one reduction). The shots' parts are added in shot order, so the sums are
/// the same whatever the threads.
std::vector<double> ray_misfit(const Survey& survey, const std::vector<std::size_t>& shots,
                               const std::vector<std::optional<EikonalField>>& fields, const Picks& residuals,
                               double sign, std::size_t nodes) {
    std::vector<std::vector<double>> per_shot(shots.size());
    std::vector<double> j_shot(shots.size(), 0.0);
#pragma omp parallel for schedule(dynamic)
    for (std::size_t k = 0; k < shots.size(); ++k) {
        const Shot& shot = survey.shots[shots[k]];
        std::vector<Position> points;
        std::vector<double> weights;
        for (std::size_t r = 0; r < shot.receivers.size(); ++r) {
            const double res = residuals[k][r];
            if (std::isnan(res)) continue;
            j_shot[k] += 0.5 * res * res;
            points.push_back(shot.receivers[r]);
            weights.push_back(sign * res);
        }
        per_shot[k].assign(nodes, 0.0);
        fields[k]->add_gradient(points, weights, per_shot[k]);
    }
    std::vector<double> grad(nodes + 1, 0.0);
    for (std::size_t k = 0; k < shots.size(); ++k) {
        grad[nodes] += j_shot[k];
        for (std::size_t i = 0; i < nodes; ++i) grad[i] += per_shot[k][i];
    }
    parallel::sum(grad.data(), grad.size());
    return grad;
}

}  // namespace

Picks TomographyObjective::times(const Model& model) const {
    const std::vector<std::optional<EikonalField>> fields = shot_fields(survey_, shots_, model.grid, slowness_of(model));
    Picks out(shots_.size());
    for (std::size_t k = 0; k < shots_.size(); ++k)
        for (const Position& r : survey_.shots[shots_[k]].receivers) out[k].push_back(fields[k]->time_at(r));
    return out;
}

double TomographyObjective::evaluate(const Model& model, const StageSpec&, Array2D& grad_eps_r, Array2D& grad_sigma) {
    const std::vector<double> s = slowness_of(model);
    const std::size_t n = s.size();
    const std::vector<std::optional<EikonalField>> fields = shot_fields(survey_, shots_, model.grid, s);
    Picks t(shots_.size());
    for (std::size_t k = 0; k < shots_.size(); ++k)
        for (const Position& r : survey_.shots[shots_[k]].receivers) t[k].push_back(fields[k]->time_at(r));
    // the mean of (picked - eikonal) over every rank's traces
    const double tau = fit_time_zero_ ? mean_difference(traveltimes_, t).first : 0.0;
    // residuals T + tau - t (NaN where t is)
    for (std::size_t k = 0; k < shots_.size(); ++k)
        for (std::size_t r = 0; r < t[k].size(); ++r) t[k][r] = t[k][r] + tau - traveltimes_[k][r];
    const std::vector<double> grad_s = ray_misfit(survey_, shots_, fields, t, 1.0, n);
    grad_eps_r = Array2D(model.grid.nz, model.grid.nx, 0.0);
    grad_sigma = Array2D(model.grid.nz, model.grid.nx, 0.0);
    for (std::size_t i = 0; i < n; ++i)  // ds/d eps_r = sqrt(mu_r) / (2 c0 sqrt(eps_r))
        grad_eps_r.data()[i] = grad_s[i] * std::sqrt(model.mu_r.data()[i] / model.eps_r.data()[i]) / (2 * speed_of_light());
    return grad_s[n];
}

Picks first_arrival_amplitudes(const Traces& traces, double dt, double t0, double dominant_hz, const Picks& picks) {
    // a period and a half: the AIC picks the onset of the wavelet's leading side lobe, up to a period before
    // its main lobe on noise-free traces
    const int period = pick_period(dt, dominant_hz);
    if (picks.size() != traces.size())
        throw SizeMismatch(fmt::format("first_arrival_amplitudes: {} shots of traces and {} of picks", traces.size(),
                                       picks.size()));
    Picks amplitudes(traces.size());
    for (std::size_t s = 0; s < traces.size(); ++s) {
        const ShotTraces& t = traces[s];
        if (picks[s].size() != static_cast<std::size_t>(t.n_receivers()))
            throw SizeMismatch(fmt::format("first_arrival_amplitudes: shot {} has {} traces and {} picks", s,
                                           t.n_receivers(), picks[s].size()));
        amplitudes[s].assign(picks[s].size(), kNoPick);
        for (int r = 0; r < t.n_receivers(); ++r) {
            const double pick = picks[s][static_cast<std::size_t>(r)];
            if (!std::isfinite(pick)) continue;
            const long n0 = std::max(0L, std::lround((pick - t0) / dt));
            const long n1 = std::min(static_cast<long>(t.nt()), n0 + (3 * period) / 2 + 1);
            if (n0 >= n1) continue;  // a pick past the trace's end
            const double peak = trace_peak(t.receiver(r) + n0, static_cast<int>(n1 - n0));
            amplitudes[s][static_cast<std::size_t>(r)] = peak > 0 ? peak : kNoPick;
        }
    }
    return amplitudes;
}

namespace {
/// (1 + r) and p^2 / (2 r (1 + r)) of the plane wave's attenuation, r = sqrt(1 + p^2), and sqrt(mu / (2 eps)).
struct LossTerms {
    double one_plus_r, slope_correction, k;
};
LossTerms loss_terms(double sigma, double eps_r, double mu_r, double frequency) {
    const double omega_eps = 2 * kPi * frequency * kEps0 * eps_r, p = sigma / omega_eps, r = std::sqrt(1 + p * p);
    return {1 + r, p * p / (2 * r * (1 + r)), std::sqrt(kMu0 * mu_r / (2 * kEps0 * eps_r))};
}
}  // namespace

double plane_wave_attenuation(double sigma, double eps_r, double mu_r, double frequency) {
    // alpha = omega sqrt(mu eps / 2) sqrt(r - 1), written without the cancellation in r - 1 = p^2 / (r + 1)
    const LossTerms l = loss_terms(sigma, eps_r, mu_r, frequency);
    return sigma * l.k / std::sqrt(l.one_plus_r);
}

double plane_wave_attenuation_slope(double sigma, double eps_r, double mu_r, double frequency) {
    const LossTerms l = loss_terms(sigma, eps_r, mu_r, frequency);
    return l.k / std::sqrt(l.one_plus_r) * (1 - l.slope_correction);
}

AmplitudeObjective::AmplitudeObjective(const Survey& survey, std::vector<std::size_t> shots, Picks log_ratios,
                                       const Model& calibration, double frequency)
    : survey_(survey), shots_(std::move(shots)), log_ratios_(std::move(log_ratios)), frequency_(frequency) {
    check_ray_data(survey_, shots_, log_ratios_, "amplitude tomography", "amplitudes");
    if (!(frequency_ > 0)) throw InvalidArgument("amplitude tomography: the frequency must be positive");
    alpha_calibration_.resize(calibration.eps_r.size());
    for (std::size_t i = 0; i < alpha_calibration_.size(); ++i)
        alpha_calibration_[i] = plane_wave_attenuation(calibration.sigma.data()[i], calibration.eps_r.data()[i],
                                                       calibration.mu_r.data()[i], frequency_);
}

const std::vector<std::optional<EikonalField>>& AmplitudeObjective::fields_for(const Model& m) const {
    std::vector<double> s = slowness_of(m);
    if (fields_.empty() || s != slowness_) {
        fields_ = shot_fields(survey_, shots_, m.grid, s);
        slowness_ = std::move(s);
    }
    return fields_;
}

Picks AmplitudeObjective::gains(const Model& m) const {
    if (alpha_calibration_.size() != m.eps_r.size())
        throw SizeMismatch("amplitude tomography: the model's grid is not the calibration model's");
    std::vector<double> loss(alpha_calibration_.size());
    for (std::size_t i = 0; i < loss.size(); ++i)
        loss[i] = alpha_calibration_[i] -
                  plane_wave_attenuation(m.sigma.data()[i], m.eps_r.data()[i], m.mu_r.data()[i], frequency_);
    const std::vector<std::optional<EikonalField>>& fields = fields_for(m);
    Picks gains(shots_.size());
#pragma omp parallel for schedule(dynamic)
    for (std::size_t k = 0; k < shots_.size(); ++k) {
        const std::vector<double> all = fields[k]->ray_integrals(survey_.shots[shots_[k]].receivers, loss);
        gains[k].resize(all.size());
        for (std::size_t r = 0; r < all.size(); ++r) gains[k][r] = std::isnan(log_ratios_[k][r]) ? kNoPick : all[r];
    }
    return gains;
}

Picks AmplitudeObjective::predicted(const Model& model, double& source_log_ratio) const {
    Picks p = gains(model);
    source_log_ratio = mean_difference(log_ratios_, p).first;  // c, fitted
    for (auto& shot : p)
        for (double& v : shot) v += source_log_ratio;  // (NaN stays NaN)
    return p;
}

double AmplitudeObjective::evaluate(const Model& model, const StageSpec&, Array2D& grad_eps_r, Array2D& grad_sigma) {
    Picks residuals = gains(model);
    const double c = mean_difference(log_ratios_, residuals).first;
    const std::size_t n = model.eps_r.size();
    // residuals c + gain - d, each the ray integral of -alpha (plus constants)
    for (std::size_t k = 0; k < shots_.size(); ++k)
        for (std::size_t r = 0; r < residuals[k].size(); ++r) residuals[k][r] = c + residuals[k][r] - log_ratios_[k][r];
    const std::vector<double> grad_alpha = ray_misfit(survey_, shots_, fields_for(model), residuals, -1.0, n);
    grad_eps_r = Array2D(model.grid.nz, model.grid.nx, 0.0);
    grad_sigma = Array2D(model.grid.nz, model.grid.nx, 0.0);
    for (std::size_t i = 0; i < n; ++i)
        grad_sigma.data()[i] = grad_alpha[i] * plane_wave_attenuation_slope(model.sigma.data()[i], model.eps_r.data()[i],
                                                                            model.mu_r.data()[i], frequency_);
    return grad_alpha[n];
}

}  // namespace gprfwi
