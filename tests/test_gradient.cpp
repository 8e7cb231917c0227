// Taylor tests of the eps_r and sigma gradients on a heterogeneous lossy model,
// through the CPML (the perturbation reaches the model edges, whose gradient
// includes the folded CPML contributions) and internal sub-steps:
//   r1(h) = |J(m + h dm) - J(m)|              falls as h   (slope 1)
//   r2(h) = |J(m + h dm) - J(m) - h <g, dm>|  falls as h^2 (slope 2)
// and the directional derivative <g, dm> matches a central difference.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

using test::perturbed;

double directional(const GradientResult& g, const ModelDirection& p) { return test::dot(p, g.grad_eps_r, g.grad_sigma); }

struct TaylorCase {
    const char* name;
    double eps_scale;    // of the perturbation in eps_r
    double sigma_scale;  // in S/m
    int order;
    double central_step;  // h of the central difference, relative to dm
};

class Taylor : public ::testing::TestWithParam<TaylorCase> {
protected:
    void SetUp() override {
        model_ = test::heterogeneous_model(grid_, 3);
        const Model truth = test::heterogeneous_model(grid_, 4);
        const double dt = 1.4 * test::cfl_limit(grid_, std::min(model_.min_eps_mu(), truth.min_eps_mu()), 8);
        survey_ = test::random_survey(grid_, 2, 2, 5, 140, 4.0e8, dt, 9);
        opt_ = test::double_options(GetParam().order, 0);
        opt_.cpml.widths = {8, 6, 7, 9};
        opt_.cpml.kappa_max = 2.0;
        // fixed CPML profiles: the default c_ref follows min(eps_r), which the
        // gradient (rightly) treats as constant
        opt_.cpml.reference_velocity = 1.0e8;
        observed_ = CpuPropagator(opt_).forward(truth, survey_);
    }
    double misfit(const Model& m) {
        return CpuPropagator(opt_).gradient(m, survey_, observed_).misfit;
    }
    const Grid grid_{40, 32, 0.04, 0.05};
    Model model_;
    Survey survey_;
    PropagatorOptions opt_;
    Traces observed_;
};

TEST_P(Taylor, RemaindersFallAtFirstAndSecondOrder) {
    const TaylorCase c = GetParam();
    CpuPropagator prop(opt_);
    const GradientResult g = prop.gradient(model_, survey_, observed_);
    const ModelDirection p = test::smooth_direction(grid_, c.eps_scale, c.sigma_scale, 21);
    const double j0 = g.misfit, gdm = directional(g, p);
    ASSERT_GT(j0, 0.0);
    ASSERT_NE(gdm, 0.0);

    std::vector<double> r1, r2;
    double h = 0.25;  // h = 1/4 .. 1/64: the linear term dominates r1 throughout
    for (int k = 0; k < 5; ++k, h *= 0.5) {
        const double jh = misfit(perturbed(model_, p, h));
        r1.push_back(std::abs(jh - j0));
        r2.push_back(std::abs(jh - j0 - h * gdm));
    }
    for (std::size_t k = 1; k < r1.size(); ++k) {
        const double s1 = std::log2(r1[k - 1] / r1[k]), s2 = std::log2(r2[k - 1] / r2[k]);
        std::printf("%s h=2^-%zu  r1=%.3e slope %.3f   r2=%.3e slope %.3f\n", c.name, k + 2, r1[k], s1, r2[k], s2);
        EXPECT_NEAR(s1, 1.0, 0.1) << "first-order remainder at step " << k;
        EXPECT_NEAR(s2, 2.0, 0.1) << "second-order remainder at step " << k;
    }

    // <g, dm> against a central difference (error O(h^2) in exact arithmetic)
    const double hc = c.central_step;
    const double central = (misfit(perturbed(model_, p, hc)) - misfit(perturbed(model_, p, -hc))) / (2 * hc);
    const double rel = std::abs(central - gdm) / std::abs(gdm);
    std::printf("%s J = %.6e, <g,dm> = %.12e, central difference = %.12e, relative %.2e\n", c.name, j0, gdm, central, rel);
    EXPECT_LT(rel, 1e-7);
}

// What MPI relies on: with the survey-wide choices fixed once
// (fix_survey_wide_options), the misfit and gradient of a survey are the sums
// of those of its parts, to summation-order rounding.
TEST(Batches, GradientsOfPartsAddUpToTheWhole) {
    const Grid g{40, 32, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 3), truth = test::heterogeneous_model(g, 4);
    const double dt = 0.9 * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), 4);
    Survey all = test::random_survey(g, 4, 1, 5, 150, 4e8, dt, 9);  // wavelets of different frequencies
    const PropagatorOptions opt = fix_survey_wide_options(test::double_options(4, 8), model, all);
    const Traces observed = CpuPropagator(opt).forward(truth, all);
    const GradientResult whole = CpuPropagator(opt).gradient(model, all, observed);
    double misfit = 0;
    Array2D ge(g.nz, g.nx, 0.0), gs(g.nz, g.nx, 0.0);
    for (int part = 0; part < 2; ++part) {
        Survey half = all;
        half.shots = {all.shots[2 * part], all.shots[2 * part + 1]};
        const Traces obs{observed[2 * part], observed[2 * part + 1]};
        const GradientResult r = CpuPropagator(opt).gradient(model, half, obs);
        misfit += r.misfit;
        for (std::size_t i = 0; i < ge.size(); ++i) {
            ge.data()[i] += r.grad_eps_r.data()[i];
            gs.data()[i] += r.grad_sigma.data()[i];
        }
    }
    EXPECT_NEAR(misfit, whole.misfit, 1e-12 * whole.misfit);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ge.size(); ++i) {
        num += std::pow(ge.data()[i] - whole.grad_eps_r.data()[i], 2) + std::pow(gs.data()[i] - whole.grad_sigma.data()[i], 2);
        den += std::pow(whole.grad_eps_r.data()[i], 2) + std::pow(whole.grad_sigma.data()[i], 2);
    }
    EXPECT_LT(std::sqrt(num / den), 1e-12);
    EXPECT_GT(opt.cpml.reference_velocity, 0.0);
    EXPECT_GT(opt.cpml.frequency_hz, 0.0);
}

// Shot groups (resolve_shot_groups): the rule, the split into runs of
// neighbouring shots, and what grouping changes: only the order in which the
// gradient adds the shots' imaging terms (each group into sums of its own),
// so traces, misfit and wavelet gradients are bitwise those of one group and
// the model gradients agree to summation-order rounding.
TEST(ShotGroups, RuleAndSplit) {
    const PaddedGrid small(Grid{1000, 1000, 0.01, 0.01}, PmlWidths::uniform(20));
    const PaddedGrid large(Grid{2100, 2100, 0.01, 0.01}, PmlWidths::uniform(20));
    PropagatorOptions o;
    EXPECT_EQ(resolve_shot_groups(o, 8, small), 2);
    EXPECT_EQ(resolve_shot_groups(o, 4, small), 2);
    EXPECT_EQ(resolve_shot_groups(o, 3, small), 1);
    EXPECT_EQ(resolve_shot_groups(o, 8, large), 1);
    o.snapshots.storage = SnapshotStorage::host;
    EXPECT_EQ(resolve_shot_groups(o, 8, small), 1);
    o.snapshots.storage = SnapshotStorage::device;
    o.precision = Precision::double_precision;
    EXPECT_EQ(resolve_shot_groups(o, 8, small), 1);
    o.shot_groups = 3;
    EXPECT_EQ(resolve_shot_groups(o, 8, small), 3);
    EXPECT_EQ(resolve_shot_groups(o, 2, large), 2);  // at most one a shot
    o.shot_groups = -1;
    EXPECT_THROW(o.validate(), InvalidArgument);
    o.shot_groups = kMaxShotGroups + 1;
    EXPECT_THROW(o.validate(), InvalidArgument);
    const std::size_t five_in_three[] = {0, 1, 3, 5}, eight_in_two[] = {0, 4, 8};
    for (int g = 0; g <= 3; ++g) EXPECT_EQ(shot_group_begin(5, 3, g), five_in_three[g]);
    for (int g = 0; g <= 2; ++g) EXPECT_EQ(shot_group_begin(8, 2, g), eight_in_two[g]);
}

TEST(ShotGroups, ChangeOnlyTheOrderOfTheGradientsSums) {
    const Grid g{40, 32, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 3), truth = test::heterogeneous_model(g, 4);
    const double dt = 0.9 * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), 4);
    const Survey survey = test::random_survey(g, 5, 1, 4, 150, 4e8, dt, 9);
    for (const Precision precision : {Precision::double_precision, Precision::single}) {
        PropagatorOptions opt = test::double_options(4, 8);
        opt.precision = precision;
        opt.illumination = true;
        opt.shot_groups = 1;
        const Traces observed = CpuPropagator(opt).forward(truth, survey);
        CpuPropagator one(opt);
        const GradientResult ref = one.gradient(model, survey, observed);
        EXPECT_EQ(one.last_timings().shot_groups, 1);
        for (const int groups : {2, 3, 5}) {
            opt.shot_groups = groups;
            CpuPropagator grouped(opt);
            const GradientResult r = grouped.gradient(model, survey, observed);
            EXPECT_EQ(grouped.last_timings().shot_groups, groups);
            for (std::size_t s = 0; s < survey.shots.size(); ++s) {
                EXPECT_EQ(r.synthetic[s].samples(), ref.synthetic[s].samples()) << groups << " groups, shot " << s;
                EXPECT_EQ(r.grad_wavelet[s], ref.grad_wavelet[s]) << groups << " groups, shot " << s;
            }
            EXPECT_EQ(r.misfit, ref.misfit);
            const double tol = precision == Precision::single ? 1e-6 : 1e-12;
            for (const auto& [got, want] : {std::pair{&r.grad_eps_r, &ref.grad_eps_r},
                                            std::pair{&r.grad_sigma, &ref.grad_sigma},
                                            std::pair{&r.illumination, &ref.illumination}}) {
                ASSERT_EQ(got->size(), want->size());
                double num = 0, den = 0;
                for (std::size_t i = 0; i < got->size(); ++i) {
                    num = std::max(num, std::abs(got->data()[i] - want->data()[i]));
                    den = std::max(den, std::abs(want->data()[i]));
                }
                EXPECT_LT(num, tol * den) << groups << " groups";
                EXPECT_GT(den, 0.0);
            }
        }
    }
}

// Illumination (for preconditioning) is the forward field's energy: at a
// receiver on a node it equals the sum of the squared trace samples, and it
// is off unless asked for.
TEST(Illumination, IsTheForwardFieldEnergyAtEachNode) {
    const Grid g{40, 32, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 5);
    const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4);  // no internal sub-steps
    Survey s = test::random_survey(g, 2, 1, 1, 160, 4e8, dt, 3);
    const int rx = 27, rz = 11;  // on a node
    for (Shot& shot : s.shots) shot.receivers = {{rx * g.dx, rz * g.dz}};
    PropagatorOptions opt = test::double_options(4, 8);
    opt.interpolation = PointInterpolation::bilinear;  // a receiver on a node samples just that node
    const Traces zero = make_traces(s);
    EXPECT_TRUE(CpuPropagator(opt).gradient(model, s, zero).illumination.size() == 0);
    opt.illumination = true;
    const GradientResult r = CpuPropagator(opt).gradient(model, s, zero);
    ASSERT_EQ(r.illumination.nz(), g.nz);
    double energy = 0;
    for (const ShotTraces& t : r.synthetic)
        for (double v : t.samples()) energy += v * v;
    EXPECT_NEAR(r.illumination(rz, rx), energy, 1e-12 * energy);
    for (double v : r.illumination.values()) EXPECT_GE(v, 0.0);
    // with every other level kept, the weight 2 keeps it an estimate of the same sum
    opt.snapshots.interval = 2;
    const GradientResult half = CpuPropagator(opt).gradient(model, s, zero);
    EXPECT_NEAR(half.illumination(rz, rx), energy, 0.05 * energy);
}

INSTANTIATE_TEST_SUITE_P(Parameters, Taylor,
                         ::testing::Values(TaylorCase{"eps_r", 0.03, 0.0, 4, 1e-4}, TaylorCase{"sigma", 0.0, 0.0004, 4, 1e-4},
                                           TaylorCase{"both", 0.03, 0.0004, 4, 1e-4}, TaylorCase{"both_order8", 0.03, 0.0004, 8, 1e-4},
                                           TaylorCase{"both_order2", 0.003, 0.00004, 2, 1e-3}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace gprfwi
