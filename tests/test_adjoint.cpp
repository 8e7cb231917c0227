// Dot-product tests of the source-to-data map F (wavelets -> traces) for a
// fixed model: <F x, y> = <x, F^T y> to 1e-12 in double precision, where F^T y
// is the wavelet gradient of the linear functional J = <F x, y>. The setups
// exercise everything between the wavelet and the trace: up-sampling to
// internal steps, off-grid injection, the CPML (kappa > 1, alpha > 0),
// heterogeneous lossy materials, several shots and sources, and the receiver
// down-sampling.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "gprfwi/cpu_propagator.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

struct DotCase {
    int order;
    double dt_over_limit;  // > 1 forces internal sub-steps
    PointInterpolation interpolation;
    PmlWidths pml;
};

class DotProduct : public ::testing::TestWithParam<DotCase> {};

TEST_P(DotProduct, SourceToDataMapAndItsAdjointAgree) {
    const DotCase c = GetParam();
    const Grid g{34, 27, 0.05, 0.04};
    const Model model = test::heterogeneous_model(g, 11);
    const double dt = c.dt_over_limit * test::cfl_limit(g, model.min_eps_mu(), c.order);
    Survey survey = test::random_survey(g, 3, 2, 4, 90, 3.0e8, dt, 5);
    survey = test::with_random_wavelets(survey, 17);  // x: white noise excites every frequency
    const Traces y = test::random_traces(survey, 23);

    PropagatorOptions opt = test::double_options(c.order, 0);
    opt.cpml.widths = c.pml;
    opt.cpml.kappa_max = 3.0;
    opt.interpolation = c.interpolation;
    CpuPropagator prop(opt);

    const Traces fx = prop.forward(model, survey);
    const GradientResult adj = prop.gradient(model, survey, LinearFunctional(y));
    const double lhs = test::dot(fx, y);
    double rhs = 0;
    for (std::size_t s = 0; s < survey.shots.size(); ++s)
        for (int n = 0; n < survey.nt; ++n) rhs += survey.shots[s].wavelet[n] * adj.grad_wavelet[s][n];
    EXPECT_GT(std::abs(lhs), 0.0);
    EXPECT_NEAR(adj.misfit, lhs, 1e-13 * std::abs(lhs)) << "the gradient run's forward must equal forward()";
    const double rel = std::abs(lhs - rhs) / std::abs(lhs);
    RecordProperty("relative_error", std::to_string(rel));
    std::printf("dot-product relative error %.3e\n", rel);
    EXPECT_LT(rel, 1e-12) << "<Fx,y> = " << lhs << ", <x,F^T y> = " << rhs;
}

INSTANTIATE_TEST_SUITE_P(
    Stencils, DotProduct,
    ::testing::Values(DotCase{2, 0.9, PointInterpolation::sinc, {6, 8, 7, 5}},
                      DotCase{4, 0.9, PointInterpolation::sinc, {6, 8, 7, 5}},
                      DotCase{8, 0.9, PointInterpolation::sinc, {6, 8, 7, 5}},
                      DotCase{2, 2.5, PointInterpolation::sinc, {6, 8, 7, 5}},
                      DotCase{4, 1.7, PointInterpolation::bilinear, {6, 8, 7, 5}},
                      DotCase{8, 3.2, PointInterpolation::sinc, {10, 10, 10, 10}},
                      DotCase{6, 1.3, PointInterpolation::sinc, {0, 3, 0, 9}}),
    [](const auto& param_info) {
        const DotCase& c = param_info.param;
        return "order" + std::to_string(c.order) + "_dt" + std::to_string(static_cast<int>(c.dt_over_limit * 10)) +
               "_" + to_string(c.interpolation) + "_pml" + std::to_string(c.pml.left) + "x" +
               std::to_string(c.pml.bottom);
    });

}  // namespace
}  // namespace gprfwi
