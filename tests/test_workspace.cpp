// A propagator keeps its workspace (engines, fields, kept levels, buffers)
// from call to call. Whatever changed since the last call (model, survey,
// shots, record length, grid, illumination), a call's results are bitwise
// those of a new propagator, and the memory does not grow with the calls.
// (The CUDA backend's equivalents are in test_backends.cpp.)

#include <gtest/gtest.h>

#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/setup.hpp"
#include "parallel/parallel_arrays.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

struct Variant {
    const char* name;
    int order;
    Precision precision;
    SnapshotCompression compression;
    int interval, checkpoint_steps, binomial_slots, shot_groups;
};

constexpr Variant kVariants[] = {
    {"stencil 4, double", 4, Precision::double_precision, SnapshotCompression::none, 1, 0, 0, 0},
    {"stencil 2, single, bf16 levels every 2 steps", 2, Precision::single, SnapshotCompression::bf16, 2, 0, 0, 0},
    {"stencil 8, single, fp8 levels, checkpoints of 7 steps", 8, Precision::single, SnapshotCompression::fp8, 1, 7,
     0, 0},
    {"stencil 6, double, binomial checkpointing", 6, Precision::double_precision, SnapshotCompression::none, 1, 0, 3,
     0},
    {"stencil 4, single, 3 shot groups", 4, Precision::single, SnapshotCompression::none, 1, 0, 0, 3},
};

PropagatorOptions options_of(const Variant& v) {
    PropagatorOptions opt = test::double_options(v.order, 0);
    opt.cpml.widths = {9, 12, 10, 11};
    opt.precision = v.precision;
    opt.snapshots.compression = v.compression;
    opt.snapshots.interval = v.interval;
    opt.snapshots.checkpoint_steps = v.checkpoint_steps;
    opt.snapshots.binomial_slots = v.binomial_slots;
    opt.shot_groups = v.shot_groups;
    return opt;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// The sanitizer build's steps are about 5x slower: there the calls' records
// are half as long (the same buffers kept and grown, the same checks).
constexpr int kStepsDivisor = kAddressSanitizer ? 2 : 1;

TEST(Workspace, CallsThatChangeEverythingMatchNewPropagators) {
    for (const Variant& v : kVariants) {
        const PropagatorOptions opt = options_of(v);
        CpuPropagator kept(opt);
        for (const test::Call& c : test::changing_calls(v.order, kStepsDivisor)) {
            CpuPropagator fresh(opt);
            test::expect_bitwise_equal(test::run_call(kept, c), test::run_call(fresh, c),
                                       std::string(v.name) + ": " + c.what);
        }
    }
}

// A workspace made ahead of a call (Propagator::reserve, which the command
// line runs while it reads the data), for the call's own model and survey
// or for another call's (another grid, fewer shots, no kept levels), leaves
// the call's results bitwise those of a new propagator. The calls take turns
// between the two (each call runs twice, not three times: the sanitizer
// build runs this too).
TEST(Workspace, ReservedAheadMatchesNewPropagators) {
    for (const Variant& v : kVariants) {
        const PropagatorOptions opt = options_of(v);
        const std::vector<test::Call> calls = test::changing_calls(v.order, kStepsDivisor);
        for (std::size_t i = 0; i < calls.size(); ++i) {
            const test::Call& c = calls[i];
            const test::Call& reserved = i % 2 == 0 ? c : calls[(i + 1) % calls.size()];
            CpuPropagator fresh(opt), ahead(opt);
            ahead.reserve(reserved.model, reserved.survey, reserved.gradient);
            test::expect_bitwise_equal(test::run_call(ahead, c), test::run_call(fresh, c),
                                       std::string(v.name) + ": " + c.what + ", reserved for " + reserved.what);
        }
    }
}

// A setup given a workspace's last coefficients keeps a copy of the model
// once the same model came twice in a row, then takes the coefficients as
// they are for that model, bit for bit, at the same internal time step, and
// fills them anew (new values, a new id) for any other; a model that came
// once, or a setup without a workspace, leaves no copy, one the caller
// says comes again (a reserved call's) leaves one at once.
TEST(Workspace, SetupRecognisesTheModelItsCoefficientsWereFilledFrom) {
    const Grid g{40, 30, 0.02, 0.025};
    const Model m = test::heterogeneous_model(g, 3);
    const PropagatorOptions opt = test::double_options(4, 8);
    const Survey survey = test::random_survey(g, 2, 1, 3, 50, 3e8, 0.9 * test::cfl_limit(g, 2.0, 4), 5);
    auto again = [&](const PropagationSetup& last, const Model& model, const Survey& sv) {
        return PropagationSetup::build(model, sv, opt, std::const_pointer_cast<MaterialCoefficients>(last.coefficients));
    };
    const PropagationSetup plain = PropagationSetup::build(m, survey, opt);
    EXPECT_FALSE(plain.coefficients->model.has_value());

    const PropagationSetup first = PropagationSetup::build(m, survey, opt, std::make_shared<MaterialCoefficients>());
    EXPECT_FALSE(first.coefficients->model.has_value());  // (one call: an inversion's every call)
    EXPECT_EQ(first.ca(), plain.ca());
    EXPECT_EQ(first.cb(), plain.cb());
    EXPECT_EQ(first.cq(), plain.cq());

    const Model same_values = m;  // another object, the same bits: now copied
    const PropagationSetup second = again(first, same_values, survey);
    ASSERT_TRUE(second.coefficients->model.has_value());
    EXPECT_NE(second.coefficients->id, first.coefficients->id);
    EXPECT_EQ(second.ca(), plain.ca());
    const PropagationSetup third = again(second, m, survey);  // recognised
    EXPECT_EQ(third.coefficients.get(), second.coefficients.get());
    EXPECT_EQ(third.coefficients->id, second.coefficients->id);

    Model one_node = m;
    one_node.eps_r(g.nz - 1, g.nx - 1) += 0.5;  // the last node: the last block compared
    const std::size_t corner = third.grid.index(third.grid.nz - 1, third.grid.nx - 1);
    const PropagationSetup fourth = again(third, one_node, survey);
    EXPECT_NE(fourth.coefficients->id, third.coefficients->id);
    EXPECT_EQ(fourth.ca(), PropagationSetup::build(one_node, survey, opt).ca());
    EXPECT_NE(fourth.ca()[corner], third.ca()[corner]);
    EXPECT_FALSE(fourth.coefficients->model.has_value());  // another model: the copy dropped

    Survey finer = survey;  // the same model at another time step: filled anew, the copy kept
    finer.dt *= 0.5;
    const PropagationSetup fifth = again(again(fourth, one_node, survey), one_node, finer);
    EXPECT_TRUE(fifth.coefficients->model.has_value());
    EXPECT_EQ(fifth.cb(), PropagationSetup::build(one_node, finer, opt).cb());
    const PropagationSetup sixth = again(fifth, one_node, finer);
    EXPECT_EQ(sixth.coefficients->id, fifth.coefficients->id);

    // a model the caller says comes again (Propagator::reserve's) is copied at once
    const PropagationSetup reserved =
        PropagationSetup::build(m, survey, opt, std::make_shared<MaterialCoefficients>(), true);
    ASSERT_TRUE(reserved.coefficients->model.has_value());
    EXPECT_EQ(again(reserved, m, survey).coefficients->id, reserved.coefficients->id);

    Model invalid = one_node;  // differs from the copy: checked again
    invalid.eps_r(0, 0) = 0.5;
    EXPECT_THROW(again(sixth, invalid, finer), InvalidArgument);
}

// Where the model is compared with the kept copy while the loops run, a
// call whose model the sample takes for the copy starts on the kept
// coefficients; where the full comparison then finds a difference, the call
// runs again with the model's own, and its results are those of a new
// propagator, bit for bit.
TEST(Workspace, ModelComparedDuringTheLoopsRunsAgainWhereItDiffers) {
    const Grid g{150, 120, 0.02, 0.025};  // (more nodes than the sample reads)
    const Model m = test::heterogeneous_model(g, 8);
    PropagatorOptions opt = test::double_options(4, 10);
    opt.model_comparison = ModelComparison::during;
    const Survey survey = test::random_survey(g, 2, 1, 3, 300, 3e8, 0.9 * test::cfl_limit(g, 2.0, 4), 9);
    const Traces observed = test::random_traces(survey, 3);

    Model hidden = m;  // one node apart, near the middle, where the sample does not read
    bool found = false;
    for (int iz = g.nz / 2; iz < g.nz && !found; ++iz)
        for (int ix = g.nx / 2; ix < g.nx && !found; ++ix) {
            hidden.sigma(iz, ix) = m.sigma(iz, ix) * 3.0;
            found = same_bits_sampled(hidden, m);
            if (!found) hidden.sigma(iz, ix) = m.sigma(iz, ix);
        }
    ASSERT_TRUE(found) << "every node is in the sample: the grid is too small for this test";

    CpuPropagator p(opt);
    p.forward(m, survey);
    p.forward(m, survey);  // the same model twice in a row: kept
    const std::vector<double> kept = test::flat(p.forward(m, survey));
    EXPECT_TRUE(p.last_timings().coefficients_kept);
    EXPECT_FALSE(p.last_timings().ran_again);
    EXPECT_EQ(kept, test::flat(CpuPropagator(opt).forward(m, survey)));

    const std::vector<double> differs = test::flat(p.forward(hidden, survey));
    EXPECT_TRUE(p.last_timings().ran_again);
    EXPECT_FALSE(p.last_timings().coefficients_kept);
    EXPECT_EQ(differs, test::flat(CpuPropagator(opt).forward(hidden, survey)));
    EXPECT_NE(differs, kept);  // (the node is one the waves reach: the first run's traces were wrong)

    p.forward(hidden, survey);  // the copy is hidden's now: a gradient at m starts on its coefficients, runs again
    const GradientResult back = p.gradient(m, survey, observed);
    EXPECT_TRUE(p.last_timings().ran_again);
    const GradientResult fresh = CpuPropagator(opt).gradient(m, survey, observed);
    EXPECT_EQ(test::flat(back.synthetic), test::flat(fresh.synthetic));
    EXPECT_EQ(back.grad_eps_r.values(), fresh.grad_eps_r.values());
    EXPECT_EQ(back.grad_sigma.values(), fresh.grad_sigma.values());

    p.forward(m, survey);
    p.forward(m, survey);  // kept again; a model whose sample differs is compared before the loops
    const Model other = test::heterogeneous_model(g, 9);
    EXPECT_EQ(test::flat(p.forward(other, survey)), test::flat(CpuPropagator(opt).forward(other, survey)));
    EXPECT_FALSE(p.last_timings().ran_again);
    EXPECT_FALSE(p.last_timings().coefficients_kept);
}

TEST(Workspace, MemoryStaysFlatOverFiftyGradients) {
    if (kAddressSanitizer)
        GTEST_SKIP() << "AddressSanitizer keeps freed memory in its quarantine, so resident memory cannot show reuse";
    CpuPropagator p(options_of(kVariants[0]));
    const test::Call c = test::changing_calls(4).front();
    const test::CallResult first = test::run_call(p, c);
    std::size_t after_five = 0;
    for (int call = 2; call <= 50; ++call) {
        const test::CallResult r = test::run_call(p, c);
        if (call == 5) after_five = test::resident_bytes();
        if (call == 50) test::expect_bitwise_equal(r, first, "the 50th call against the first");
    }
    const std::size_t after_fifty = test::resident_bytes();
    std::printf("resident memory after 5 gradients %zu bytes, after 50 %zu bytes\n", after_five, after_fifty);
    // one gradient's kept levels are 9 MB: a workspace made anew and kept each call would show at once
    EXPECT_LT(after_fifty, after_five + (std::size_t{2} << 20));
}

}  // namespace
}  // namespace gprfwi
