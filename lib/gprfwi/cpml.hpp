#pragma once
// Convolutional PML profiles (Roden and Gedney 2000; Komatitsch and Martin 2007).
//
// For distance s into a layer of thickness L:
//   d(s)     = d0 * (s/L)^N,   d0 = -(N+1) * c_ref * ln(R) / (2L)     [1/s]
//   kappa(s) = 1 + (kappa_max - 1) * (s/L)^N
//   alpha(s) = alpha_max * (1 - s/L)                                  [1/s]
//   b = exp(-(d/kappa + alpha) * dt),   a = d * (b - 1) / (kappa * (d + kappa*alpha))
// and the memory variable psi = b*psi + a*D[F] replaces D[F] by D[F]/kappa + psi.
// Profiles at integer and half nodes are separate arrays; where s = 0 they
// hold kappa = 1, a = 0, so psi stays zero there.

#include <array>
#include <vector>

#include "gprfwi/grid.hpp"

namespace gprfwi {

struct CpmlOptions {
    PmlWidths widths;            // cells per side
    double reflection = 1e-6;    // R, target normal-incidence reflection
    double power = 3.0;          // N, profile exponent (2..4)
    double kappa_max = 1.0;      // >= 1
    /// alpha_max in 1/s; <= 0 selects pi * frequency_hz.
    double alpha_max = -1.0;
    /// Dominant frequency (Hz) the CPML is tuned for (alpha_max = pi * f);
    /// <= 0 selects the largest dominant frequency of the batch's wavelets.
    /// Code that splits a survey into batches (over MPI ranks, say) sets it
    /// from the whole survey, so that a shot's traces never depend on which
    /// shots share its batch.
    double frequency_hz = -1.0;
    /// c_ref in m/s, the velocity the damping d0 is scaled for; <= 0 selects the
    /// fastest velocity of the model, c0 / sqrt(min eps_r*mu_r). The gradient
    /// holds the CPML profiles fixed: an inversion fixes c_ref (and alpha_max)
    /// once, so that the profiles do not move with the model it updates.
    double reference_velocity = -1.0;

    void validate() const;
};

/// Profile along one axis: one value per padded node (integer) or per half
/// node i + 1/2 (half). Arrays hold 1/kappa, a and b.
struct CpmlAxisProfile {
    std::vector<double> inv_kappa_int, a_int, b_int;    // at nodes i
    std::vector<double> inv_kappa_half, a_half, b_half; // at nodes i + 1/2
    int strip_low_end = 0;     // nodes [0, strip_low_end) may have psi != 0
    int strip_high_begin = 0;  // nodes [strip_high_begin, n) may have psi != 0

    /// The six arrays, in the order of kernels::CpmlAxis's pointers.
    std::array<const std::vector<double>*, 6> arrays() const {
        return {&inv_kappa_int, &a_int, &b_int, &inv_kappa_half, &a_half, &b_half};
    }
};

/// Profile for an axis of `n` padded nodes with spacing h_m, layer widths
/// w_low / w_high cells; c_ref in m/s, dt in s, alpha_max in 1/s.
CpmlAxisProfile make_cpml_axis(int n, double h_m, int w_low, int w_high, const CpmlOptions& opt,
                               double c_ref, double alpha_max, double dt);

}  // namespace gprfwi
