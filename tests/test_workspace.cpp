// A propagator keeps its workspace (engines, fields, kept levels, buffers)
// from call to call. Whatever changed since the last call (model, survey,
// shots, record length, grid, illumination), a call's results are bitwise
// those of a new propagator, and the memory does not grow with the calls.
// (The CUDA backend's equivalents are in test_backends.cpp.)

#include <gtest/gtest.h>

#include "gprfwi/cpu_propagator.hpp"
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
