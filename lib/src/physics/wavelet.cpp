#include "gprfwi/wavelet.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/fft.hpp"

namespace gprfwi {

std::vector<double> ricker(int nt, double dt, double f, double delay, double amplitude) {
    if (nt < 1 || !(dt > 0) || !(f > 0) || !std::isfinite(f))
        throw InvalidArgument(fmt::format("ricker needs nt >= 1, dt > 0 and frequency > 0; got nt = {}, dt = {} s, f = {} Hz", nt, dt, f));
    if (delay < 0) delay = 1.5 / f;
    std::vector<double> w(static_cast<std::size_t>(nt));
    for (int n = 0; n < nt; ++n) {
        const double t = (n + 0.5) * dt;
        const double a = std::pow(kPi * f * (t - delay), 2);
        w[n] = amplitude * (1.0 - 2.0 * a) * std::exp(-a);
    }
    return w;
}

namespace {

/// Points from 0 to the Nyquist frequency: 8 per 1/(nt dt), the signal's own
/// resolution, between 1024 and 16384.
int spectrum_points(std::size_t nt) { return static_cast<int>(std::clamp<std::size_t>(4 * nt, 1024, 16384)); }

/// |S(f)| at f_k = k/points of the Nyquist frequency, k = 0..points: the
/// first points + 1 bins of a real FFT of length 2 points. Where the signal is
/// longer than that, it is first folded modulo the length (time aliasing),
/// which leaves the DFT at those frequencies exactly as it was.
/// O(nt log nt): summing every frequency directly would be O(nt^2), seconds
/// per propagator call for records of 4000 samples.
std::vector<double> amplitude_spectrum(const std::vector<double>& s) {
    const int points = spectrum_points(s.size());
    const std::size_t n = 2 * static_cast<std::size_t>(points);
    std::vector<double> folded(std::min(n, s.size()), 0.0);
    for (std::size_t i = 0; i < s.size(); ++i) folded[i % n] += s[i];
    const auto bins = real_spectrum(folded.data(), static_cast<int>(folded.size()), static_cast<int>(n));
    std::vector<double> a(static_cast<std::size_t>(points) + 1);
    for (std::size_t k = 0; k < a.size(); ++k) a[k] = std::abs(bins[k]);
    return a;
}
}  // namespace

double dominant_frequency(const std::vector<double>& s, double dt) {
    const auto a = amplitude_spectrum(s);
    const auto best = std::max_element(a.begin() + 1, a.end()) - a.begin();
    return a[best] > 0 ? 0.5 / dt * static_cast<double>(best) / (static_cast<double>(a.size()) - 1) : 0.0;
}

double highest_frequency(const std::vector<double>& s, double dt, double fraction) {
    const auto a = amplitude_spectrum(s);
    const double peak = *std::max_element(a.begin(), a.end());
    if (!(peak > 0)) return 0.0;
    const int points = static_cast<int>(a.size()) - 1;
    for (int k = points; k >= 0; --k)
        if (a[k] >= fraction * peak) return 0.5 / dt * k / points;
    return 0.0;
}

}  // namespace gprfwi
