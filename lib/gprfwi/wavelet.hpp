#pragma once
// Source wavelets.

#include <vector>

namespace gprfwi {

/// Ricker wavelet amplitude * (1 - 2a) * exp(-a), a = (pi f (t - delay))^2,
/// sampled at t = (n + 1/2) dt (the source time convention). delay < 0 selects
/// 1.5 / f. Units: f in Hz, dt and delay in s, amplitude in A.
std::vector<double> ricker(int nt, double dt, double frequency_hz, double delay_s = -1.0,
                           double amplitude = 1.0);

/// Frequency (Hz) of the largest spectral amplitude of a sampled signal.
double dominant_frequency(const std::vector<double>& signal, double dt);

/// Highest frequency (Hz) at which the amplitude spectrum is still at least
/// `fraction` of its peak (0 for a silent signal).
double highest_frequency(const std::vector<double>& signal, double dt, double fraction = 0.01);

}  // namespace gprfwi
