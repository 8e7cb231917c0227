#pragma once
// Traveltime tomography, the standard first step of crosshole GPR: first
// breaks picked on the observed traces, and an eps_r model whose eikonal
// traveltimes (eikonal.hpp) fit them, found by the inversion driver
// (inversion.hpp) as a stage over eps_r alone.
//
// Picks (Maeda 1985): on each trace, a window of a dominant period before
// the first sample whose amplitude reaches a tenth of the trace's peak (or
// five times the noise's standard deviation, from the median absolute value,
// where that is higher) and a quarter period after it; in the window the
// Akaike information criterion
//   AIC(k) = k log var(x[0..k]) + (N - k - 1) log var(x[k+1..N))
// is least at the onset. Calibration: the same picker on traces modelled in
// the starting model gives each trace's offset between its pick and the
// eikonal time there (the wavelet's onset, the 2D line source's waveform,
// the first-order eikonal's own error), which is taken off the observed
// pick; the tomography so fits pick differences, as field workflows do with
// a calibration of time zero.
//
// Amplitude tomography (optional, after the traveltimes): each trace's
// first-arrival amplitude A (the largest |x| within a period and a half of
// its pick) against the same on a trace modelled in a calibration model m_c (the
// traveltime tomography's eps_r with the starting sigma). Along the eikonal's
// ray from source to receiver,
//   ln A = ln S + ln G - int alpha ds,
// S the source's strength, G the spreading, focusing and antennas' pattern,
// alpha the plane-wave attenuation of the ground at the dominant frequency;
// with G the same in both, d = ln(A_obs / A_c) = c - int (alpha - alpha_c) ds,
// c = ln(S_obs / S_c) one unknown fitted with the model. The ray integrals are
// the eikonal march's tangent linear model (eikonal.hpp), their adjoint its
// adjoint.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gprfwi/eikonal.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

/// A first-break time per receiver of each shot, s (NaN: no pick, e.g. a
/// silent trace); [shot][receiver].
using Picks = std::vector<std::vector<double>>;

/// Each trace's noise: its standard deviation before the first arrival over
/// the trace's peak; [shot][receiver], like Picks. dt and `dominant_hz` as
/// for pick_first_breaks.
Picks trace_noise(const Traces& traces, double dt, double dominant_hz);

/// First breaks of every trace by the AIC picker: sample n is at t0 + n dt;
/// `dominant_hz` sets the window. `noise` (trace_noise's layout) is the
/// relative noise each trace is picked at; empty: each trace's own. A picker
/// picks later in noise, the more the weaker the arrival, so noise-free
/// modelled traces that calibrate the picks of observed ones are picked at
/// the observed ones' noise. A trace whose peak is under 20 noise standard
/// deviations has no pick (NaN), for its pick would not be reliable.
Picks pick_first_breaks(const Traces& traces, double dt, double t0, double dominant_hz, const Picks& noise = {});

/// Picks as CSV: a comment, the header `shot,receiver,time_s`, then a line
/// per trace (time `nan` for none); `shots` are the survey indices of the
/// picks' shots. Lines starting with # are comments.
std::string picks_csv_header();
std::string picks_csv_rows(const Picks& picks, const std::vector<std::size_t>& shots);
/// Reads such a file for the survey's shots `shots` (receiver counts from
/// `survey`); refuses, naming the file and line, anything that does not fit.
Picks read_picks_csv(const std::string& path, const Survey& survey, const std::vector<std::size_t>& shots);

/// The mean of a - b over every rank's traces where both are finite, and
/// how many such traces (collective: every rank calls it).
std::pair<double, std::size_t> mean_difference(const Picks& a, const Picks& b);
/// The root mean square of a - b over the same traces, and how many.
std::pair<double, std::size_t> rms_difference(const Picks& a, const Picks& b);

/// Each trace's first-arrival amplitude: the largest |x| from its pick to a
/// period and a half (of the dominant frequency) after it, which holds the
/// wavelet's main lobe (sample n at t0 + n dt); NaN where the pick is.
Picks first_arrival_amplitudes(const Traces& traces, double dt, double t0, double dominant_hz, const Picks& picks);

/// A plane wave's amplitude attenuation in Np/m at `frequency` in a medium of
/// conductivity sigma (S/m), eps_r and mu_r:
///   alpha = (sigma / 2) sqrt(mu / eps) sqrt(2 / (1 + sqrt(1 + p^2))),  p = sigma / (omega eps),
/// the low-loss sigma Z0 sqrt(mu_r / eps_r) / 2 where p << 1, and less where
/// the conduction current is as large as the displacement current.
double plane_wave_attenuation(double sigma, double eps_r, double mu_r, double frequency);
/// Its derivative in sigma (positive: alpha grows with sigma).
double plane_wave_attenuation_slope(double sigma, double eps_r, double mu_r, double frequency);

/// The amplitude misfit J = 1/2 sum r^2 over this rank's traces (summed over
/// the ranks), r = c - int (alpha(m) - alpha_c) ds - d with d = ln(A_obs / A_c)
/// (NaN: left out), the rays the eikonal's in m's eps_r, alpha the plane-wave
/// attenuation at `frequency` (alpha_c the calibration model's), and c the
/// mean of d + int (alpha(m) - alpha_c) ds over every trace, which minimises J
/// for the model (so the gradient keeps its form: J's derivative in c is zero
/// there). The gradient is exact in sigma for these rays; eps_r is held (its
/// gradient is zero): the stage inverts sigma alone.
class AmplitudeObjective final : public InversionObjective {
public:
    /// `survey`'s shots `shots` (this rank's), each with one source; `log_ratios`
    /// [shot][receiver]; `calibration` the model the calibration traces were
    /// modelled in.
    AmplitudeObjective(const Survey& survey, std::vector<std::size_t> shots, Picks log_ratios, const Model& calibration,
                       double frequency);
    double evaluate(const Model& model, const StageSpec& stage, Array2D& grad_eps_r, Array2D& grad_sigma) override;
    /// The modelled ratios c - int (alpha(m) - alpha_c) ds of this rank's traces
    /// (NaN where d is), and c itself.
    Picks predicted(const Model& model, double& source_log_ratio) const;

private:
    /// Each shot's eikonal field in m's slowness, kept while the slowness
    /// stays (an amplitude stage changes sigma only).
    const std::vector<std::optional<EikonalField>>& fields_for(const Model& m) const;
    /// The ray integrals of alpha_c - alpha(m), the log amplitude the model
    /// gains over the calibration's, to the receivers with a log ratio (NaN
    /// elsewhere).
    Picks gains(const Model& m) const;

    Survey survey_;
    std::vector<std::size_t> shots_;
    Picks log_ratios_;
    std::vector<double> alpha_calibration_;
    double frequency_;
    mutable std::vector<double> slowness_;
    mutable std::vector<std::optional<EikonalField>> fields_;
};

/// The traveltime misfit J = 1/2 sum (T(m) - t)^2 over this rank's shots
/// (summed over the ranks, like FWI's) and its exact gradient with respect to
/// eps_r (sigma does not enter: the gradient there is zero). T is the
/// eikonal time of the shot's source at its receivers in the slowness
/// sqrt(eps_r mu_r) / c0; t the calibrated traveltimes (NaN: left out).
class TomographyObjective final : public InversionObjective {
public:
    /// `survey`'s shots `shots` (this rank's), each with one source, and their
    /// traveltimes. With `fit_time_zero`, the traveltimes may all be late or
    /// early by one unknown time (a field survey's time zero): each residual
    /// is taken against T + tau, tau the mean of t - T over every trace, which
    /// minimises J for the model, so that the gradient keeps its form
    /// (J's derivative in tau is zero there).
    TomographyObjective(const Survey& survey, std::vector<std::size_t> shots, Picks traveltimes,
                        bool fit_time_zero = false);
    double evaluate(const Model& model, const StageSpec& stage, Array2D& grad_eps_r, Array2D& grad_sigma) override;
    /// Eikonal times of this rank's shots in `model`, [shot][receiver].
    Picks times(const Model& model) const;

private:
    Survey survey_;
    std::vector<std::size_t> shots_;
    Picks traveltimes_;
    bool fit_time_zero_;
};

}  // namespace gprfwi
