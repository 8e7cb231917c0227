// Physical and numerical invariants of the forward propagator: reciprocity,
// CPML absorption, sub-stepping, precision, and independence of the result
// from the thread count and from batching shots.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <omp.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/wavelet.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

Survey one_shot(const Position& src, const std::vector<Position>& rec, double dt, int nt, double f) {
    Survey s;
    s.dt = dt;
    s.nt = nt;
    s.shots.push_back({{{src, 1.0}}, rec, ricker(nt, dt, f)});
    return s;
}

// Swapping source and receiver gives the same trace. Without CPML the discrete
// operator is symmetric (Ey'' system M s^2 + K with M, K symmetric, injection
// and sampling sharing weights), so reciprocity holds to rounding.
TEST(Reciprocity, SwappingSourceAndReceiverGivesTheSameTrace) {
    const Grid g{60, 50, 0.03, 0.025};
    const Model model = test::heterogeneous_model(g, 7);
    const double dt = 0.8 * test::cfl_limit(g, model.min_eps_mu(), 4);
    const Position a{0.412, 0.333}, b{1.291, 0.977};  // off the grid: sinc weights
    CpuPropagator p(test::double_options(4, 0));
    const Traces ab = p.forward(model, one_shot(a, {b}, dt, 400, 5e8));
    const Traces ba = p.forward(model, one_shot(b, {a}, dt, 400, 5e8));
    const double rel = test::relative_difference(ab, ba);
    std::printf("reciprocity without CPML: relative difference %.3e (peak %.3e V/m)\n", rel, test::norm(ab));
    EXPECT_GT(test::norm(ab), 0.0);
    EXPECT_LT(rel, 1e-10);
}

// With a CPML, K = sum over axes of S D- S' D+ with diagonal stretchings S
// (per frequency) that commute across axes, so K^T = S^-1 K S: reciprocity
// still holds exactly between points outside the CPML, where S = 1.
TEST(Reciprocity, HoldsWithCpmlBetweenPointsOutsideIt) {
    const Grid g{60, 50, 0.03, 0.025};
    const Model model = test::heterogeneous_model(g, 7);
    const double dt = 0.8 * test::cfl_limit(g, model.min_eps_mu(), 4);
    const Position a{0.412, 0.333}, b{1.291, 0.977};
    CpuPropagator p(test::double_options(4, 20));
    const Traces ab = p.forward(model, one_shot(a, {b}, dt, 400, 5e8));
    const Traces ba = p.forward(model, one_shot(b, {a}, dt, 400, 5e8));
    const double rel = test::relative_difference(ab, ba);
    std::printf("reciprocity with a 20-cell CPML: relative difference %.3e\n", rel);
    EXPECT_LT(rel, 1e-10);
}

// Reflections from a 20-cell CPML stay below 1% of the direct wave's peak at
// every receiver, including receivers along the boundary (grazing incidence).
TEST(Cpml, ReflectionsStayBelowOnePercentOfTheDirectWave) {
    const double eps_r = 4.0, sigma = 0.001, f = 2e8;
    const double v = speed_of_light() / std::sqrt(eps_r);
    const double dx = v / (3 * f) / 15;  // 15 nodes per shortest wavelength
    const Grid small{120, 100, dx, dx};
    const double dt = 0.9 * test::cfl_limit(small, eps_r, 4);
    const int nt = static_cast<int>(40e-9 / dt);
    const int pad = static_cast<int>(std::ceil(0.5 * v * nt * dt / dx)) + 10;  // nothing returns in time
    const Grid big{small.nx + 2 * pad, small.nz + 2 * pad, dx, dx};
    const Position src{10 * dx, 12 * dx};
    std::vector<Position> rec;
    for (int k = 0; k < 6; ++k) rec.push_back({(20 + 18 * k) * dx, 3 * dx});     // along the top edge
    for (int k = 0; k < 5; ++k) rec.push_back({(115) * dx, (10 + 20 * k) * dx}); // along the far side
    rec.push_back({60 * dx, 95 * dx});                                            // near the bottom
    auto shifted = [&](Position p) { return Position{p.x + pad * dx, p.z + pad * dx}; };
    std::vector<Position> rec_big;
    for (const auto& r : rec) rec_big.push_back(shifted(r));

    PropagatorOptions opt = test::double_options(4, 20);
    opt.cpml.alpha_max = kPi * f;
    CpuPropagator p(opt);
    const Traces t_small = p.forward(Model::uniform(small, eps_r, sigma), one_shot(src, rec, dt, nt, f));
    const Traces t_big = p.forward(Model::uniform(big, eps_r, sigma), one_shot(shifted(src), rec_big, dt, nt, f));
    double worst = 0;
    for (int r = 0; r < t_small[0].n_receivers(); ++r) {
        double peak = 0, diff = 0;
        for (int n = 0; n < nt; ++n) {
            peak = std::max(peak, std::abs(t_big[0](r, n)));
            diff = std::max(diff, std::abs(t_small[0](r, n) - t_big[0](r, n)));
        }
        worst = std::max(worst, diff / peak);
        std::printf("receiver %2d at (%.2f, %.2f) m: reflection %.3e of the direct peak\n", r, rec[r].x, rec[r].z,
                    diff / peak);
    }
    EXPECT_LT(worst, 0.01);
}

// A dt above the CFL limit runs as internal sub-steps with band-limited
// resampling; the traces match a run at the fine dt sampled at the same times.
TEST(SubSteps, MatchARunAtTheFineTimeStep) {
    const Grid g{80, 70, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 5);
    const double limit = test::cfl_limit(g, model.min_eps_mu(), 4);
    const int ratio = 3;
    const double dt = 2.6 * limit, dt_fine = dt / ratio;
    const int nt = 260;
    const Position src{0.5, 0.6};
    const std::vector<Position> rec{{1.2, 0.4}, {0.9, 1.1}};
    CpuPropagator p(test::double_options(4, 20));
    const Traces coarse = p.forward(model, one_shot(src, rec, dt, nt, 2.5e8));
    const Traces fine = p.forward(model, one_shot(src, rec, dt_fine, nt * ratio, 2.5e8));
    Traces fine_at_coarse = coarse;
    for (int r = 0; r < 2; ++r)
        for (int n = 0; n < nt; ++n) fine_at_coarse[0](r, n) = fine[0](r, (n + 1) * ratio - 1);
    const double rel = test::relative_difference(coarse, fine_at_coarse);
    std::printf("sub-steps (ratio %d) against a fine-dt run: relative difference %.3e\n", ratio, rel);
    EXPECT_LT(rel, 1e-3);
}

TEST(Precision, SingleMatchesDouble) {
    const Grid g{70, 60, 0.025, 0.025};
    const Model model = test::heterogeneous_model(g, 13);
    const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4);
    const Survey survey = test::random_survey(g, 2, 1, 6, 300, 3e8, dt, 3);
    PropagatorOptions single = test::double_options(4, 20);
    single.precision = Precision::single;
    const Traces d = CpuPropagator(test::double_options(4, 20)).forward(model, survey);
    const Traces s = CpuPropagator(single).forward(model, survey);
    const double rel = test::relative_difference(s, d);
    std::printf("single against double precision: relative difference %.3e\n", rel);
    EXPECT_LT(rel, 1e-5);
}

TEST(Parallelism, ResultsDoNotDependOnThreadsOrBatching) {
    const Grid g{50, 40, 0.03, 0.03};
    const Model model = test::heterogeneous_model(g, 17);
    const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), 8);
    const Survey survey = test::random_survey(g, 3, 2, 4, 150, 3e8, dt, 8);
    PropagatorOptions opt = test::double_options(8, 12);
    opt.cpml.frequency_hz = 3e8;  // the CPML must not depend on the batch's wavelets
    CpuPropagator p(opt);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const Traces one_thread = p.forward(model, survey);
    omp_set_num_threads(std::max(threads, 2));
    const Traces batch = p.forward(model, survey);
    omp_set_num_threads(threads);
    for (std::size_t s = 0; s < survey.shots.size(); ++s) {
        Survey alone = survey;
        alone.shots = {survey.shots[s]};
        const Traces single = p.forward(model, alone);
        EXPECT_EQ(single[0].samples(), batch[s].samples()) << "shot " << s << " alone differs from the batch";
        EXPECT_EQ(one_thread[s].samples(), batch[s].samples()) << "shot " << s << " depends on the thread count";
    }
}

}  // namespace
}  // namespace gprfwi
