#include "analytic.hpp"

#include <cmath>
#include <stdexcept>

#include "gprfwi/constants.hpp"

namespace gprfwi::test {

using cd = std::complex<double>;
constexpr double kEulerGamma = 0.57721566490153286061;

cd hankel2_0_series(cd z) {
    // J0 = sum (-1)^k (z/2)^{2k} / (k!)^2
    // Y0 = (2/pi) [ (ln(z/2) + gamma) J0 + sum_{k>=1} (-1)^{k+1} H_k (z/2)^{2k} / (k!)^2 ]
    const cd q = 0.25 * z * z;
    cd term = 1.0, j0 = 1.0, ysum = 0.0;
    double harmonic = 0.0;
    for (int k = 1; k < 200; ++k) {
        term *= -q / static_cast<double>(k * k);
        harmonic += 1.0 / k;
        j0 += term;
        ysum -= harmonic * term;
        if (std::abs(term) < 1e-18 * std::abs(j0) && k > 5) break;
    }
    const cd y0 = (2.0 / kPi) * ((std::log(0.5 * z) + kEulerGamma) * j0 + ysum);
    return j0 - cd(0, 1) * y0;
}

cd hankel2_0_asymptotic(cd z) {
    // H0^(2)(z) ~ sqrt(2/(pi z)) exp(-i(z - pi/4)) sum_k (-i)^k a_k / z^k,
    // a_k = prod_{j=1..k} (-(2j-1)^2) / (k! 8^k); summed to the smallest term.
    cd sum = 1.0, term = 1.0;
    double last = 1.0;
    for (int k = 1; k < 60; ++k) {
        const double a = -static_cast<double>((2 * k - 1) * (2 * k - 1)) / (8.0 * k);
        term *= cd(0, -1) * a / z;
        if (std::abs(term) > last) break;
        last = std::abs(term);
        sum += term;
    }
    return std::sqrt(2.0 / (kPi * z)) * std::exp(cd(0, -1) * (z - kPi / 4)) * sum;
}

cd hankel2_0(cd z) {
    if (std::abs(z) > 17.0) return hankel2_0_asymptotic(z);
    // J0 and Y0 grow like exp(|Im z|) while H0^(2) decays: the series loses
    // about 2|Im z|/ln(10) digits to cancellation, so keep it where that is small.
    if (std::abs(z.imag()) > 2.0)
        throw std::domain_error("hankel2_0: series used outside |Im z| <= 2");
    return hankel2_0_series(z);
}

std::vector<double> analytic_line_source_trace(const std::vector<double>& current, double dt, double r,
                                               double eps_r, double sigma, double mu_r) {
    const int nt = static_cast<int>(current.size());
    const double eps = kEps0 * eps_r, mu = kMu0 * mu_r;
    // Frequency grid fine enough that the response has decayed within 1/df.
    const double df = 1.0 / (64.0 * nt * dt);
    const int nf = static_cast<int>(0.5 / dt / df);
    std::vector<double> out(nt, 0.0);
    for (int k = 1; k < nf; ++k) {
        const double w = 2.0 * kPi * k * df;
        // I(w) = dt * sum_n I_n exp(-j w (n + 1/2) dt)
        cd current_w = 0.0, phase = std::polar(1.0, -0.5 * w * dt);
        const cd step = std::polar(1.0, -w * dt);
        for (int n = 0; n < nt; ++n, phase *= step) current_w += current[n] * phase;
        current_w *= dt;
        if (std::abs(current_w) < 1e-14 * dt) continue;
        const cd eps_c(eps, -sigma / w);
        cd kk = w * std::sqrt(mu * eps_c);
        if (kk.imag() > 0) kk = -kk;
        const cd ey_w = -(w * mu * current_w / 4.0) * hankel2_0(kk * r);
        // Ey(t) = (1/pi) Re int_0^inf Ey(w) exp(j w t) dw, with dw = 2 pi df
        cd out_phase = std::polar(1.0, w * dt);
        const cd out_step = std::polar(1.0, w * dt);
        for (int n = 0; n < nt; ++n, out_phase *= out_step) out[n] += 2.0 * df * (ey_w * out_phase).real();
    }
    return out;
}

}  // namespace gprfwi::test
