#pragma once
// The analytic field of a line current in a homogeneous lossy medium
// (PHYSICS.md), for time dependence exp(+j w t):
//   k = w sqrt(mu eps_c), eps_c = eps - j sigma/w (Im k < 0)
//   Ey(w, r) = -(w mu I(w) / 4) H0^(2)(k r)

#include <complex>
#include <vector>

namespace gprfwi::test {

/// H0^(2)(z) = J0(z) - i Y0(z) for Re z > 0, -pi/2 < arg z <= 0: power series
/// for |z| <= 17, Hankel's asymptotic expansion beyond.
std::complex<double> hankel2_0(std::complex<double> z);
std::complex<double> hankel2_0_series(std::complex<double> z);
std::complex<double> hankel2_0_asymptotic(std::complex<double> z);

/// Ey at times t = (n + 1) dt, n = 0..nt-1, at distance r_m from a line current
/// whose sample n is I((n + 1/2) dt), in a medium (eps_r, sigma, mu_r).
std::vector<double> analytic_line_source_trace(const std::vector<double>& current, double dt, double r_m,
                                               double eps_r, double sigma, double mu_r = 1.0);

}  // namespace gprfwi::test
