// Proofs of the second-order machinery in double precision, on a
// heterogeneous lossy model, through the CPML and internal sub-steps, with
// directions that reach the model's edges (whose CPML extension the Born run
// perturbs and the products fold back):
//   - Born modelling J v against central differences of forward runs, the
//     error falling as h^2 to below 1e-8;
//   - <J v, w> = <v, J^T w> with J^T the gradient of the linear functional
//     <F(m), w> (1e-12);
//   - Hessian-vector products (full) against central differences of
//     gradients, falling as h^2 to below 1e-7;
//   - <u, H v> = <H u, v> for the full and the Gauss-Newton Hessian (1e-11);
//   - <v, H_GN v> = |J v|^2 >= 0;
//   - shot groups change only the order of the sums; single precision runs
//     the same code.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/data_misfits.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/material.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

struct Case {
    const char* name;
    int order;
    double dt_over_limit;  // > 1: internal sub-steps
    PointInterpolation interpolation;
};

class SecondOrder : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        const Case c = GetParam();
        model_ = test::heterogeneous_model(grid_, 3);
        const Model truth = test::heterogeneous_model(grid_, 4);
        const double dt = c.dt_over_limit * test::cfl_limit(grid_, std::min(model_.min_eps_mu(), truth.min_eps_mu()), c.order);
        survey_ = test::random_survey(grid_, 2, 2, 5, 140, 4.0e8, dt, 9);
        opt_ = test::double_options(c.order, 0);
        opt_.cpml.widths = {8, 6, 7, 9};
        opt_.cpml.kappa_max = 2.0;
        opt_.interpolation = c.interpolation;
        // fixed CPML profiles: the default follows the model, which the
        // derivatives (rightly) treat as constant
        opt_.cpml.reference_velocity = 1.0e8;
        observed_ = CpuPropagator(opt_).forward(truth, survey_);
    }
    ModelDirection direction(std::uint32_t seed) const { return test::smooth_direction(grid_, 0.4, 0.004, seed); }

    const Grid grid_{40, 32, 0.04, 0.05};
    Model model_;
    Survey survey_;
    PropagatorOptions opt_;
    Traces observed_;
};

/// ||a - b|| / ||b|| over both parameters' arrays, each relative to its own norm (the larger of the two).
double relative_difference(const Array2D& a_e, const Array2D& a_s, const Array2D& b_e, const Array2D& b_s) {
    auto rel = [](const Array2D& a, const Array2D& b) {
        double num = 0, den = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            num += std::pow(a.data()[i] - b.data()[i], 2);
            den += std::pow(b.data()[i], 2);
        }
        return std::sqrt(num / den);
    };
    return std::max(rel(a_e, b_e), rel(a_s, b_s));
}

/// Expects errors[k] (at h quartered per k) to fall as h^2 while they are above
/// `floor`, and the smallest to be below `target`. Below the floor the
/// difference quotient's rounding, about 1e-16 |F| / (h |F'|), ~1e-11 to
/// 1e-10 at the smallest h here, bends the slope.
void expect_second_order(const std::vector<double>& errors, double floor, double target, const char* what) {
    for (std::size_t k = 1; k < errors.size(); ++k) {
        if (errors[k] < floor) break;  // both ends clear of the rounding
        const double slope = std::log2(errors[k - 1] / errors[k]) / 2;  // h quartered: 4 per unit of slope
        EXPECT_NEAR(slope, 2.0, 0.15) << what << ": error " << errors[k - 1] << " -> " << errors[k];
    }
    EXPECT_LT(*std::min_element(errors.begin(), errors.end()), target) << what;
}

TEST_P(SecondOrder, BornMatchesCentralDifferencesOfForwardRuns) {
    CpuPropagator prop(opt_);
    const ModelDirection v = direction(21);
    const Traces jv = prop.born(model_, survey_, v);
    ASSERT_GT(test::norm(jv), 0.0);
    std::vector<double> errors;
    for (double h = 1.0 / 16; h > 1e-5; h /= 4) {
        Traces cd = prop.forward(test::perturbed(model_, v, h), survey_);
        const Traces minus = prop.forward(test::perturbed(model_, v, -h), survey_);
        for (std::size_t s = 0; s < cd.size(); ++s)
            for (std::size_t i = 0; i < cd[s].samples().size(); ++i)
                cd[s].samples()[i] = (cd[s].samples()[i] - minus[s].samples()[i]) / (2 * h);
        errors.push_back(test::relative_difference(cd, jv));
        std::printf("%s h=%.2e  |central - Jv|/|Jv| = %.3e\n", GetParam().name, h, errors.back());
    }
    expect_second_order(errors, 1e-9, 1e-8, "Born against central differences");
}

TEST_P(SecondOrder, BornIsTheTransposeOfTheGradient) {
    CpuPropagator prop(opt_);
    const ModelDirection v = direction(22);
    const Traces w = test::random_traces(survey_, 31);
    const double lhs = test::dot(prop.born(model_, survey_, v), w);
    const GradientResult g = prop.gradient(model_, survey_, LinearFunctional(w));
    const double rhs = test::dot(v, g.grad_eps_r, g.grad_sigma);
    ASSERT_GT(std::abs(lhs), 0.0);
    const double rel = std::abs(lhs - rhs) / std::abs(lhs);
    std::printf("%s <Jv,w> = %.15e, <v,J^T w> = %.15e, relative %.2e\n", GetParam().name, lhs, rhs, rel);
    EXPECT_LT(rel, 1e-12);
}

TEST_P(SecondOrder, HessianMatchesCentralDifferencesOfGradients) {
    CpuPropagator prop(opt_);
    const L2Misfit misfit(observed_);
    const ModelDirection v = direction(23);
    const HessianResult hv = prop.hessian(model_, survey_, misfit, v, HessianKind::full);
    const GradientResult g0 = prop.gradient(model_, survey_, misfit);
    EXPECT_NEAR(hv.misfit, g0.misfit, 1e-13 * g0.misfit) << "the product's forward must be the gradient's";
    std::vector<double> errors;
    for (double h = 1.0 / 16; h > 1e-5; h /= 4) {
        GradientResult plus = prop.gradient(test::perturbed(model_, v, h), survey_, misfit);
        const GradientResult minus = prop.gradient(test::perturbed(model_, v, -h), survey_, misfit);
        for (std::size_t i = 0; i < plus.grad_eps_r.size(); ++i) {
            plus.grad_eps_r.data()[i] = (plus.grad_eps_r.data()[i] - minus.grad_eps_r.data()[i]) / (2 * h);
            plus.grad_sigma.data()[i] = (plus.grad_sigma.data()[i] - minus.grad_sigma.data()[i]) / (2 * h);
        }
        errors.push_back(relative_difference(plus.grad_eps_r, plus.grad_sigma, hv.hv_eps_r, hv.hv_sigma));
        std::printf("%s h=%.2e  |central - Hv|/|Hv| = %.3e\n", GetParam().name, h, errors.back());
    }
    expect_second_order(errors, 1e-9, 1e-7, "Hessian against central differences of gradients");
}

TEST_P(SecondOrder, HessiansAreSymmetric) {
    CpuPropagator prop(opt_);
    const L2Misfit misfit(observed_);
    const ModelDirection u = direction(24), v = direction(25);
    for (const HessianKind kind : {HessianKind::full, HessianKind::gauss_newton}) {
        const HessianResult hu = prop.hessian(model_, survey_, misfit, u, kind);
        const HessianResult hv = prop.hessian(model_, survey_, misfit, v, kind);
        const double uhv = test::dot(u, hv.hv_eps_r, hv.hv_sigma), vhu = test::dot(v, hu.hv_eps_r, hu.hv_sigma);
        ASSERT_GT(std::abs(uhv), 0.0);
        const double rel = std::abs(uhv - vhu) / std::abs(uhv);
        std::printf("%s %s: <u,Hv> = %.15e, <Hu,v> = %.15e, relative %.2e\n", GetParam().name,
                    kind == HessianKind::full ? "full" : "Gauss-Newton", uhv, vhu, rel);
        EXPECT_LT(rel, 1e-11);
    }
}

TEST_P(SecondOrder, GaussNewtonIsTheSquareOfBorn) {
    CpuPropagator prop(opt_);
    const L2Misfit misfit(observed_);
    for (std::uint32_t seed = 40; seed < 43; ++seed) {
        // signed directions of both parameters, so that nothing is positive by construction
        ModelDirection v = direction(seed);
        const ModelDirection w = direction(seed + 100);
        for (std::size_t i = 0; i < v.eps_r.size(); ++i) {
            v.eps_r.data()[i] -= w.eps_r.data()[i];
            v.sigma.data()[i] -= w.sigma.data()[i];
        }
        const HessianResult h = prop.hessian(model_, survey_, misfit, v, HessianKind::gauss_newton);
        const double vhv = test::dot(v, h.hv_eps_r, h.hv_sigma), jv2 = test::dot(h.born, h.born);
        std::printf("%s <v,H_GN v> = %.15e, |Jv|^2 = %.15e\n", GetParam().name, vhv, jv2);
        EXPECT_GE(vhv, 0.0);
        EXPECT_NEAR(vhv, jv2, 1e-12 * jv2);
    }
}

const Case kCases[] = {
    {"order2", 2, 0.9, PointInterpolation::sinc},
    {"order4_substeps", 4, 1.4, PointInterpolation::sinc},
    {"order6_bilinear", 6, 0.8, PointInterpolation::bilinear},
    {"order8_substeps", 8, 2.3, PointInterpolation::sinc},
};
INSTANTIATE_TEST_SUITE_P(Stencils, SecondOrder, ::testing::ValuesIn(kCases),
                         [](const auto& test_info) { return std::string(test_info.param.name); });

TEST(SecondOrderDerivatives, OfTheCoefficientsMatchCentralDifferences) {
    const double dt = 2e-11;
    for (const double eps_r : {1.0, 4.0, 25.0})
        for (const double sigma : {0.0, 0.01, 0.5}) {
            const auto d2 = lossy_coefficient_second_derivatives(eps_r, sigma, dt);
            const double he = 1e-4 * eps_r, hs = 1e-4;
            auto first = [&](double e, double s) { return lossy_coefficient_derivatives(e, s, dt); };
            const auto ep = first(eps_r + he, sigma), em = first(eps_r - he, sigma);
            const auto sp = first(eps_r, sigma + hs), sm = first(eps_r, sigma - hs);
            auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-6 * std::max(std::abs(a), std::abs(b)) + 1e-300); };
            near(d2.ca_ee, (ep.dca_deps_r - em.dca_deps_r) / (2 * he));
            near(d2.ca_es, (ep.dca_dsigma - em.dca_dsigma) / (2 * he));
            near(d2.ca_es, (sp.dca_deps_r - sm.dca_deps_r) / (2 * hs));
            near(d2.ca_ss, (sp.dca_dsigma - sm.dca_dsigma) / (2 * hs));
            near(d2.cb_ee, (ep.dcb_deps_r - em.dcb_deps_r) / (2 * he));
            near(d2.cb_es, (ep.dcb_dsigma - em.dcb_dsigma) / (2 * he));
            near(d2.cb_es, (sp.dcb_deps_r - sm.dcb_deps_r) / (2 * hs));
            near(d2.cb_ss, (sp.dcb_dsigma - sm.dcb_dsigma) / (2 * hs));
        }
}

TEST(SecondOrderRuns, ShotGroupsChangeOnlyTheOrderOfTheSums) {
    const Grid g{36, 30, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 5), truth = test::heterogeneous_model(g, 6);
    const Survey survey = test::random_survey(g, 5, 1, 4, 100, 4.0e8, 0.9 * test::cfl_limit(g, 2.0, 4), 3);
    PropagatorOptions opt = test::double_options(4, 6);
    opt.cpml.reference_velocity = 1.0e8;
    const Traces observed = CpuPropagator(opt).forward(truth, survey);
    const L2Misfit misfit(observed);
    const ModelDirection v = test::smooth_direction(g, 0.3, 0.003, 7);
    opt.shot_groups = 1;
    CpuPropagator one(opt);
    opt.shot_groups = 3;
    CpuPropagator three(opt);
    for (const HessianKind kind : {HessianKind::full, HessianKind::gauss_newton}) {
        const HessianResult a = one.hessian(model, survey, misfit, v, kind), b = three.hessian(model, survey, misfit, v, kind);
        EXPECT_EQ(test::relative_difference(a.born, b.born), 0.0) << "the Born traces do not depend on the groups";
        EXPECT_LT(relative_difference(b.hv_eps_r, b.hv_sigma, a.hv_eps_r, a.hv_sigma), 1e-13);
    }
}

TEST(SecondOrderRuns, SinglePrecisionAgreesWithDouble) {
    const Grid g{48, 40, 0.03, 0.03};
    const Model model = test::heterogeneous_model(g, 8), truth = test::heterogeneous_model(g, 9);
    const Survey survey = test::random_survey(g, 2, 1, 6, 160, 4.0e8, 0.9 * test::cfl_limit(g, 2.0, 4), 4);
    PropagatorOptions opt = test::double_options(4, 8);
    opt.cpml.reference_velocity = 1.0e8;
    const Traces observed = CpuPropagator(opt).forward(truth, survey);
    const L2Misfit misfit(observed);
    const ModelDirection v = test::smooth_direction(g, 0.3, 0.003, 11);
    CpuPropagator dp(opt);
    opt.precision = Precision::single;
    CpuPropagator sp(opt);
    const double born = test::relative_difference(sp.born(model, survey, v), dp.born(model, survey, v));
    std::printf("Born, single against double: %.2e\n", born);
    EXPECT_LT(born, 1e-4);
    for (const HessianKind kind : {HessianKind::full, HessianKind::gauss_newton}) {
        const HessianResult a = sp.hessian(model, survey, misfit, v, kind), b = dp.hessian(model, survey, misfit, v, kind);
        const double rel = relative_difference(a.hv_eps_r, a.hv_sigma, b.hv_eps_r, b.hv_sigma);
        std::printf("Hessian (%s), single against double: %.2e\n", kind == HessianKind::full ? "full" : "Gauss-Newton", rel);
        EXPECT_LT(rel, 1e-3);
    }
}

// An inner conjugate-gradient loop: products at one model read the
// background from the levels the first product kept; the same values as a
// propagator that steps it anew, and a new model, survey or any other call
// steps it again.
TEST(SecondOrderRuns, ProductsAtOneModelReuseTheBackground) {
    const Grid g{36, 30, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 5), other = test::heterogeneous_model(g, 6);
    const Survey survey = test::random_survey(g, 3, 1, 4, 100, 4.0e8, 0.9 * test::cfl_limit(g, 2.0, 4), 3);
    PropagatorOptions opt = test::double_options(4, 6);
    opt.cpml.reference_velocity = 1.0e8;
    const Traces observed = CpuPropagator(opt).forward(other, survey);
    const L2Misfit misfit(observed);
    const ModelDirection u = test::smooth_direction(g, 0.3, 0.003, 7), v = test::smooth_direction(g, 0.2, 0.005, 8);
    for (const HessianKind kind : {HessianKind::full, HessianKind::gauss_newton}) {
        CpuPropagator p(opt);
        p.hessian(model, survey, misfit, u, kind);
        EXPECT_FALSE(p.last_timings().background_kept);
        const HessianResult kept = p.hessian(model, survey, misfit, v, kind);
        EXPECT_TRUE(p.last_timings().background_kept);
        const HessianResult fresh = CpuPropagator(opt).hessian(model, survey, misfit, v, kind);
        EXPECT_EQ(kept.hv_eps_r.values(), fresh.hv_eps_r.values());
        EXPECT_EQ(kept.hv_sigma.values(), fresh.hv_sigma.values());
        EXPECT_EQ(test::relative_difference(kept.born, fresh.born), 0.0);
        EXPECT_EQ(kept.misfit, fresh.misfit);
        p.hessian(other, survey, misfit, v, kind);
        EXPECT_FALSE(p.last_timings().background_kept) << "another model";
        p.forward(model, survey);
        p.hessian(other, survey, misfit, v, kind);
        EXPECT_FALSE(p.last_timings().background_kept) << "a forward call in between";
    }
    opt.precision = Precision::single;
    opt.snapshots.compression = SnapshotCompression::bf16;
    CpuPropagator approx(opt);
    approx.hessian(model, survey, misfit, u, HessianKind::gauss_newton);
    approx.hessian(model, survey, misfit, v, HessianKind::gauss_newton);
    EXPECT_FALSE(approx.last_timings().background_kept) << "bf16 levels are not the background";
}

TEST(SecondOrderRuns, FullProductsRefuseCheckpointing) {
    const Grid g{30, 24, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 5);
    const Survey survey = test::random_survey(g, 1, 1, 3, 60, 4.0e8, 0.9 * test::cfl_limit(g, 2.0, 4), 3);
    PropagatorOptions opt = test::double_options(4, 6);
    opt.snapshots.checkpoint_steps = 10;
    CpuPropagator p(opt);
    const Traces observed = p.forward(model, survey);
    const L2Misfit misfit(observed);
    const ModelDirection v = test::smooth_direction(g, 0.3, 0.003, 7);
    EXPECT_THROW(p.hessian(model, survey, misfit, v, HessianKind::full), InvalidArgument);
    // Gauss-Newton products run on the gradient's adjoint, checkpoints and all
    const HessianResult gn = p.hessian(model, survey, misfit, v, HessianKind::gauss_newton);
    opt.snapshots.checkpoint_steps = 0;
    const HessianResult kept = CpuPropagator(opt).hessian(model, survey, misfit, v, HessianKind::gauss_newton);
    EXPECT_LT(relative_difference(gn.hv_eps_r, gn.hv_sigma, kept.hv_eps_r, kept.hv_sigma), 1e-13);
}

TEST(SecondOrderRuns, MisfitHessiansInDataSpace) {
    // l2 and relative are quadratic in the synthetic traces: their Hessian
    // is the difference of two adjoint sources over the step, to rounding
    const Grid g{20, 20, 0.05, 0.05};
    const Survey survey = test::random_survey(g, 2, 1, 3, 120, 4.0e8, 0.9 * test::cfl_limit(g, 2.0, 4), 3);
    const Traces observed = test::random_traces(survey, 1), s = test::random_traces(survey, 2),
                 d = test::random_traces(survey, 3);
    for (const MisfitKind kind : {MisfitKind::l2, MisfitKind::relative}) {
        const BandLimitedMisfit m(kind, {0, 1}, observed, 1.0 / (8 * survey.dt), survey.dt);
        for (std::size_t shot = 0; shot < 2; ++shot) {
            ShotTraces hd, plus, minus, shifted = s[shot];
            m.apply_hessian(shot, s[shot], d[shot], hd);
            for (std::size_t i = 0; i < shifted.samples().size(); ++i) shifted.samples()[i] += d[shot].samples()[i];
            m.evaluate(shot, shifted, plus);
            m.evaluate(shot, s[shot], minus);
            for (std::size_t i = 0; i < plus.samples().size(); ++i) plus.samples()[i] -= minus.samples()[i];
            EXPECT_LT(test::relative_difference(Traces{plus}, Traces{hd}), 1e-12) << to_string(kind);
        }
    }
    const BandLimitedMisfit envelope(MisfitKind::envelope, {0, 1}, observed, 0.0, survey.dt);
    ShotTraces out;
    EXPECT_THROW(envelope.apply_hessian(0, s[0], d[0], out), InvalidArgument);
}

}  // namespace
}  // namespace gprfwi
