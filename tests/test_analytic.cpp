// The simulated field of a line current in a homogeneous lossy medium against
// the analytic solution (PHYSICS.md), in absolute amplitude with no rescaling:
// normalised L2 error < 3% for stencil 4 at 15 nodes per shortest wavelength,
// and the error falls at the stencil's order when the grid is refined.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "analytic.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/wavelet.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

using cd = std::complex<double>;

TEST(Hankel, MatchesTheStandardLibraryOnTheRealAxis) {
    for (double x : {0.3, 1.0, 4.5, 11.0, 16.9, 17.1, 23.0, 60.0}) {
        const cd h = test::hankel2_0(x);
        EXPECT_NEAR(h.real(), std::cyl_bessel_j(0.0, x), 1e-10) << "J0(" << x << ")";
        EXPECT_NEAR(-h.imag(), std::cyl_neumann(0.0, x), 1e-10) << "Y0(" << x << ")";
    }
}

TEST(Hankel, SeriesAndAsymptoticAgreeWhereTheyMeet) {
    // the series is used for |z| <= 17 only while |Im z| <= 2 (see analytic.cpp)
    for (double arg : {0.0, -0.03, -0.06}) {
        const cd z = std::polar(17.0, arg);
        const cd a = test::hankel2_0_series(z), b = test::hankel2_0_asymptotic(z);
        // at |z| = 17 the series' terms reach ~5e6 times its sum, so each branch
        // carries ~5e-10 of rounding; 1e-8 is far below what the 3% test can see
        EXPECT_LT(std::abs(a - b) / std::abs(b), 1e-8) << "arg z = " << arg;
    }
}

struct LineSourceRun {
    double error;  // ||sim - analytic|| / ||analytic|| over all receivers
    double peak;   // largest |analytic| sample, V/m
};

// Line source at a node in eps_r = 4, sigma = 2 mS/m; receivers on nodes at
// 2 m (along x, along z, diagonally). The domain is large enough that nothing
// returns from the boundary within the window.
LineSourceRun run_line_source(int order, double dx, double dt, int nt, double f_peak,
                              const std::vector<double>* analytic = nullptr) {
    const double eps_r = 4.0, sigma = 0.002;
    const double v = speed_of_light() / std::sqrt(eps_r);
    const double window = nt * dt;
    const double half_width = 0.5 * (v * window + 2.0) + 1.0;  // m: no return before the window ends
    const int n_half = static_cast<int>(std::ceil(half_width / dx));
    const Grid g{2 * n_half + 1, 2 * n_half + 1, dx, dx};
    const Model model = Model::uniform(g, eps_r, sigma);
    Survey survey;
    survey.dt = dt;
    survey.nt = nt;
    Shot shot;
    const double c = n_half * dx;
    shot.sources.push_back({{c, c}, 1.0});
    shot.receivers = {{c + 2.0, c}, {c, c + 2.0}, {c + 1.2, c + 1.6}};
    shot.wavelet = ricker(nt, dt, f_peak);
    survey.shots.push_back(shot);
    PropagatorOptions opt = test::double_options(order, 10);
    opt.allow_substeps = false;
    const Traces sim = CpuPropagator(opt).forward(model, survey);
    const std::vector<double> ana =
        analytic ? *analytic : test::analytic_line_source_trace(shot.wavelet, dt, 2.0, eps_r, sigma);
    double num = 0, den = 0, peak = 0;
    for (int r = 0; r < 3; ++r)
        for (int n = 0; n < nt; ++n) {
            num += std::pow(sim[0](r, n) - ana[n], 2);
            den += ana[n] * ana[n];
            peak = std::max(peak, std::abs(ana[n]));
        }
    return {std::sqrt(num / den), peak};
}

double cfl(double dx, int order) {
    const double v = speed_of_light() / 2.0;
    return dx / (v * std::sqrt(2.0) * stencil_abs_sum(order));
}

// The shortest wavelength is taken at 3 f_peak, where the Ricker spectrum has
// fallen to 2.5e-3 of its peak.
TEST(AnalyticLineSource, Stencil4At15NodesPerShortestWavelengthIsWithin3Percent) {
    const double f_peak = 1.0e8, v = speed_of_light() / 2.0;
    const double dx = v / (3.0 * f_peak) / 15.0;
    const double dt = 0.9 * cfl(dx, 4);
    const int nt = static_cast<int>(std::ceil(60e-9 / dt));
    const LineSourceRun run = run_line_source(4, dx, dt, nt, f_peak);
    std::printf("stencil 4, 15 nodes per shortest wavelength, dt = 0.9 CFL: error %.4f, peak %.4g V/m\n",
                run.error, run.peak);
    EXPECT_LT(run.error, 0.03);
}

class Convergence : public ::testing::TestWithParam<int> {};

// dt is held far below the CFL limit so that the spatial error dominates.
TEST_P(Convergence, ErrorFallsAtTheStencilOrder) {
    const int order = GetParam();
    const double f_peak = 1.0e8;
    const std::vector<double> spacings = order == 2 ? std::vector<double>{0.1, 1.0 / 15, 0.05}
                                                    : std::vector<double>{0.2, 0.1, 1.0 / 15};
    const double dt = 0.1 * cfl(spacings.back(), order);
    const int nt = static_cast<int>(std::ceil(55e-9 / dt));
    const std::vector<double> analytic =
        test::analytic_line_source_trace(ricker(nt, dt, f_peak), dt, 2.0, 4.0, 0.002);
    std::vector<double> err;
    for (double dx : spacings) {
        err.push_back(run_line_source(order, dx, dt, nt, f_peak, &analytic).error);
        std::printf("order %d dx = %.4f m: error %.3e\n", order, dx, err.back());
    }
    const double slope = std::log(err.front() / err.back()) / std::log(spacings.front() / spacings.back());
    std::printf("order %d: observed convergence order %.2f\n", order, slope);
    EXPECT_NEAR(slope, order, 0.5);
}

INSTANTIATE_TEST_SUITE_P(Stencils, Convergence, ::testing::Values(2, 4));

}  // namespace
}  // namespace gprfwi
