#pragma once
// A starting background from the data: the velocity analysis that comes
// before full-waveform inversion where no traveltime tomography can give one
// (surface surveys, whose first arrivals travel through the air).
//
// The starting model's eps_r outside the inversion's mask is scaled by the
// one factor s whose modelled data fit the observed best, then its sigma by
// a factor of its own, on the data below ScanSpec::max_frequency_hz:
//   eps_r(x) <- clamp(s eps_r(x), bounds),   min over s of J(m(s)).
// A uniform ground so takes the permittivity whose ground wave and
// reflection and diffraction moveout match the data; a layered or
// tomographic start keeps its structure and is corrected in level. The
// search is global over factors within `kScanRangeEpsR` (`kScanRangeSigma`) of the start (and the
// bounds): a grid in ln s finer than the misfit's basin (ScanSpec::
// eps_r_step; `kScanStepSigma` for sigma), then golden-section refinement
// between the grid neighbours of the best point; a misfit with several
// minima (cycle skips) still gives the lowest on the grid.
//
// eps_r is scanned with the amplitude-blind `normalized` misfit (one minus
// each trace's correlation coefficient): a wrong sigma scales the modelled
// amplitudes, and with a misfit that weighs them, a permittivity that makes
// weaker or stronger traces would win over the one that puts the arrivals in
// place. sigma is then scanned with the campaign's own misfit. The modelled
// data use the run file's wavelet: its time zero must be right, for a delay
// is explained by a slower ground.

#include <functional>
#include <string>
#include <vector>

#include "gprfwi/inversion.hpp"
#include "gprfwi/model.hpp"

namespace gprfwi {

/// The factors scanned lie within [1 / kScanRange, kScanRange]: a start
/// within a factor 3 of the ground's eps_r (its velocity within a factor
/// 1.7), and sigma within 30. Steps and relative widths at which the
/// refinement stops (docs/inversion.md, "Starting background"): the data
/// constrain ln sigma far less finely than eps_r.
inline constexpr double kScanRangeEpsR = 3.0;
inline constexpr double kScanRangeSigma = 30.0;
inline constexpr double kScanStepSigma = 2.0;
inline constexpr double kScanToleranceEpsR = 0.01;
inline constexpr double kScanToleranceSigma = 0.05;

/// The scan's data lie below this fraction of the wavelet's dominant
/// frequency: the lower the frequency, the wider the misfit's basin.
inline constexpr double kScanBandOfDominant = 0.5;
/// What `scan: auto` (and a campaign without `scan`) scans.
inline constexpr bool kAutoScanEpsR = false, kAutoScanSigma = false;

struct ScanPoint {
    const char* parameter = "";  // "eps_r" or "sigma"
    double factor = 1;           // s, relative to the model the parameter's scan started from
    double median = 0;           // the parameter's median outside the mask at this factor
    double misfit = 0;
};

struct ScanResult {
    Model model;                  // the best of the scan
    std::vector<ScanPoint> points;  // every evaluation, in order
    double eps_r_factor = 1, sigma_factor = 1;
};

/// The data misfit of a model in the scan of `parameter` ("eps_r" or
/// "sigma"; collective where the caller's objective is).
using ScanMisfit = std::function<double(const Model& model, const char* parameter)>;

/// Scans eps_r (when spec.scan.eps_r) and then sigma (spec.scan.sigma) of
/// `start` outside spec.mask within spec's bounds. sigma's scan starts from
/// eps_r's best model.
ScanResult scan_background(const Model& start, const InversionSpec& spec, const ScanMisfit& misfit);

/// scan.csv: a comment, the header `parameter,factor,median,misfit`, a line
/// per evaluation.
std::string scan_csv(const ScanResult& result);

}  // namespace gprfwi
