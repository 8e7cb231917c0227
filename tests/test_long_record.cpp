// Long records: the exact adjoint of the CPML stays stable.
//
// The CPML memory variables of the discrete adjoint are the transpose of the
// forward's; a transposed recursion is stable exactly when the forward one
// is, but rounding could still feed a slowly growing mode that only a long
// record shows (DeepGPR avoids the exact CPML adjoint for fear of it). On a
// lossless, high-contrast model with stencil 8 and a thin CPML, the waves
// leave the model long before the end of a 60,000-step record: the gradient
// of the 60,000-step record must then be finite and equal to that of its
// first 20,000 steps, to rounding. Any late growth in the forward or the
// adjoint (a mode of the memory variables, an unstable corner) would add to
// the long one's gradient what the short one lacks.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "gprfwi/propagator.hpp"
#include "gprfwi/wavelet.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

constexpr int kLongSteps = 60000, kShortSteps = 20000;

// Lossless (sigma = 0) wet ground (eps_r 16) with an air void (eps_r 1,
// reflection coefficient 0.6) and a dry block (eps_r 5). Both are slower
// than the ground is fast, so nothing traps a wave by total internal
// reflection: the record ends when the waves have left through the CPML.
// `shift` moves the block (the starting model has it one node off).
Model lossless_model(const Grid& g, int shift) {
    Model m = Model::uniform(g, 16.0, 0.0);
    for (int iz = 14; iz < 26; ++iz)
        for (int ix = 10 + shift; ix < 22 + shift; ++ix) m.eps_r(iz, ix) = 5.0;
    for (int iz = 28; iz < 36; ++iz)
        for (int ix = 28; ix < 38; ++ix) m.eps_r(iz, ix) = 1.0;
    return m;
}

Traces first_samples(const Traces& t, int nt) {
    Traces out;
    for (const ShotTraces& s : t) {
        ShotTraces cut(s.n_receivers(), nt);
        for (int r = 0; r < s.n_receivers(); ++r) std::copy_n(s.receiver(r), nt, cut.receiver(r));
        out.push_back(std::move(cut));
    }
    return out;
}

Survey with_samples(Survey s, int nt) {
    s.nt = nt;
    for (Shot& shot : s.shots) shot.wavelet.resize(nt);
    return s;
}

double max_abs(const Array2D& a) {
    double m = 0;
    for (double v : a.values()) m = std::max(m, std::abs(v));
    return m;
}

double max_abs_difference(const Array2D& a, const Array2D& b) {
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a.data()[i] - b.data()[i]));
    return m;
}

class LongRecord : public ::testing::TestWithParam<BackendKind> {};

TEST_P(LongRecord, ExactAdjointStaysStableOver60000Steps) {
    if (GetParam() == BackendKind::cuda) GPRFWI_SKIP_WITHOUT_GPU();
    const Grid g{48, 48, 0.05, 0.05};
    const Model truth = lossless_model(g, 0), start = lossless_model(g, 1);

    PropagatorOptions opt = test::double_options(8, 4);  // thin CPML: 4 cells
    opt.backend = GetParam();
    opt.allow_substeps = false;
    opt.snapshots.checkpoint_steps = -1;  // exact, in bounded memory
    opt.cpml.reference_velocity = 7.5e7;  // the ground's (fixed, so both models share the profiles)

    Survey survey;
    survey.dt = 0.95 * test::cfl_limit(g, 1.0, 8);
    survey.nt = kLongSteps;
    Shot shot;
    shot.sources.push_back({{0.42, 0.61}, 1.0});
    shot.receivers = {{2.05, 0.33}, {1.92, 1.88}, {0.51, 2.11}, {1.21, 1.29}};
    shot.wavelet = ricker(kLongSteps, survey.dt, 1.5e8);
    survey.shots.push_back(shot);

    const Traces observed = make_propagator(opt)->forward(truth, survey);

    // The premise: the traces have died out by the shorter record's end.
    double peak = 0, tail = 0;
    for (const ShotTraces& s : observed)
        for (int r = 0; r < s.n_receivers(); ++r)
            for (int n = 0; n < s.nt(); ++n) {
                double& m = n < kShortSteps ? peak : tail;
                m = std::max(m, std::abs(s(r, n)));
            }
    std::printf("traces: peak %.3e, largest after step %d %.3e\n", peak, kShortSteps, tail);
    ASSERT_GT(peak, 0.0);
    ASSERT_LT(tail, 1e-7 * peak) << "the waves have not left the model by step " << kShortSteps;

    const GradientResult longer = make_propagator(opt)->gradient(start, survey, observed);
    const GradientResult shorter =
        make_propagator(opt)->gradient(start, with_samples(survey, kShortSteps), first_samples(observed, kShortSteps));

    for (const Array2D* a : {&longer.grad_eps_r, &longer.grad_sigma})
        for (double v : a->values()) ASSERT_TRUE(std::isfinite(v)) << "gradient of the long record";
    const double scale_e = max_abs(shorter.grad_eps_r), scale_s = max_abs(shorter.grad_sigma);
    const double de = max_abs_difference(longer.grad_eps_r, shorter.grad_eps_r) / scale_e;
    const double ds = max_abs_difference(longer.grad_sigma, shorter.grad_sigma) / scale_s;
    std::printf("misfit %.12e (long) %.12e (short); gradients differ by %.2e (eps_r), %.2e (sigma) of their largest\n",
                longer.misfit, shorter.misfit, de, ds);
    ASSERT_GT(scale_e, 0.0);
    ASSERT_GT(scale_s, 0.0);
    EXPECT_NEAR(longer.misfit, shorter.misfit, 1e-12 * shorter.misfit);
    EXPECT_LT(de, 1e-10);
    EXPECT_LT(ds, 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Backends, LongRecord, ::testing::Values(BackendKind::cpu, BackendKind::cuda),
                         [](const ::testing::TestParamInfo<BackendKind>& p) { return std::string(to_string(p.param)); });

}  // namespace
}  // namespace gprfwi
