#include "gprfwi/wavelet.hpp"

#include <cmath>
#include <complex>
#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"

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

double dominant_frequency(const std::vector<double>& s, double dt) {
    const int n_freq = 1024;
    const double f_nyquist = 0.5 / dt;
    double best_f = 0, best = 0;
    for (int k = 1; k < n_freq; ++k) {
        const double f = f_nyquist * k / n_freq;
        std::complex<double> acc = 0;
        const std::complex<double> step = std::polar(1.0, -2.0 * kPi * f * dt);
        std::complex<double> phase = 1.0;
        for (double v : s) {
            acc += v * phase;
            phase *= step;
        }
        if (std::abs(acc) > best) {
            best = std::abs(acc);
            best_f = f;
        }
    }
    return best_f;
}

}  // namespace gprfwi
