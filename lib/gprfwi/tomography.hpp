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

#include <cstddef>
#include <string>
#include <vector>

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
