// Approximate snapshot options against the exact gradient: keeping every k-th
// forward level, and storing levels as bfloat16. The errors printed here are
// the ones docs/gradient.md reports; the bounds below are those figures with
// headroom, so a regression in either option fails.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/memory_plan.hpp"
#include "gprfwi/misfit.hpp"
#include "gprfwi/setup.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

double relative_l2(const Array2D& a, const Array2D& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        num += std::pow(a.data()[i] - ref.data()[i], 2);
        den += std::pow(ref.data()[i], 2);
    }
    return std::sqrt(num / den);
}

struct SnapshotCase {
    const char* name;
    Precision precision;
    int interval;
    SnapshotCompression compression;
    double max_error;  // relative L2 error bound for both gradients
};

class Snapshots : public ::testing::TestWithParam<SnapshotCase> {};

// Crosshole-like setting: 15 nodes per shortest wavelength (3 f_peak), dt at
// 0.9 of the CFL limit (about 32 internal steps per period of 3 f_peak, so the
// imaging product, up to 6 f_peak, is sampled above Nyquist for k <= 8; with
// k = 16 it aliases and the error jumps to tens of percent).
TEST_P(Snapshots, GradientErrorAgainstExact) {
    const SnapshotCase c = GetParam();
    const Grid g{90, 70, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 31);
    const Model truth = test::heterogeneous_model(g, 32);
    const double dt = 0.9 * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), 4);
    const Survey survey = test::random_survey(g, 2, 1, 8, 500, 2e8, dt, 4, 6.0);
    PropagatorOptions opt = test::double_options(4, 20);
    opt.precision = c.precision;
    opt.cpml.frequency_hz = 2e8;
    const Traces observed = CpuPropagator(opt).forward(truth, survey);
    const GradientResult exact = CpuPropagator(opt).gradient(model, survey, observed);
    PropagatorOptions approx_opt = opt;
    approx_opt.snapshots.interval = c.interval;
    approx_opt.snapshots.compression = c.compression;
    const GradientResult approx = CpuPropagator(approx_opt).gradient(model, survey, observed);
    EXPECT_EQ(approx.misfit, exact.misfit) << "snapshots must not change the forward run";
    const double e_eps = relative_l2(approx.grad_eps_r, exact.grad_eps_r);
    const double e_sig = relative_l2(approx.grad_sigma, exact.grad_sigma);
    const int interval = c.interval > 0 ? c.interval : auto_snapshot_interval(survey, dt);
    std::printf("%-18s %s precision, interval %d%s, %s storage: grad_eps_r error %.3e, grad_sigma error %.3e\n",
                c.name, to_string(c.precision), interval, c.interval == 0 ? " (auto)" : "", to_string(c.compression),
                e_eps, e_sig);
    if (c.interval == 0) {
        EXPECT_GT(interval, 1) << "auto should thin the levels at 0.9 x CFL";
    }
    EXPECT_LT(e_eps, c.max_error);
    EXPECT_LT(e_sig, c.max_error);
}

INSTANTIATE_TEST_SUITE_P(
    Options, Snapshots,
    ::testing::Values(SnapshotCase{"bf16_single", Precision::single, 1, SnapshotCompression::bf16, 2e-3},
                      SnapshotCase{"bf16_double", Precision::double_precision, 1, SnapshotCompression::bf16, 2e-3},
                      SnapshotCase{"every2", Precision::double_precision, 2, SnapshotCompression::none, 1e-6},
                      SnapshotCase{"every4", Precision::double_precision, 4, SnapshotCompression::none, 5e-4},
                      SnapshotCase{"every8", Precision::double_precision, 8, SnapshotCompression::none, 5e-4},
                      SnapshotCase{"every4_bf16", Precision::single, 4, SnapshotCompression::bf16, 4e-3},
                      SnapshotCase{"fp8_single", Precision::single, 1, SnapshotCompression::fp8, 2e-2},
                      SnapshotCase{"fp8_double", Precision::double_precision, 1, SnapshotCompression::fp8, 2e-2},
                      SnapshotCase{"every4_fp8", Precision::single, 4, SnapshotCompression::fp8, 4e-2},
                      SnapshotCase{"auto_interval", Precision::double_precision, 0, SnapshotCompression::none, 5e-4}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

struct CheckpointCase {
    const char* name;
    Precision precision;
    SnapshotCompression compression;
    int checkpoint_steps;
    int binomial_slots = 0;
};

class Checkpointing : public ::testing::TestWithParam<CheckpointCase> {};

// Recomputing each segment from its checkpoint repeats the forward run's
// arithmetic exactly, so the gradient must equal the every-level gradient bit
// for bit; with the automatic segment length it holds far fewer fields.
TEST_P(Checkpointing, GradientIsBitwiseTheKeepEveryLevelGradient) {
    const CheckpointCase c = GetParam();
    const Grid g{60, 50, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 51), truth = test::heterogeneous_model(g, 52);
    const double dt = 1.3 * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), 4);
    const Survey survey = test::random_survey(g, 2, 2, 4, 150, 3e8, dt, 7);
    PropagatorOptions opt = test::double_options(4, 10);
    opt.precision = c.precision;
    opt.snapshots.compression = c.compression;
    opt.cpml.frequency_hz = 3e8;
    const Traces observed = CpuPropagator(opt).forward(truth, survey);
    const GradientResult all = CpuPropagator(opt).gradient(model, survey, observed);
    PropagatorOptions ck = opt;
    ck.snapshots.checkpoint_steps = c.checkpoint_steps;
    ck.snapshots.binomial_slots = c.binomial_slots;
    CpuPropagator prop(ck);
    const GradientResult some = prop.gradient(model, survey, observed);
    const auto mem_all = CpuPropagator(opt).estimate_memory(model, survey, true);
    const auto mem_ck = prop.estimate_memory(model, survey, true);
    std::printf("checkpointing %-12s kept-level memory %.2f MB instead of %.2f MB\n", c.name, mem_ck.snapshot_bytes / 1e6,
                mem_all.snapshot_bytes / 1e6);
    // the memory plan counts what the engine holds after the call, array by array (memory_plan.hpp)
    EXPECT_EQ(prop.workspace_bytes(), mem_ck.fields_bytes + mem_ck.snapshot_bytes);
    EXPECT_EQ(some.misfit, all.misfit);
    EXPECT_EQ(some.grad_eps_r.values(), all.grad_eps_r.values());
    EXPECT_EQ(some.grad_sigma.values(), all.grad_sigma.values());
    EXPECT_EQ(some.grad_wavelet, all.grad_wavelet);
    // only a balanced C saves memory: C = 7 on 300 steps keeps 43 states of 7
    // fields, more than the 300 levels; fp8 levels are smaller than states.
    // The automatic C (39 here) keeps 8 states, the one being recomputed and
    // 40 levels: 103 levels' worth of memory against 300
    if (c.checkpoint_steps == -1) {
        EXPECT_LT(mem_ck.snapshot_bytes, mem_all.snapshot_bytes / 2.5);
    }
    // binomial: ceil(log2 300) = 9 states of 7 fields and 2 levels against
    // 300 levels; fp8 levels are smaller than states again
    if (c.binomial_slots != 0 && c.compression == SnapshotCompression::none) {
        EXPECT_LT(mem_ck.snapshot_bytes, mem_all.snapshot_bytes / 4);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Segments, Checkpointing,
    ::testing::Values(CheckpointCase{"auto_double", Precision::double_precision, SnapshotCompression::none, -1},
                      CheckpointCase{"c7_single", Precision::single, SnapshotCompression::none, 7},
                      CheckpointCase{"c50_bf16", Precision::single, SnapshotCompression::bf16, 50},
                      CheckpointCase{"c13_fp8", Precision::double_precision, SnapshotCompression::fp8, 13},
                      CheckpointCase{"binomial_auto_double", Precision::double_precision, SnapshotCompression::none, 0, -1},
                      CheckpointCase{"binomial3_single", Precision::single, SnapshotCompression::none, 0, 3},
                      CheckpointCase{"binomial1_bf16", Precision::single, SnapshotCompression::bf16, 0, 1},
                      CheckpointCase{"binomial5_fp8", Precision::double_precision, SnapshotCompression::fp8, 0, 5}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(CheckpointingOptions, NeedIntervalOne) {
    PropagatorOptions opt;
    opt.snapshots.checkpoint_steps = 10;
    opt.snapshots.interval = 2;
    EXPECT_THROW(opt.validate(), InvalidArgument);
    EXPECT_EQ(resolve_checkpoint_steps(-1, 2000), 119);  // ceil(sqrt(7 * 2000))
    EXPECT_EQ(resolve_checkpoint_steps(0, 2000), 0);
    EXPECT_EQ(resolve_checkpoint_steps(5000, 2000), 2000);
    opt.snapshots.interval = 1;
    opt.snapshots.binomial_slots = 4;
    EXPECT_THROW(opt.validate(), InvalidArgument) << "binomial and every-C checkpoints together";
    opt.snapshots.checkpoint_steps = 0;
    EXPECT_NO_THROW(opt.validate());
    opt.snapshots.interval = 2;
    EXPECT_THROW(opt.validate(), InvalidArgument);
}

// The CPU backend's memory plan (memory_plan.hpp) is what its engine holds
// after a call in a fresh propagator, for every way of keeping levels that
// changes what it allocates (the checkpointed ones: Checkpointing above).
TEST(MemoryPlan, CpuEngineHoldsWhatItsPlanCounts) {
    const Grid g{40, 30, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 61);
    const Survey survey = test::random_survey(g, 4, 1, 3, 60, 3e8, 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4), 5);
    struct Variant {
        const char* name;
        void (*set)(PropagatorOptions&);
    };
    const Variant variants[] = {
        {"every level", [](PropagatorOptions&) {}},
        {"every third level", [](PropagatorOptions& o) { o.snapshots.interval = 3; }},
        {"bf16 levels", [](PropagatorOptions& o) { o.snapshots.compression = SnapshotCompression::bf16; }},
        {"fp8 levels", [](PropagatorOptions& o) { o.snapshots.compression = SnapshotCompression::fp8; }},
        {"illumination", [](PropagatorOptions& o) { o.illumination = true; }},
        {"two shot groups", [](PropagatorOptions& o) { o.shot_groups = 2; }},
        {"double, stencil 8", [](PropagatorOptions& o) {
             o.precision = Precision::double_precision;
             o.stencil_order = 8;
         }},
    };
    for (const Variant& v : variants) {
        SCOPED_TRACE(v.name);
        PropagatorOptions opt;
        opt.cpml.widths = {6, 6, 6, 6};
        v.set(opt);
        for (const bool gradient : {false, true}) {
            CpuPropagator prop(opt);
            if (gradient) prop.gradient(model, survey, make_traces(survey));
            else prop.forward(model, survey);
            const MemoryEstimate plan = prop.estimate_memory(model, survey, gradient);
            EXPECT_EQ(prop.workspace_bytes(), plan.fields_bytes + plan.snapshot_bytes) << "gradient " << gradient;
            EXPECT_EQ(plan.host_snapshot_bytes, 0u);
            if (gradient) {
                EXPECT_GT(plan.snapshot_bytes, 0u);
            }
        }
    }
}

// The same for Hessian-vector products: a Gauss-Newton product holds a
// gradient's arrays and the Born run's; a full product also the second-order
// adjoint's and the Born run's levels (cpu_hessian_memory_plan).
TEST(MemoryPlan, CpuEngineHoldsWhatItsHessianPlanCounts) {
    const Grid g{40, 30, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 61), truth = test::heterogeneous_model(g, 62);
    const Survey survey = test::random_survey(g, 4, 1, 3, 60, 3e8, 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4), 5);
    const ModelDirection v = test::smooth_direction(g, 0.3, 0.006, 9);
    struct Variant {
        const char* name;
        void (*set)(PropagatorOptions&);
        bool full;  // full products read every level of both runs: no checkpoints
    };
    const Variant variants[] = {
        {"every level", [](PropagatorOptions&) {}, true},
        {"every third level", [](PropagatorOptions& o) { o.snapshots.interval = 3; }, true},
        {"fp8 levels", [](PropagatorOptions& o) { o.snapshots.compression = SnapshotCompression::fp8; }, true},
        {"two shot groups", [](PropagatorOptions& o) { o.shot_groups = 2; }, true},
        {"double, stencil 8", [](PropagatorOptions& o) {
             o.precision = Precision::double_precision;
             o.stencil_order = 8;
         }, true},
        {"checkpoints every 10 steps", [](PropagatorOptions& o) { o.snapshots.checkpoint_steps = 10; }, false},
        {"binomial checkpoints", [](PropagatorOptions& o) { o.snapshots.binomial_slots = 4; }, false},
    };
    for (const Variant& variant : variants) {
        SCOPED_TRACE(variant.name);
        PropagatorOptions opt;
        opt.cpml.widths = {6, 6, 6, 6};
        variant.set(opt);
        const Traces observed = CpuPropagator(opt).forward(truth, survey);
        const L2Misfit misfit(observed);  // (holds a reference)
        const PropagationSetup setup = PropagationSetup::build(model, survey, opt);
        const MemoryEstimate gradient = cpu_memory_plan(setup, opt, true);
        for (const HessianKind kind : {HessianKind::gauss_newton, HessianKind::full}) {
            if (kind == HessianKind::full && !variant.full) continue;
            CpuPropagator prop(opt);
            prop.hessian(model, survey, misfit, v, kind);
            const MemoryEstimate plan = cpu_hessian_memory_plan(setup, opt, kind);
            EXPECT_EQ(prop.workspace_bytes(), plan.fields_bytes + plan.snapshot_bytes)
                << (kind == HessianKind::full ? "full" : "Gauss-Newton");
            EXPECT_GT(plan.total(), gradient.total());
        }
    }
}

}  // namespace
}  // namespace gprfwi
