#pragma once
// Update coefficients of the lossy TM scheme, written once for the CPU
// kernels, the CUDA kernels and the gradient chain rule.
//
//   f  = sigma*dt / (2*eps),  eps = eps0*eps_r
//   ca = (1 - f) / (1 + f)                    Ey^{n+1} = ca*Ey^n + cb*(curlH - J)
//   cb = (dt/eps) / (1 + f)
//   cq = dt / (mu0*mu_r)                      H^{n+1/2} = H^{n-1/2} -/+ cq*D+[Ey]

#include "gprfwi/constants.hpp"
#include "gprfwi/host_device.hpp"

namespace gprfwi {

struct LossyCoefficients {
    double ca;  // dimensionless
    double cb;  // s/(F/m) = ohm*m*... : multiplies curlH (A/m^2) to give V/m
};

/// ca, cb for one node.
GPRFWI_HD LossyCoefficients lossy_coefficients(double eps_r, double sigma, double dt) {
    const double eps = kEps0 * eps_r;
    const double f = sigma * dt / (2.0 * eps);
    return {(1.0 - f) / (1.0 + f), (dt / eps) / (1.0 + f)};
}

/// cq for one node.
GPRFWI_HD double magnetic_coefficient(double mu_r, double dt) { return dt / (kMu0 * mu_r); }

/// Partial derivatives of ca and cb with respect to eps_r and sigma.
struct LossyCoefficientDerivatives {
    double dca_deps_r, dca_dsigma;
    double dcb_deps_r, dcb_dsigma;
};

/// d(ca, cb)/d(eps_r, sigma) at one node, for the gradient chain rule.
///   df/deps_r = -f/eps_r,            df/dsigma = dt/(2*eps)
///   dca/df    = -2/(1+f)^2,          dcb/df    = -cb/(1+f)
///   dcb/deps_r (at fixed f) = -cb/eps_r
GPRFWI_HD LossyCoefficientDerivatives lossy_coefficient_derivatives(double eps_r, double sigma,
                                                                     double dt) {
    const double eps = kEps0 * eps_r;
    const double f = sigma * dt / (2.0 * eps);
    const double cb = (dt / eps) / (1.0 + f);
    const double df_deps_r = -f / eps_r;
    const double df_dsigma = dt / (2.0 * eps);
    const double dca_df = -2.0 / ((1.0 + f) * (1.0 + f));
    const double dcb_df = -cb / (1.0 + f);
    return {dca_df * df_deps_r, dca_df * df_dsigma,
            -cb / eps_r + dcb_df * df_deps_r, dcb_df * df_dsigma};
}

/// Second partial derivatives of ca and cb with respect to eps_r and sigma,
/// for Hessian-vector products. With D = eps0*eps_r + sigma*dt/2:
///   ca = 1 - sigma*dt/D,  cb = dt/D
///   d2ca/deps_r2 = -2*sigma*dt*eps0^2/D^3   d2ca/deps_r dsigma = dt*eps0*(eps0*eps_r - sigma*dt/2)/D^3
///   d2ca/dsigma2 = dt^2*eps0*eps_r/D^3
///   d2cb/dp dq = 2*dt*D_p*D_q/D^3, D_eps_r = eps0, D_sigma = dt/2
struct LossyCoefficientSecondDerivatives {
    double ca_ee, ca_es, ca_ss;  // e: eps_r, s: sigma
    double cb_ee, cb_es, cb_ss;
};

GPRFWI_HD LossyCoefficientSecondDerivatives lossy_coefficient_second_derivatives(double eps_r, double sigma,
                                                                                 double dt) {
    const double d = kEps0 * eps_r + 0.5 * sigma * dt;
    const double d3 = d * d * d;
    const double de = kEps0, ds = 0.5 * dt;
    return {-2.0 * sigma * dt * kEps0 * kEps0 / d3, dt * kEps0 * (kEps0 * eps_r - 0.5 * sigma * dt) / d3,
            dt * dt * kEps0 * eps_r / d3,           2.0 * dt * de * de / d3,
            2.0 * dt * de * ds / d3,                2.0 * dt * ds * ds / d3};
}

}  // namespace gprfwi
