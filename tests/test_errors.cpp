// Failures are typed exceptions whose messages carry the numbers at fault.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/cuda_messages.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/point_weights.hpp"
#include "gprfwi/wavelet.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

template <typename E>
std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("wrong exception type: ") + e.what();
    }
    return "no exception";
}

class Errors : public ::testing::Test {
protected:
    void SetUp() override {
        survey.dt = 0.5 * test::cfl_limit(grid, 4.0, 4);
        survey.nt = 50;
        survey.shots.push_back({{{{0.5, 0.5}, 1.0}}, {{1.0, 0.5}}, ricker(50, survey.dt, 1e9)});
    }
    Grid grid{30, 20, 0.05, 0.05};
    Model model = Model::uniform(grid, 4.0, 0.001);
    Survey survey;
    CpuPropagator prop{test::double_options(4, 10)};
};

TEST_F(Errors, UnstableTimeStepShowsTheLimit) {
    PropagatorOptions opt = test::double_options(4, 10);
    opt.allow_substeps = false;
    survey.dt = 3 * test::cfl_limit(grid, 4.0, 4);
    const auto msg = message_of<UnstableTimeStep>([&] { CpuPropagator(opt).forward(model, survey); });
    EXPECT_NE(msg.find("exceeds the CFL limit"), std::string::npos) << msg;
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.6g", test::cfl_limit(grid, 4.0, 4));
    EXPECT_NE(msg.find(limit), std::string::npos) << msg;
}

// A call checks the model in the same pass that finds its least eps_r mu_r;
// a bad value is still reported at the first node at fault, in the order
// eps_r, sigma, mu_r, and an array of the wrong size before any value.
TEST_F(Errors, BadModelValuesNameTheFirstNodeAtFault) {
    Model bad = model;
    bad.sigma(7, 12) = NAN;
    bad.sigma(3, 20) = -1.0;
    bad.mu_r(2, 2) = 0.0;
    std::string msg = message_of<InvalidArgument>([&] { prop.forward(bad, survey); });
    EXPECT_NE(msg.find("model sigma at node (iz=3, ix=20) is -1"), std::string::npos) << msg;
    bad.eps_r(19, 29) = 0.5;
    msg = message_of<InvalidArgument>([&] { prop.forward(bad, survey); });
    EXPECT_NE(msg.find("model eps_r at node (iz=19, ix=29) is 0.5"), std::string::npos) << msg;
    bad = model;
    bad.mu_r(0, 1) = 0.0;
    msg = message_of<InvalidArgument>([&] { prop.forward(bad, survey); });
    EXPECT_NE(msg.find("model mu_r at node (iz=0, ix=1) is 0"), std::string::npos) << msg;
    bad = model;
    bad.eps_r(5, 5) = INFINITY;
    bad.sigma = Array2D(grid.nz, grid.nx + 1, 0.0);
    msg = message_of<SizeMismatch>([&] { prop.forward(bad, survey); });
    EXPECT_NE(msg.find("model array sigma is [20][31]"), std::string::npos) << msg;
}

TEST_F(Errors, PositionsOutsideTheModelNameTheShotAndPoint) {
    survey.shots[0].receivers.push_back({1.6, 0.2});  // model is 1.45 m wide
    const auto msg = message_of<PositionOutsideModel>([&] { prop.forward(model, survey); });
    EXPECT_NE(msg.find("shot 0 receiver 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1.45"), std::string::npos) << msg;
    survey.shots[0].receivers.pop_back();
    survey.shots[0].sources[0].position.z = -0.2;
    EXPECT_NE(message_of<PositionOutsideModel>([&] { prop.forward(model, survey); }).find("shot 0 source 0"),
              std::string::npos);
}

TEST_F(Errors, WrongSizesAreReportedWithBothShapes) {
    survey.shots[0].wavelet.resize(49);
    EXPECT_NE(message_of<SizeMismatch>([&] { prop.forward(model, survey); }).find("49 samples, survey nt is 50"),
              std::string::npos);
    survey.shots[0].wavelet.resize(50);
    model.sigma = Array2D(20, 29, 0.0);
    EXPECT_NE(message_of<SizeMismatch>([&] { prop.forward(model, survey); }).find("[20][29]"), std::string::npos);
    model.sigma = Array2D(20, 30, 0.0);
    Traces observed = make_traces(survey);
    observed[0] = ShotTraces(2, 50);
    EXPECT_NE(message_of<SizeMismatch>([&] { prop.gradient(model, survey, observed); }).find("[2 receivers]"),
              std::string::npos);
}

TEST_F(Errors, UnphysicalMaterialsNameTheNode) {
    model.eps_r(3, 7) = 0.5;
    EXPECT_NE(message_of<InvalidArgument>([&] { prop.forward(model, survey); }).find("(iz=3, ix=7)"),
              std::string::npos);
    model.eps_r(3, 7) = 4.0;
    model.sigma(2, 2) = NAN;
    EXPECT_NE(message_of<InvalidArgument>([&] { prop.forward(model, survey); }).find("sigma"), std::string::npos);
}

TEST_F(Errors, BlowUpReportsTheStep) {
    PropagatorOptions opt = test::double_options(4, 10);
    opt.precision = Precision::single;
    opt.blowup_check_interval = 5;
    for (double& v : survey.shots[0].wavelet) v *= 1e36;  // overflows float at the source
    const auto msg = message_of<NumericalBlowup>([&] { CpuPropagator(opt).forward(model, survey); });
    EXPECT_NE(msg.find("NaN or Inf in Ey of shot 0 at internal step"), std::string::npos) << msg;
}

TEST_F(Errors, BadOptionsAreRejected) {
    PropagatorOptions opt;
    opt.stencil_order = 5;
    EXPECT_THROW(make_propagator(opt), InvalidArgument);
    opt = PropagatorOptions{};
    opt.snapshots.interval = -1;  // 0 is automatic
    EXPECT_THROW(make_propagator(opt), InvalidArgument);
    opt = PropagatorOptions{};
    opt.cpml.reflection = 2.0;
    EXPECT_THROW(make_propagator(opt), InvalidArgument);
    opt = PropagatorOptions{};
    opt.cpml.widths.left = -1;
    EXPECT_THROW(CpuPropagator(opt).forward(model, survey), InvalidArgument);
    EXPECT_THROW(parse_precision("half"), InvalidArgument);
    EXPECT_THROW(parse_backend("gpu"), InvalidArgument);
}

// Every enum a run file names has one table: each name parses to its value and
// prints back as itself, and an unknown name's error lists every choice.
template <class E, std::size_t N>
void expect_names_round_trip(const NameTable<E, N>& table, E (*parse)(const std::string&), const char* (*print)(E)) {
    for (const std::string& name : table.names()) {
        EXPECT_STREQ(print(parse(name)), name.c_str()) << table.what;
    }
    const std::string message = message_of<InvalidArgument>([&] { parse("nonsense"); });
    for (const std::string& name : table.names())
        EXPECT_NE(message.find("'" + name + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("'nonsense'"), std::string::npos) << message;
}

TEST(Names, EveryNameParsesToTheValueThatPrintsIt) {
    expect_names_round_trip(kPrecisionNames, parse_precision, to_string);
    expect_names_round_trip(kBackendNames, parse_backend, to_string);
    expect_names_round_trip(kCompressionNames, parse_compression, to_string);
    expect_names_round_trip(kStorageNames, parse_storage, to_string);
    expect_names_round_trip(kMisfitNames, parse_misfit_kind, to_string);
    expect_names_round_trip(kInversionMethodNames, parse_inversion_method, to_string);
    expect_names_round_trip(kEdgeRuleNames, parse_edge_rule, to_string);
    expect_names_round_trip(kPointInterpolationNames, parse_point_interpolation, to_string);
    EXPECT_EQ(kStorageNames.choices(), "'auto', 'device', 'host' or 'disk'");
    EXPECT_EQ(kPrecisionNames.choices(), "'single' or 'double'");
}

TEST_F(Errors, EmptySurveysAreRejected) {
    survey.shots.clear();
    EXPECT_THROW(prop.forward(model, survey), InvalidArgument);
    survey.nt = 0;
    EXPECT_THROW(prop.forward(model, survey), InvalidArgument);
}

// The GPU's out-of-memory message, from the numbers the CUDA engine passes
// (the GPU tests provoke it; its wording is checked here, with or without a GPU).
TEST(CudaMessages, OutOfMemoryOffersWhatFitsTheRun) {
    constexpr std::size_t mib = 1048576, gib = 1024 * mib;
    // a gradient batch whose kept levels are most of what it needs
    cuda_messages::DeviceMemory gradient{0, "H100", 8, 100 * gib, 70 * gib, 80 * gib, 90 * gib, 45 * gib, 22 * gib};
    const std::string g = cuda_messages::out_of_memory_message(gradient);
    EXPECT_NE(g.find("needs 100.00 GiB on GPU 0 (H100) for this batch of 8 shot(s), 90.00 GiB of them for kept "
                     "forward levels; 70.00 GiB are free of 80.00 GiB."),
              std::string::npos) << g;
    EXPECT_NE(g.find("bf16 (propagator.snapshots.compression; kept levels 45.00 GiB)"), std::string::npos) << g;
    EXPECT_NE(g.find("interval of 4 (propagator.snapshots.interval; kept levels 22.00 GiB)"), std::string::npos) << g;
    EXPECT_NE(g.find("fewer shots per batch (propagator.shots_per_batch; about 12.50 GiB per shot)"),
              std::string::npos) << g;
    EXPECT_EQ(g.find("other processes"), std::string::npos) << g;

    // a forward batch keeps no levels: only fewer shots helps, in MiB where under a GiB; a GPU nearly
    // full before a small batch is held by something else
    cuda_messages::DeviceMemory forward{1, "H100", 35, 92 * mib, 61 * mib, 80 * gib, 0, 5 * gib, 2 * gib};
    const std::string f = cuda_messages::out_of_memory_message(forward);
    EXPECT_NE(f.find("needs 92.0 MiB on GPU 1 (H100) for this batch of 35 shot(s); 61.0 MiB are free of 80.00 GiB"),
              std::string::npos) << f;
    EXPECT_NE(f.find("other processes on this GPU"), std::string::npos) << f;
    EXPECT_EQ(f.find("bf16"), std::string::npos) << f;
    EXPECT_EQ(f.find("kept forward levels"), std::string::npos) << f;
    EXPECT_NE(f.find("Options that need less: fewer shots per batch (propagator.shots_per_batch; about 2.6 MiB per "
                     "shot)"),
              std::string::npos) << f;
}

}  // namespace
}  // namespace gprfwi
