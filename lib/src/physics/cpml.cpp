#include "gprfwi/cpml.hpp"

#include <cmath>
#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi {

void CpmlOptions::validate() const {
    if (!(reflection > 0 && reflection < 1))
        throw InvalidArgument(fmt::format("CPML reflection must be in (0, 1), got {}", reflection));
    if (!(power >= 1 && power <= 6))
        throw InvalidArgument(fmt::format("CPML power must be in [1, 6], got {}", power));
    if (!(kappa_max >= 1 && std::isfinite(kappa_max)))
        throw InvalidArgument(fmt::format("CPML kappa_max must be >= 1, got {}", kappa_max));
    if (!std::isfinite(reference_velocity))
        throw InvalidArgument(fmt::format("CPML reference velocity must be finite, got {}", reference_velocity));
    if (!std::isfinite(frequency_hz))
        throw InvalidArgument(fmt::format("CPML frequency must be finite, got {} Hz", frequency_hz));
    if (!std::isfinite(alpha_max))
        throw InvalidArgument(fmt::format("CPML alpha_max must be finite, got {}", alpha_max));
}

namespace {

struct Coefficients {
    double inv_kappa, a, b;
};

// Profile at normalised depth r = s/L in [0, 1].
Coefficients cpml_at(double r, double L, const CpmlOptions& o, double c_ref, double alpha_max, double dt) {
    if (r <= 0) return {1.0, 0.0, 1.0};
    const double d0 = -(o.power + 1.0) * c_ref * std::log(o.reflection) / (2.0 * L);
    const double rn = std::pow(r, o.power);
    const double d = d0 * rn;
    const double kappa = 1.0 + (o.kappa_max - 1.0) * rn;
    const double alpha = alpha_max * (1.0 - r);
    const double b = std::exp(-(d / kappa + alpha) * dt);
    const double a = d * (b - 1.0) / (kappa * (d + kappa * alpha));
    return {1.0 / kappa, a, b};
}

}  // namespace

CpmlAxisProfile make_cpml_axis(int n, double h, int w_low, int w_high, const CpmlOptions& o,
                               double c_ref, double alpha_max, double dt) {
    CpmlAxisProfile p;
    for (auto* v : {&p.inv_kappa_int, &p.inv_kappa_half}) v->assign(n, 1.0);
    for (auto* v : {&p.a_int, &p.a_half}) v->assign(n, 0.0);
    for (auto* v : {&p.b_int, &p.b_half}) v->assign(n, 1.0);
    const double low_edge = w_low;               // first model node
    const double high_edge = n - 1 - w_high;     // last model node
    auto fill = [&](double pos, double& ik, double& a, double& b) {
        Coefficients c{1.0, 0.0, 1.0};
        if (pos < low_edge && w_low > 0) c = cpml_at((low_edge - pos) / w_low, w_low * h, o, c_ref, alpha_max, dt);
        else if (pos > high_edge && w_high > 0)
            c = cpml_at((pos - high_edge) / w_high, w_high * h, o, c_ref, alpha_max, dt);
        ik = c.inv_kappa;
        a = c.a;
        b = c.b;
    };
    for (int i = 0; i < n; ++i) {
        fill(i, p.inv_kappa_int[i], p.a_int[i], p.b_int[i]);
        fill(i + 0.5, p.inv_kappa_half[i], p.a_half[i], p.b_half[i]);
    }
    // Integer nodes i < w_low and half nodes i + 1/2 < w_low lie in the low
    // strip; integer nodes i > n-1-w_high and half nodes i >= n-1-w_high in the high one.
    p.strip_low_end = w_low;
    p.strip_high_begin = w_high > 0 ? n - 1 - w_high : n;
    return p;
}

}  // namespace gprfwi
