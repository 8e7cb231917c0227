// The CUDA backend against the CPU reference, from the same test code: traces
// and gradients for every stencil, both precisions, both snapshot storage
// types and snapshot intervals; the adjoint identity on the GPU; run-to-run
// determinism; failure reports. Without a usable GPU every test skips and
// says why (CI has none; these run on the GPU machine).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <memory>
#include <string>

#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/memory_plan.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

// Infinite when a value of `a` is not finite (std::max would pass over a NaN).
double max_relative(const std::vector<double>& a, const std::vector<double>& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return HUGE_VAL;
        num = std::max(num, std::abs(a[i] - ref[i]));
        den = std::max(den, std::abs(ref[i]));
    }
    return num / den;
}

std::vector<double> flatten(const Traces& t) {
    std::vector<double> v;
    for (const auto& s : t) v.insert(v.end(), s.samples().begin(), s.samples().end());
    return v;
}

std::vector<double> flatten(const std::vector<std::vector<double>>& t) {
    std::vector<double> v;
    for (const auto& s : t) v.insert(v.end(), s.begin(), s.end());
    return v;
}

struct ParityCase {
    const char* name;
    int order;
    Precision precision;
    SnapshotCompression compression;
    int interval;
    double dt_over_limit;
    PointInterpolation interpolation;
    SnapshotStorage storage = SnapshotStorage::device;
    int checkpoint_steps = 0;
    int binomial_slots = 0;
};

class Parity : public ::testing::TestWithParam<ParityCase> {
protected:
    void SetUp() override {
        GPRFWI_SKIP_WITHOUT_GPU();
        const ParityCase c = GetParam();
        model_ = test::heterogeneous_model(grid_, 41);
        truth_ = test::heterogeneous_model(grid_, 42);
        const double dt = c.dt_over_limit * test::cfl_limit(grid_, std::min(model_.min_eps_mu(), truth_.min_eps_mu()), c.order);
        survey_ = test::random_survey(grid_, 3, 2, 5, 220, 3e8, dt, 6);
        opt_ = test::double_options(c.order, 0);
        opt_.cpml.widths = {9, 12, 10, 11};
        opt_.cpml.kappa_max = 2.0;
        opt_.cpml.frequency_hz = 3e8;
        opt_.cpml.reference_velocity = 1e8;
        opt_.precision = c.precision;
        opt_.interpolation = c.interpolation;
        opt_.snapshots.compression = c.compression;
        opt_.snapshots.interval = c.interval;
        opt_.snapshots.storage = c.storage;
        opt_.snapshots.checkpoint_steps = c.checkpoint_steps;
        opt_.snapshots.binomial_slots = c.binomial_slots;
        observed_ = CpuPropagator(opt_).forward(truth_, survey_);
    }
    double tolerance() const { return GetParam().precision == Precision::single ? 1e-5 : 1e-12; }

    const Grid grid_{70, 55, 0.02, 0.025};
    Model model_, truth_;
    Survey survey_;
    PropagatorOptions opt_;
    Traces observed_;
};

TEST_P(Parity, TracesAndGradientsMatchTheCpu) {
    const ParityCase c = GetParam();
    PropagatorOptions gpu_opt = opt_;
    gpu_opt.backend = BackendKind::cuda;
    gpu_opt.illumination = true;
    auto gpu = make_propagator(gpu_opt);
    PropagatorOptions cpu_opt = opt_;
    cpu_opt.illumination = true;
    CpuPropagator cpu(cpu_opt);
    const double e_fwd = max_relative(flatten(gpu->forward(model_, survey_)), flatten(cpu.forward(model_, survey_)));
    const GradientResult gg = gpu->gradient(model_, survey_, observed_);
    const GradientResult gc = cpu.gradient(model_, survey_, observed_);
    const double e_mis = std::abs(gg.misfit - gc.misfit) / gc.misfit;
    const double e_eps = max_relative(gg.grad_eps_r.values(), gc.grad_eps_r.values());
    const double e_sig = max_relative(gg.grad_sigma.values(), gc.grad_sigma.values());
    const double e_wav = max_relative(flatten(gg.grad_wavelet), flatten(gc.grad_wavelet));
    const double e_ill = max_relative(gg.illumination.values(), gc.illumination.values());
    std::printf("parity %-14s traces %.2e misfit %.2e grad_eps_r %.2e grad_sigma %.2e grad_wavelet %.2e illumination "
                "%.2e (%s, levels in %s)\n",
                c.name, e_fwd, e_mis, e_eps, e_sig, e_wav, e_ill, gpu->name().c_str(),
                gpu->last_timings().level_storage.c_str());
    if (c.storage == SnapshotStorage::host) {
        EXPECT_NE(gpu->last_timings().level_storage.find("host"), std::string::npos);
    }
    if (c.storage == SnapshotStorage::device && c.checkpoint_steps == 0 && c.binomial_slots == 0) {
        EXPECT_EQ(gpu->last_timings().level_storage, "device memory");
    }
    // the imaging in pairs of steps where the levels are resident (device, checkpoints), not for fp8
    const bool resident = gpu->last_timings().level_storage.rfind("device memory", 0) == 0 && c.binomial_slots == 0;
    EXPECT_EQ(gpu->last_timings().imaging_steps, resident && c.compression != SnapshotCompression::fp8 ? 2 : 1);
    if (c.binomial_slots != 0) {
        EXPECT_NE(gpu->last_timings().level_storage.find("binomial"), std::string::npos);
    }
    EXPECT_LT(e_fwd, tolerance());
    EXPECT_LT(e_mis, tolerance());
    EXPECT_LT(e_eps, tolerance());
    EXPECT_LT(e_sig, tolerance());
    EXPECT_LT(e_wav, tolerance());
    ASSERT_EQ(gg.illumination.size(), gc.illumination.size());
    EXPECT_LT(e_ill, tolerance());
}

TEST_P(Parity, RepeatedRunsAreBitwiseIdentical) {
    PropagatorOptions gpu_opt = opt_;
    gpu_opt.backend = BackendKind::cuda;
    auto gpu = make_propagator(gpu_opt);
    const GradientResult a = gpu->gradient(model_, survey_, observed_);
    const GradientResult b = gpu->gradient(model_, survey_, observed_);
    EXPECT_EQ(a.grad_eps_r.values(), b.grad_eps_r.values());
    EXPECT_EQ(a.grad_sigma.values(), b.grad_sigma.values());
    EXPECT_EQ(flatten(a.synthetic), flatten(b.synthetic));
}

constexpr auto kSingle = Precision::single;
constexpr auto kDouble = Precision::double_precision;
constexpr auto kNone = SnapshotCompression::none;
constexpr auto kBf16 = SnapshotCompression::bf16;
constexpr auto kSinc = PointInterpolation::sinc;
constexpr auto kBilinear = PointInterpolation::bilinear;

INSTANTIATE_TEST_SUITE_P(
    Cuda, Parity,
    ::testing::Values(ParityCase{"o2_double", 2, kDouble, kNone, 1, 0.9, kSinc},
                      ParityCase{"o4_double", 4, kDouble, kNone, 1, 0.9, kSinc},
                      ParityCase{"o6_double", 6, kDouble, kNone, 1, 1.6, kBilinear},
                      ParityCase{"o8_double", 8, kDouble, kNone, 1, 2.3, kSinc},
                      ParityCase{"o2_single", 2, kSingle, kNone, 1, 0.9, kSinc},
                      ParityCase{"o4_single", 4, kSingle, kNone, 1, 1.5, kSinc},
                      ParityCase{"o6_single", 6, kSingle, kNone, 1, 0.9, kBilinear},
                      ParityCase{"o8_single", 8, kSingle, kNone, 1, 0.9, kSinc},
                      ParityCase{"o4_single_bf16", 4, kSingle, kBf16, 1, 0.9, kSinc},
                      ParityCase{"o4_double_bf16", 4, kDouble, kBf16, 1, 0.9, kSinc},
                      ParityCase{"o4_double_k4", 4, kDouble, kNone, 4, 0.9, kSinc},
                      ParityCase{"o8_single_k3_bf16", 8, kSingle, kBf16, 3, 0.9, kSinc},
                      ParityCase{"o4_double_host", 4, kDouble, kNone, 1, 0.9, kSinc, SnapshotStorage::host},
                      ParityCase{"o4_single_host_bf16", 4, kSingle, kBf16, 1, 1.5, kSinc, SnapshotStorage::host},
                      ParityCase{"o6_single_host_k2", 6, kSingle, kNone, 2, 0.9, kBilinear, SnapshotStorage::host},
                      ParityCase{"o4_double_auto", 4, kDouble, kNone, 1, 0.9, kSinc, SnapshotStorage::automatic},
                      ParityCase{"o4_single_fp8", 4, kSingle, SnapshotCompression::fp8, 1, 0.9, kSinc},
                      ParityCase{"o8_double_fp8_k2", 8, kDouble, SnapshotCompression::fp8, 2, 1.6, kSinc},
                      ParityCase{"o4_single_host_fp8", 4, kSingle, SnapshotCompression::fp8, 1, 0.9, kBilinear,
                                 SnapshotStorage::host},
                      ParityCase{"o4_single_auto_k", 4, kSingle, kNone, 0, 0.9, kSinc},
                      ParityCase{"o4_double_ckpt", 4, kDouble, kNone, 1, 1.5, kSinc, SnapshotStorage::device, -1},
                      ParityCase{"o4_double_disk", 4, kDouble, kNone, 1, 0.9, kSinc, SnapshotStorage::disk},
                      ParityCase{"o6_single_disk_bf16_k2", 6, kSingle, kBf16, 2, 1.5, kSinc, SnapshotStorage::disk},
                      ParityCase{"o8_single_fp8_ckpt7", 8, kSingle, SnapshotCompression::fp8, 1, 0.9, kSinc,
                                 SnapshotStorage::device, 7},
                      // segments of 5 steps, which CUDA images in pairs of steps (all rows at their last)
                      ParityCase{"o6_single_bf16_ckpt5", 6, kSingle, kBf16, 1, 0.9, kSinc, SnapshotStorage::device, 5},
                      ParityCase{"o4_double_binomial", 4, kDouble, kNone, 1, 1.5, kSinc, SnapshotStorage::device, 0, -1},
                      ParityCase{"o6_single_bf16_binomial2", 6, kSingle, kBf16, 1, 0.9, kSinc, SnapshotStorage::automatic, 0, 2},
                      ParityCase{"o8_single_fp8_binomial5", 8, kSingle, SnapshotCompression::fp8, 1, 0.9, kSinc,
                                 SnapshotStorage::device, 0, 5}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// The largest relative differences between the GPU's traces (of a forward
// run and of the gradient's forward) and gradients (observed: the CPU's
// traces of `truth`) and the CPU's, for `opt` on both; printed after `what`,
// and expected within the precision's tolerance. Returns the GPU gradient's
// timings.
RunTimings expect_gpu_matches_cpu(PropagatorOptions opt, const Model& model, const Model& truth, const Survey& survey,
                                  const std::string& what) {
    CpuPropagator cpu_propagator(opt);
    const Traces cpu = cpu_propagator.forward(model, survey);
    const Traces observed = cpu_propagator.forward(truth, survey);
    const GradientResult gc = cpu_propagator.gradient(model, survey, observed);
    opt.backend = BackendKind::cuda;
    auto gpu = make_propagator(opt);
    const double e = max_relative(flatten(gpu->forward(model, survey)), flatten(cpu));
    const GradientResult gg = gpu->gradient(model, survey, observed);
    const double e_syn = max_relative(flatten(gg.synthetic), flatten(gc.synthetic));
    const double e_eps = max_relative(gg.grad_eps_r.values(), gc.grad_eps_r.values());
    const double e_sig = max_relative(gg.grad_sigma.values(), gc.grad_sigma.values());
    const double e_wav = max_relative(flatten(gg.grad_wavelet), flatten(gc.grad_wavelet));
    std::printf("%s, %s: traces %.2e (the gradient's %.2e) grad_eps_r %.2e grad_sigma %.2e grad_wavelet %.2e\n",
                what.c_str(), opt.precision == Precision::single ? "single" : "double", e, e_syn, e_eps, e_sig, e_wav);
    const double tolerance = opt.precision == Precision::single ? 1e-5 : 1e-12;
    EXPECT_LT(e, tolerance) << what;
    EXPECT_LT(e_syn, tolerance) << what;
    EXPECT_LT(e_eps, tolerance) << what;
    EXPECT_LT(e_sig, tolerance) << what;
    EXPECT_LT(e_wav, tolerance) << what;
    return gpu->last_timings();
}

// Options of stencil `order` on an uneven CPML, with the kept levels'
// precision, compression, storage and checkpointing of a test case.
PropagatorOptions level_options(int order, Precision precision, SnapshotCompression compression,
                                SnapshotStorage storage, int checkpoint_steps, int binomial_slots) {
    PropagatorOptions opt = test::double_options(order, 0);
    opt.cpml.widths = {9, 12, 10, 11};
    opt.precision = precision;
    opt.snapshots.compression = compression;
    opt.snapshots.storage = storage;
    opt.snapshots.checkpoint_steps = checkpoint_steps;
    opt.snapshots.binomial_slots = binomial_slots;
    return opt;
}

// Device memory filled with NaN when allocated (CudaTuning::poison_device_memory):
// a kernel that reads a node before anything wrote it (a halo, a level slot,
// a CPML memory) turns the traces or gradients into NaN. Without the option
// such a node holds whatever the allocation's memory held before, zero in a
// fresh process, and parity tests pass all the same. Every storage and
// compression, the forward's step pairs, stencils 4, 6 and 8.
TEST(CudaBackend, NothingIsReadBeforeItIsWritten) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        const char* name;
        Precision precision;
        int order;
        SnapshotCompression compression;
        SnapshotStorage storage = SnapshotStorage::device;
        int checkpoint_steps = 0, binomial_slots = 0;
    };
    const Case cases[] = {{"float levels", Precision::single, 4, kNone},
                          {"bf16 levels (split planes)", Precision::single, 8, kBf16},
                          {"fp8 levels", Precision::single, 4, SnapshotCompression::fp8},
                          {"double levels", Precision::double_precision, 8, kNone},
                          {"double bf16 levels", Precision::double_precision, 4, kBf16},
                          {"host storage, bf16", Precision::single, 4, kBf16, SnapshotStorage::host},
                          {"host storage", Precision::double_precision, 8, kNone, SnapshotStorage::host},
                          {"disk storage, bf16", Precision::single, 6, kBf16, SnapshotStorage::disk},
                          {"checkpoints of 5 steps", Precision::single, 8, kNone, SnapshotStorage::device, 5},
                          {"binomial, 2 slots, bf16", Precision::single, 4, kBf16, SnapshotStorage::device, 0, 2}};
    const Grid g{70, 55, 0.02, 0.025};
    const Model model = test::heterogeneous_model(g, 41), truth = test::heterogeneous_model(g, 42);
    for (const Case& c : cases) {
        const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), c.order);
        Survey survey = test::random_survey(g, 3, 2, 3, 160, 3e8, dt, 19);
        survey.shots[0].sources.front().position = Position{0.0, 0.0};  // on the edge: read the halo
        PropagatorOptions opt = level_options(c.order, c.precision, c.compression, c.storage, c.checkpoint_steps,
                                              c.binomial_slots);
        opt.cuda.poison_device_memory = true;
        expect_gpu_matches_cpu(opt, model, truth, survey,
                               std::string("poisoned memory, ") + c.name + ", stencil " + std::to_string(c.order));
    }
    // the forward's step pairs, on a grid large enough for a pair box
    const Grid big{420, 120, 0.02, 0.025};
    const Model plain = test::heterogeneous_model(big, 41);
    const double dt = 0.9 * test::cfl_limit(big, plain.min_eps_mu(), 4);
    const Survey survey = test::random_survey(big, 2, 1, 3, 121, 3e8, dt, 13);
    PropagatorOptions opt = test::double_options(4, 0);
    opt.cpml.widths = {9, 12, 10, 11};
    opt.precision = Precision::single;
    const Traces cpu = CpuPropagator(opt).forward(plain, survey);
    opt.backend = BackendKind::cuda;
    opt.cuda.poison_device_memory = true;
    opt.cuda.pair_rows = 16;
    auto gpu = make_propagator(opt);
    const double e = max_relative(flatten(gpu->forward(plain, survey)), flatten(cpu));
    std::printf("poisoned memory, forward step pairs: traces %.2e, %.0f%% of the nodes in pairs\n", e,
                100 * gpu->last_timings().forward_paired_share);
    EXPECT_GT(gpu->last_timings().forward_paired_share, 0.1);
    EXPECT_LT(e, 1e-5);
}

// Sources and receivers on the model's edge, next to the CPML: there the GPU
// adds the source term in a launch of its own (elsewhere, in the step's last),
// and, where the frame kernels do the adjoint's x strips, the adjoint source
// of its receivers in the frame's pass 3 (elsewhere, in further blocks of
// that launch).
TEST(CudaBackend, SourcesOnTheModelEdgeMatchTheCpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    const Grid g{70, 55, 0.02, 0.025};
    const Model model = test::heterogeneous_model(g, 41), truth = test::heterogeneous_model(g, 42);
    for (const Precision precision : {Precision::double_precision, Precision::single}) {
        for (const int order : {2, 8}) {
            const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), order);
            Survey survey = test::random_survey(g, 2, 1, 3, 160, 3e8, dt, 7);
            survey.shots[0].sources.push_back({Position{0.0, 0.0}, 0.7});
            survey.shots[1].sources.front().position = Position{(g.nx - 1) * g.dx, 0.5 * g.nz * g.dz};
            survey.shots[1].receivers.push_back(Position{(g.nx - 1) * g.dx, (g.nz - 1) * g.dz});
            PropagatorOptions opt = test::double_options(order, 0);
            opt.cpml.widths = {9, 12, 10, 11};
            opt.precision = precision;
            expect_gpu_matches_cpu(opt, model, truth, survey, "edge sources, stencil " + std::to_string(order));
        }
    }
}

// CPML strips of several widths: the GPU's adjoint step does its x strips
// (the columns left and right of what its warps march) in tiles of a whole
// strip's width and 32, 16 or 8 rows, the most whose shared arrays fit in
// 32 KiB, and leaves strips too wide for 8 rows to its frame kernels.
TEST(CudaBackend, XStripsOfEveryWidthMatchTheCpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        Precision precision;
        int order, left, right;
        const char* adjoint;  // what does the adjoint's x strips at this width
    };
    const Case cases[] = {{Precision::single, 4, 40, 9, "tiles of 32 rows"},
                          {Precision::single, 4, 300, 12, "the frame kernels"},
                          {Precision::single, 6, 50, 50, "tiles of 16 rows"},
                          {Precision::double_precision, 8, 9, 40, "tiles of 8 rows"},
                          {Precision::double_precision, 4, 70, 9, "tiles of 8 rows"}};
    const Grid g{70, 55, 0.02, 0.025};
    const Model model = test::heterogeneous_model(g, 41), truth = test::heterogeneous_model(g, 42);
    for (const Case& c : cases) {
        const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), c.order);
        const Survey survey = test::random_survey(g, 2, 1, 3, 160, 3e8, dt, 11);
        PropagatorOptions opt = test::double_options(c.order, 0);
        opt.cpml.widths = {c.left, c.right, 10, 11};
        opt.precision = c.precision;
        expect_gpu_matches_cpu(opt, model, truth, survey,
                               "x strips " + std::to_string(c.left) + " and " + std::to_string(c.right) +
                                   " wide (adjoint: " + c.adjoint + "), stencil " + std::to_string(c.order));
    }
}

// The marching warps' segments may take any number of rows: the forward's
// are chosen per grid and GPU (12 to 16 rows, whichever fills the last wave
// of blocks most), the adjoint's are 14, and CudaTuning's step_rows and
// adjoint_rows set them. Segments of 1 row (less than a stencil's
// reach), 5, 13 and 37 (the last one cut short), float and double, stencils
// 4 and 8, three shots (the adjoint's shots take turns block by block).
TEST(CudaBackend, SegmentsOfAnyLengthMatchTheCpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        Precision precision;
        int order;
        int step_rows, adjoint_rows;
    };
    const Case cases[] = {{Precision::single, 4, 1, 37},           {Precision::single, 4, 5, 1},
                          {Precision::single, 4, 13, 5},           {Precision::single, 8, 37, 13},
                          {Precision::double_precision, 4, 37, 1}, {Precision::double_precision, 8, 1, 5}};
    const Grid g{130, 150, 0.02, 0.025};
    const Model model = test::heterogeneous_model(g, 41), truth = test::heterogeneous_model(g, 42);
    for (const Case& c : cases) {
        const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), c.order);
        const Survey survey = test::random_survey(g, 3, 1, 5, 161, 3e8, dt, 17);
        PropagatorOptions opt = test::double_options(c.order, 0);
        opt.cpml.widths = {9, 12, 10, 11};
        opt.precision = c.precision;
        opt.cuda.step_rows = c.step_rows;
        opt.cuda.adjoint_rows = c.adjoint_rows;
        expect_gpu_matches_cpu(opt, model, truth, survey,
                               "segments of " + std::to_string(c.step_rows) + " (forward) and " +
                                   std::to_string(c.adjoint_rows) + " (adjoint) rows, stencil " +
                                   std::to_string(c.order));
    }
}

// Forward runs without kept levels take two steps a pass deep in the
// interior (kernels::cuda::step_pair) where that pays, on large grids; here
// CudaTuning::pair_rows asks for them on a small one, with segments of 16 and 37
// rows: sources and receivers inside the pair box, across its edges and
// corners and outside it, sinc sources (64 points, more than a warp holds
// at once) and bilinear ones, an odd step count, a magnetic model.
TEST(CudaBackend, ForwardStepPairsMatchTheCpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        Precision precision;
        int order;
        PointInterpolation interpolation;
        bool magnetic = false;  // mu_r varying: the steps read cq per node
    };
    const Case cases[] = {{Precision::single, 4, PointInterpolation::sinc},
                          {Precision::single, 4, PointInterpolation::sinc, true},
                          {Precision::single, 4, PointInterpolation::bilinear},
                          {Precision::single, 2, PointInterpolation::sinc},
                          {Precision::single, 8, PointInterpolation::sinc},
                          {Precision::double_precision, 4, PointInterpolation::sinc},
                          {Precision::double_precision, 6, PointInterpolation::bilinear}};
    const Grid g{420, 120, 0.02, 0.025};
    const Model plain = test::heterogeneous_model(g, 41);
    Model magnetic = plain;
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) magnetic.mu_r(iz, ix) = 1.0 + 0.5 * std::exp(-1e-4 * ((ix - 200) * (ix - 200) + (iz - 60) * (iz - 60)));
    // model columns and rows near the pair box's edges (CPML 9 and 10 nodes): its first column lies at
    // about 120 nodes from the interior's in single precision, 56 in double; its first row 16 rows in
    auto at = [&](double col, double row) { return Position{col * g.dx, row * g.dz}; };
    const Position sources[] = {at(200.3, 60.6), at(118.5, 40.2), at(125.3, 17.6), at(362.5, 99.5),
                                at(59.5, 50.5),  at(64.3, 18.2),  at(300.0, 100.0)};
    for (const Case& c : cases) {
        const Model& model = c.magnetic ? magnetic : plain;
        const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), c.order);
        Survey survey = test::random_survey(g, 7, 1, 6, 161, 3e8, dt, 13);
        for (std::size_t s = 0; s < survey.shots.size(); ++s) {
            survey.shots[s].sources.front().position = sources[s];
            survey.shots[s].receivers.push_back(sources[(s + 1) % survey.shots.size()]);
            survey.shots[s].receivers.push_back(at(250.5, 70.5));
        }
        survey.shots[6].sources.push_back({at(126.0, 28.0), 0.5});  // a second source, on a node
        PropagatorOptions opt = test::double_options(c.order, 0);
        opt.cpml.widths = {9, 12, 10, 11};
        opt.precision = c.precision;
        opt.interpolation = c.interpolation;
        const Traces cpu = CpuPropagator(opt).forward(model, survey);
        opt.backend = BackendKind::cuda;
        auto gpu = make_propagator(opt);
        gpu->forward(model, survey);
        EXPECT_EQ(gpu->last_timings().forward_paired_share, 0.0) << "a grid this small takes no pairs by itself";
        for (const int rows : {16, 37}) {
            PropagatorOptions paired_opt = opt;
            paired_opt.cuda.pair_rows = rows;
            auto paired = make_propagator(paired_opt);
            const double e = max_relative(flatten(paired->forward(model, survey)), flatten(cpu));
            const double share = paired->last_timings().forward_paired_share;
            std::printf("forward step pairs, %s, stencil %d, %s points%s, %d-row segments: traces %.2e, %.0f%% of "
                        "the nodes two steps a pass\n",
                        c.precision == Precision::single ? "single" : "double", c.order, to_string(c.interpolation),
                        c.magnetic ? ", magnetic model" : "", rows, e, 100 * share);
            EXPECT_GT(share, 0.1);
            EXPECT_LT(e, c.precision == Precision::single ? 1e-5 : 1e-12);
        }
    }
}

// A gradient whose forward keeps every uncompressed level on the device
// writes Ey into the levels themselves, so its steps may go in pairs too
// (the pairs write Ey^{m+1} and Ey^{m+2} into levels m + 1 and m + 2, or the
// middle buffer where a level is not kept); CudaTuning::pair_rows asks for them
// on a small grid. Levels every step (once on poisoned memory), every 2nd
// and 3rd, an odd step count; bf16 levels keep one step a pass.
TEST(CudaBackend, GradientStepPairsMatchTheCpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        Precision precision;
        int order, interval;
        SnapshotCompression compression;
        bool poisoned = false;
    };
    const Case cases[] = {{Precision::single, 4, 1, kNone},
                          {Precision::single, 4, 1, kNone, true},
                          {Precision::single, 2, 2, kNone},
                          {Precision::double_precision, 4, 3, kNone},
                          {Precision::single, 4, 1, kBf16}};
    const Grid g{420, 120, 0.02, 0.025};
    const Model model = test::heterogeneous_model(g, 41), truth = test::heterogeneous_model(g, 42);
    auto at = [&](double col, double row) { return Position{col * g.dx, row * g.dz}; };
    const Position sources[] = {at(200.3, 60.6), at(118.5, 40.2), at(300.0, 100.0)};  // in the step's interior
    for (const Case& c : cases) {
        const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), c.order);
        Survey survey = test::random_survey(g, 3, 1, 5, 161, 3e8, dt, 13);
        for (std::size_t s = 0; s < survey.shots.size(); ++s) survey.shots[s].sources.front().position = sources[s];
        PropagatorOptions opt = test::double_options(c.order, 0);
        opt.cpml.widths = {9, 12, 10, 11};
        opt.precision = c.precision;
        opt.snapshots.compression = c.compression;
        opt.snapshots.interval = c.interval;
        opt.cuda.pair_rows = 16;
        opt.cuda.poison_device_memory = c.poisoned;
        const std::string what = "gradient step pairs, stencil " + std::to_string(c.order) + ", levels every " +
                                 std::to_string(c.interval) + " step(s)" + (c.compression == kBf16 ? ", bf16" : "") +
                                 (c.poisoned ? ", poisoned memory" : "");
        const double share = expect_gpu_matches_cpu(opt, model, truth, survey, what).forward_paired_share;
        std::printf("%s: %.0f%% of the nodes two steps a pass in the gradient's forward\n", what.c_str(), 100 * share);
        if (c.compression == kNone) EXPECT_GT(share, 0.1) << what;
        else EXPECT_EQ(share, 0.0) << what << ": compressed levels are not the forward's Ey";
    }
}

// A magnetic model (mu_r varying): the GPU's step then reads the per-node
// magnetic coefficient instead of the uniform one it uses otherwise.
TEST(CudaBackend, MagneticModelsMatchTheCpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    const Grid g{70, 55, 0.02, 0.025};
    Model model = test::heterogeneous_model(g, 41);
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) model.mu_r(iz, ix) = 1.0 + 0.5 * std::exp(-0.01 * ((ix - 30) * (ix - 30) + (iz - 20) * (iz - 20)));
    for (const Precision precision : {Precision::double_precision, Precision::single}) {
        const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4);
        const Survey survey = test::random_survey(g, 2, 1, 4, 160, 3e8, dt, 9);
        PropagatorOptions opt = test::double_options(4, 0);
        opt.cpml.widths = {9, 12, 10, 11};
        opt.precision = precision;
        const Traces cpu = CpuPropagator(opt).forward(model, survey);
        opt.backend = BackendKind::cuda;
        const double e = max_relative(flatten(make_propagator(opt)->forward(model, survey)), flatten(cpu));
        std::printf("magnetic model, %s: traces %.2e\n", precision == Precision::single ? "single" : "double", e);
        EXPECT_LT(e, precision == Precision::single ? 1e-5 : 1e-12);
    }
}

// <F x, y> = <x, F^T y> with F^T computed on the GPU.
TEST(CudaAdjoint, DotProductTestInDouble) {
    GPRFWI_SKIP_WITHOUT_GPU();
    for (int order : {2, 4, 8}) {
        const Grid g{40, 33, 0.05, 0.04};
        const Model model = test::heterogeneous_model(g, 11);
        const double dt = 1.7 * test::cfl_limit(g, model.min_eps_mu(), order);
        const Survey survey = test::with_random_wavelets(test::random_survey(g, 3, 2, 4, 90, 3e8, dt, 5), 17);
        const Traces y = test::random_traces(survey, 23);
        PropagatorOptions opt = test::double_options(order, 0);
        opt.cpml.widths = {6, 8, 7, 5};
        opt.cpml.kappa_max = 3.0;
        opt.backend = BackendKind::cuda;
        auto gpu = make_propagator(opt);
        const double lhs = test::dot(gpu->forward(model, survey), y);
        const GradientResult adj = gpu->gradient(model, survey, LinearFunctional(y));
        double rhs = 0;
        for (std::size_t s = 0; s < survey.shots.size(); ++s)
            for (int n = 0; n < survey.nt; ++n) rhs += survey.shots[s].wavelet[n] * adj.grad_wavelet[s][n];
        const double rel = std::abs(lhs - rhs) / std::abs(lhs);
        std::printf("GPU dot-product test, stencil %d: relative error %.3e\n", order, rel);
        EXPECT_LT(rel, 1e-12);
    }
}

// The NumericalBlowup message of a GPU forward run of `shots` shots in
// `shot_groups` groups, shot `bad`'s source 10^36 times too strong, the
// fields checked every 10 steps; empty (and a failure) without one.
std::string blowup_message(int shots, int bad, int shot_groups) {
    const Grid g{50, 40, 0.02, 0.02};
    const Model model = Model::uniform(g, 4.0, 0.001);
    Survey survey = test::random_survey(g, shots, 1, 2, 60, 3e8, 0.5 * test::cfl_limit(g, 4.0, 4), 2);
    for (double& v : survey.shots[static_cast<std::size_t>(bad)].wavelet) v *= 1e36;
    PropagatorOptions opt;
    opt.backend = BackendKind::cuda;
    opt.blowup_check_interval = 10;
    opt.shot_groups = shot_groups;
    try {
        make_propagator(opt)->forward(model, survey);
    } catch (const NumericalBlowup& e) {
        std::printf("%s\n", e.what());
        return e.what();
    }
    ADD_FAILURE() << "expected NumericalBlowup";
    return "";
}

// Born runs and Gauss-Newton products on the GPU: the background's steps,
// the perturbation's steps without a source, the scattering term and the
// adjoint are the CPU's operations in the CPU's order, so Born traces and
// products are bitwise equal, for every storage of the levels, shot groups,
// and calls that alternate with gradients on the same workspace. Full
// products too (the second-order adjoint's passes and imaging sums are the
// CPU's), where both runs' levels are all kept on the device: with
// checkpoints (on both backends) and host levels (on the GPU) they are refused.
TEST(CudaBackend, BornAndHessianProductsMatchTheCpuBitwise) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        const char* name;
        Precision precision;
        int order;
        SnapshotCompression compression;
        SnapshotStorage storage;
        int checkpoint_steps, binomial_slots, groups;
        double dt_over_limit;
    };
    const auto kDevice = SnapshotStorage::device, kHost = SnapshotStorage::host;
    const Case cases[] = {{"float", kSingle, 4, kNone, kDevice, 0, 0, 0, 0.9},
                          {"double, stencil 8, sub-steps", kDouble, 8, kNone, kDevice, 0, 0, 1, 2.3},
                          {"bf16 split planes, stencil 2", kSingle, 2, kBf16, kDevice, 0, 0, 2, 0.9},
                          {"fp8, stencil 6", kSingle, 6, SnapshotCompression::fp8, kDevice, 0, 0, 3, 0.9},
                          {"host storage", kSingle, 4, kNone, kHost, 0, 0, 1, 0.9},
                          {"checkpoints of 7 steps", kSingle, 4, kNone, kDevice, 7, 0, 2, 0.9},
                          {"binomial, 3 slots", kDouble, 4, kNone, kDevice, 0, 3, 1, 0.9}};
    const Grid g{70, 55, 0.02, 0.025};
    const Model model = test::heterogeneous_model(g, 41), truth = test::heterogeneous_model(g, 42);
    const ModelDirection v = test::smooth_direction(g, 0.5, 0.004, 5);
    for (const Case& c : cases) {
        const double dt = c.dt_over_limit * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), c.order);
        const Survey survey = test::random_survey(g, 5, 2, 4, 160, 3e8, dt, 23);
        PropagatorOptions opt = level_options(c.order, c.precision, c.compression, c.storage, c.checkpoint_steps,
                                              c.binomial_slots);
        opt.shot_groups = c.groups;
        opt.cpml.reference_velocity = 1.2e8;
        CpuPropagator cpu(opt);
        const Traces observed = cpu.forward(truth, survey);
        const L2Misfit misfit(observed);
        opt.backend = BackendKind::cuda;
        auto gpu = make_propagator(opt);
        for (int round = 0; round < 2; ++round) {  // the second on a workspace that a gradient used in between
            const std::string what = std::string(c.name) + (round ? ", after a gradient" : "");
            const Traces bc = cpu.born(model, survey, v), bg = gpu->born(model, survey, v);
            const HessianResult hc = cpu.hessian(model, survey, misfit, v, HessianKind::gauss_newton);
            const HessianResult hg = gpu->hessian(model, survey, misfit, v, HessianKind::gauss_newton);
            std::printf("Born and Gauss-Newton, %s: Born %.2e, synthetic %.2e, Hv eps_r %.2e, sigma %.2e\n", what.c_str(),
                        max_relative(flatten(bg), flatten(bc)), max_relative(flatten(hg.synthetic), flatten(hc.synthetic)),
                        max_relative(hg.hv_eps_r.values(), hc.hv_eps_r.values()),
                        max_relative(hg.hv_sigma.values(), hc.hv_sigma.values()));
            ASSERT_GT(test::norm(bc), 0.0);
            EXPECT_EQ(flatten(bg), flatten(bc)) << what;
            EXPECT_EQ(flatten(hg.born), flatten(bc)) << what;
            EXPECT_EQ(flatten(hg.synthetic), flatten(hc.synthetic)) << what;
            EXPECT_EQ(hg.misfit, hc.misfit) << what;
            EXPECT_EQ(hg.hv_eps_r.values(), hc.hv_eps_r.values()) << what;
            EXPECT_EQ(hg.hv_sigma.values(), hc.hv_sigma.values()) << what;
            // a second product at the model: from the kept background where the levels are it
            const ModelDirection w = test::smooth_direction(g, 0.3, 0.006, 9);
            const HessianResult h2c = cpu.hessian(model, survey, misfit, w, HessianKind::gauss_newton);
            const HessianResult h2g = gpu->hessian(model, survey, misfit, w, HessianKind::gauss_newton);
            const bool exact = c.compression == kNone && c.storage == kDevice && !c.checkpoint_steps && !c.binomial_slots;
            EXPECT_EQ(gpu->last_timings().background_kept, exact) << what;
            EXPECT_EQ(cpu.last_timings().background_kept, c.compression == kNone && !c.checkpoint_steps && !c.binomial_slots)
                << what;
            EXPECT_EQ(flatten(h2g.born), flatten(h2c.born)) << what << ", second product";
            EXPECT_EQ(h2g.hv_eps_r.values(), h2c.hv_eps_r.values()) << what << ", second product";
            EXPECT_EQ(h2g.hv_sigma.values(), h2c.hv_sigma.values()) << what << ", second product";
            const GradientResult gg = gpu->gradient(model, survey, observed), gc = cpu.gradient(model, survey, observed);
            EXPECT_EQ(gg.grad_eps_r.values(), gc.grad_eps_r.values()) << what << ": a gradient after Born runs";
        }
        // full products: the second-order adjoint reads every level of both runs, on the device
        if (c.checkpoint_steps || c.binomial_slots) {
            EXPECT_THROW(cpu.hessian(model, survey, misfit, v, HessianKind::full), InvalidArgument) << c.name;
            EXPECT_THROW(gpu->hessian(model, survey, misfit, v, HessianKind::full), InvalidArgument) << c.name;
            continue;
        }
        if (c.storage == kHost) {
            EXPECT_THROW(gpu->hessian(model, survey, misfit, v, HessianKind::full), InvalidArgument) << c.name;
            continue;
        }
        for (const ModelDirection& d : {v, test::smooth_direction(g, 0.3, 0.006, 9)}) {  // the second from kept levels
            const HessianResult hc = cpu.hessian(model, survey, misfit, d, HessianKind::full);
            const HessianResult hg = gpu->hessian(model, survey, misfit, d, HessianKind::full);
            std::printf("Full Hessian, %s: Hv eps_r %.2e, sigma %.2e\n", c.name,
                        max_relative(hg.hv_eps_r.values(), hc.hv_eps_r.values()),
                        max_relative(hg.hv_sigma.values(), hc.hv_sigma.values()));
            const auto& hv = hc.hv_eps_r.values();
            ASSERT_TRUE(std::any_of(hv.begin(), hv.end(), [](double a) { return a != 0; })) << c.name;
            EXPECT_EQ(flatten(hg.born), flatten(hc.born)) << c.name;
            EXPECT_EQ(hg.misfit, hc.misfit) << c.name;
            EXPECT_EQ(hg.hv_eps_r.values(), hc.hv_eps_r.values()) << c.name << ", full product";
            EXPECT_EQ(hg.hv_sigma.values(), hc.hv_sigma.values()) << c.name << ", full product";
        }
        EXPECT_EQ(gpu->last_timings().background_kept, c.compression == kNone) << c.name;
        // and the Gauss-Newton product and the gradient after them, on the same workspace
        const HessianResult nc = cpu.hessian(model, survey, misfit, v, HessianKind::gauss_newton);
        const HessianResult ng = gpu->hessian(model, survey, misfit, v, HessianKind::gauss_newton);
        EXPECT_EQ(ng.hv_eps_r.values(), nc.hv_eps_r.values()) << c.name << ", Gauss-Newton after full";
        const GradientResult gg = gpu->gradient(model, survey, observed), gc = cpu.gradient(model, survey, observed);
        EXPECT_EQ(gg.grad_eps_r.values(), gc.grad_eps_r.values()) << c.name << ": a gradient after full products";
    }
}

// Shot groups: on the GPU each group of a batch is an engine of its own, the
// groups' time loops run at once (a host thread and a stream each) and their
// sums are added in group order; the CPU runs the batch as one engine with a
// sum per group. Same order: bitwise equal results, for every storage and
// compression and groups of uneven sizes. A blow-up names the batch's shot,
// and the peak device memory is that of the groups' engines together.
TEST(CudaBackend, ShotGroupsMatchTheCpuBitwise) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        const char* name;
        Precision precision;
        int order;
        SnapshotCompression compression;
        SnapshotStorage storage;
        int checkpoint_steps, binomial_slots, groups, expected_groups;
    };
    const auto kDevice = SnapshotStorage::device, kHost = SnapshotStorage::host, kDisk = SnapshotStorage::disk;
    const Case cases[] = {{"float levels, automatic groups", kSingle, 4, kNone, kDevice, 0, 0, 0, 2},
                          {"bf16 split planes", kSingle, 4, kBf16, kDevice, 0, 0, 2, 2},
                          {"fp8 levels", kSingle, 8, SnapshotCompression::fp8, kDevice, 0, 0, 3, 3},
                          {"double", kDouble, 4, kNone, kDevice, 0, 0, 2, 2},
                          {"host storage, bf16", kSingle, 6, kBf16, kHost, 0, 0, 2, 2},
                          {"disk storage, bf16", kSingle, 4, kBf16, kDisk, 0, 0, 5, 5},
                          {"checkpoints of 5 steps", kSingle, 4, kNone, kDevice, 5, 0, 2, 2},
                          {"binomial, 2 slots, bf16", kSingle, 4, kBf16, kDevice, 0, 2, 3, 3}};
    const Grid g{70, 55, 0.02, 0.025};
    const Model model = test::heterogeneous_model(g, 41), truth = test::heterogeneous_model(g, 42);
    for (const Case& c : cases) {
        const double dt = 0.9 * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), c.order);
        const Survey survey = test::random_survey(g, 5, 2, 4, 160, 3e8, dt, 23);
        PropagatorOptions opt = level_options(c.order, c.precision, c.compression, c.storage, c.checkpoint_steps,
                                              c.binomial_slots);
        opt.shot_groups = c.groups;
        opt.illumination = true;
        CpuPropagator cpu(opt);
        const Traces observed = cpu.forward(truth, survey);
        const GradientResult gc = cpu.gradient(model, survey, observed);
        opt.backend = BackendKind::cuda;
        auto gpu = make_propagator(opt);
        const GradientResult gg = gpu->gradient(model, survey, observed);
        const std::string what = std::string(c.name) + ", " + std::to_string(c.groups) + " groups";
        std::printf("shot groups, %s: %d groups; traces %.2e grad_eps_r %.2e grad_sigma %.2e grad_wavelet %.2e "
                    "illumination %.2e (levels in %s)\n",
                    what.c_str(), gpu->last_timings().shot_groups, max_relative(flatten(gg.synthetic), flatten(gc.synthetic)),
                    max_relative(gg.grad_eps_r.values(), gc.grad_eps_r.values()),
                    max_relative(gg.grad_sigma.values(), gc.grad_sigma.values()),
                    max_relative(flatten(gg.grad_wavelet), flatten(gc.grad_wavelet)),
                    max_relative(gg.illumination.values(), gc.illumination.values()),
                    gpu->last_timings().level_storage.c_str());
        EXPECT_EQ(gpu->last_timings().shot_groups, c.expected_groups) << what;
        EXPECT_EQ(cpu.last_timings().shot_groups, c.expected_groups) << what;
        EXPECT_EQ(flatten(gg.synthetic), flatten(gc.synthetic)) << what;
        EXPECT_EQ(gg.misfit, gc.misfit) << what;
        EXPECT_EQ(gg.grad_eps_r.values(), gc.grad_eps_r.values()) << what;
        EXPECT_EQ(gg.grad_sigma.values(), gc.grad_sigma.values()) << what;
        EXPECT_EQ(flatten(gg.grad_wavelet), flatten(gc.grad_wavelet)) << what;
        EXPECT_EQ(gg.illumination.values(), gc.illumination.values()) << what;
    }

    // a blow-up in shot 3, the first of the third of groups {0}, {1, 2}, {3, 4}
    const std::string msg = blowup_message(5, 3, 3);
    EXPECT_NE(msg.find("in Ey of shot 3 at internal step "), std::string::npos) << msg;

    // the groups' engines are alive together: their peak is the batch's, not one group's
    const Model plain = Model::uniform(g, 4.0, 0.001);
    PropagatorOptions opt;
    opt.backend = BackendKind::cuda;
    const Survey four = test::random_survey(g, 4, 1, 3, 400, 3e8, 0.9 * test::cfl_limit(g, 4.0, 4), 2);
    std::size_t peak[2] = {};
    for (int groups : {1, 2}) {
        opt.shot_groups = groups;
        auto p = make_propagator(opt);
        p->gradient(plain, four, make_traces(four));
        peak[groups - 1] = p->peak_device_bytes();
    }
    std::printf("peak device memory, 4 shots: %zu bytes in one group, %zu in two\n", peak[0], peak[1]);
    EXPECT_GT(peak[1], peak[0] * 9 / 10);
}

// The propagator's workspace: one GPU propagator serves calls that change,
// from one to the next, the model, the receivers and wavelets, the shots
// (fewer, then more than at first), the record length, the grid and the
// illumination, with forward-only calls between gradients. Each call is
// bitwise the CPU's (a new CPU propagator each call), for every storage of
// the kept levels, and with memory poisoned at every call's start (so that
// nothing is read that the call did not write).
TEST(CudaBackend, WorkspaceServesChangingCallsBitwise) {
    GPRFWI_SKIP_WITHOUT_GPU();
    const auto kDevice = SnapshotStorage::device, kHost = SnapshotStorage::host, kDisk = SnapshotStorage::disk;
    struct Case {
        const char* name;
        Precision precision;
        int order;
        SnapshotCompression compression;
        SnapshotStorage storage;
        int checkpoint_steps, binomial_slots;
        bool poison;
    };
    const Case cases[] = {{"float levels on the device", kSingle, 4, kNone, kDevice, 0, 0, false},
                          {"float levels, poisoned", kSingle, 4, kNone, kDevice, 0, 0, true},
                          {"bf16 split planes, poisoned", kSingle, 8, kBf16, kDevice, 0, 0, true},
                          {"double, fp8 levels", kDouble, 6, SnapshotCompression::fp8, kDevice, 0, 0, false},
                          {"host storage, bf16, poisoned", kSingle, 4, kBf16, kHost, 0, 0, true},
                          {"disk storage", kSingle, 4, kNone, kDisk, 0, 0, false},
                          {"checkpoints of 7 steps, poisoned", kSingle, 4, kNone, kDevice, 7, 0, true},
                          {"binomial, 3 slots", kDouble, 4, kNone, kDevice, 0, 3, false}};
    for (const Case& c : cases) {
        PropagatorOptions opt = level_options(c.order, c.precision, c.compression, c.storage, c.checkpoint_steps,
                                              c.binomial_slots);
        PropagatorOptions gpu_opt = opt;
        gpu_opt.backend = BackendKind::cuda;
        gpu_opt.cuda.poison_device_memory = c.poison;
        auto gpu = make_propagator(gpu_opt);
        for (const test::Call& call : test::changing_calls(c.order)) {
            CpuPropagator cpu(opt);
            const test::CallResult on_gpu = test::run_call(*gpu, call), on_cpu = test::run_call(cpu, call);
            std::printf("workspace, %s, %s: traces %.2e", c.name, call.what.c_str(),
                        max_relative(on_gpu.traces, on_cpu.traces));
            if (call.gradient) std::printf(" grad_eps_r %.2e", max_relative(on_gpu.grad_eps_r, on_cpu.grad_eps_r));
            std::printf("\n");
            test::expect_bitwise_equal(on_gpu, on_cpu, std::string(c.name) + ": " + call.what);
        }
    }
}

// A workspace made ahead of a call (Propagator::reserve, which the command
// line runs while it reads the data), for the call's model and survey or for
// the next call's (another grid, fewer shots, no kept levels), leaves the
// call bitwise the CPU's.
TEST(CudaBackend, ReservedAheadMatchesTheCpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    struct Case {
        const char* name;
        SnapshotCompression compression;
        SnapshotStorage storage;
        bool poison;
    };
    const Case cases[] = {{"float levels on the device, poisoned", kNone, SnapshotStorage::device, true},
                          {"host storage, bf16", kBf16, SnapshotStorage::host, false}};
    for (const Case& k : cases) {
        const PropagatorOptions opt = level_options(4, kSingle, k.compression, k.storage, 0, 0);
        PropagatorOptions gpu_opt = opt;
        gpu_opt.backend = BackendKind::cuda;
        gpu_opt.cuda.poison_device_memory = k.poison;
        const std::vector<test::Call> calls = test::changing_calls(4);
        for (std::size_t i = 0; i < calls.size(); ++i) {
            const test::Call& c = calls[i];
            const test::Call& other = calls[(i + 1) % calls.size()];
            CpuPropagator cpu(opt);
            const test::CallResult expected = test::run_call(cpu, c);
            auto same = make_propagator(gpu_opt);
            same->reserve(c.model, c.survey, c.gradient);
            test::expect_bitwise_equal(test::run_call(*same, c), expected, std::string(k.name) + ": reserved for " + c.what);
            same.reset();
            auto different = make_propagator(gpu_opt);
            different->reserve(other.model, other.survey, other.gradient);
            test::expect_bitwise_equal(test::run_call(*different, c), expected,
                                       std::string(k.name) + ": " + c.what + ", reserved for " + other.what);
        }
    }
}

// Fifty gradients on one propagator: the device memory it holds at its
// peak and the process's resident memory stay what they were after the
// first calls, and the last result is bitwise the first.
TEST(CudaBackend, WorkspaceMemoryStaysFlatOverFiftyGradients) {
    GPRFWI_SKIP_WITHOUT_GPU();
    for (const SnapshotStorage storage : {SnapshotStorage::device, SnapshotStorage::host}) {
        PropagatorOptions opt = level_options(4, kSingle, kBf16, storage, 0, 0);
        opt.backend = BackendKind::cuda;
        auto gpu = make_propagator(opt);
        const test::Call c = test::changing_calls(4).front();
        const test::CallResult first = test::run_call(*gpu, c);
        const std::size_t peak_first = gpu->peak_device_bytes();
        std::size_t resident_five = 0;
        for (int call = 2; call <= 50; ++call) {
            const test::CallResult r = test::run_call(*gpu, c);
            if (call == 5) resident_five = test::resident_bytes();
            if (call == 50) test::expect_bitwise_equal(r, first, "the 50th call against the first");
        }
        const std::size_t resident_fifty = test::resident_bytes();
        std::printf("workspace memory, levels in %s: device peak %zu bytes after one gradient, %zu after 50; "
                    "resident %zu bytes after 5, %zu after 50\n",
                    gpu->last_timings().level_storage.c_str(), peak_first, gpu->peak_device_bytes(), resident_five,
                    resident_fifty);
        EXPECT_EQ(gpu->peak_device_bytes(), peak_first);
        // a gradient's kept levels are 4.5 MB here (page-locked in host storage): one more per call would show
        EXPECT_LT(resident_fifty, resident_five + (std::size_t{2} << 20));
    }
}

TEST(CudaBackend, AutoPicksTheGpu) {
    GPRFWI_SKIP_WITHOUT_GPU();
    PropagatorOptions opt;
    auto p = make_propagator(opt);
    EXPECT_EQ(p->name().rfind("cuda", 0), 0u) << p->name();
}

/// Ways of keeping levels and running that change what a CUDA engine allocates.
struct MemoryVariant {
    const char* name;
    void (*set)(PropagatorOptions&);
};
const MemoryVariant kMemoryVariants[] = {
    {"every level (step pairs, paired imaging)", [](PropagatorOptions&) {}},
    {"one shot group", [](PropagatorOptions& o) { o.shot_groups = 1; }},
    {"every third level", [](PropagatorOptions& o) { o.snapshots.interval = 3; }},
    {"bf16 levels (split planes)", [](PropagatorOptions& o) { o.snapshots.compression = SnapshotCompression::bf16; }},
    {"fp8 levels", [](PropagatorOptions& o) { o.snapshots.compression = SnapshotCompression::fp8; }},
    {"checkpoints", [](PropagatorOptions& o) { o.snapshots.checkpoint_steps = -1; }},
    {"binomial", [](PropagatorOptions& o) { o.snapshots.binomial_slots = -1; }},
    {"host storage", [](PropagatorOptions& o) { o.snapshots.storage = SnapshotStorage::host; }},
    {"disk storage", [](PropagatorOptions& o) { o.snapshots.storage = SnapshotStorage::disk; }},
    {"illumination", [](PropagatorOptions& o) { o.illumination = true; }},
    {"wide CPML strips", [](PropagatorOptions& o) { o.cpml.widths = {40, 40, 40, 40}; }},
    {"double, stencil 8", [](PropagatorOptions& o) {
         o.precision = Precision::double_precision;
         o.stencil_order = 8;
     }},
};

// The CUDA backend's memory plan (memory_plan.hpp) is what its engines hold
// on the device after a call in a fresh propagator, and the most they held,
// for every variant: the out-of-memory check, the estimate and the bench read
// the plan, so a plan that misses an array misleads all three.
TEST(CudaBackend, HoldsWhatItsMemoryPlanCounts) {
    GPRFWI_SKIP_WITHOUT_GPU();
    const Grid g{90, 70, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 3);
    const Survey survey = test::random_survey(g, 4, 1, 3, 120, 3e8, 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4), 2);
    for (const MemoryVariant& v : kMemoryVariants) {
        SCOPED_TRACE(v.name);
        PropagatorOptions opt;
        opt.backend = BackendKind::cuda;
        opt.cpml.widths = {10, 10, 10, 10};
        v.set(opt);
        for (const bool gradient : {false, true}) {
            auto p = make_cuda_propagator(opt);
            if (gradient) p->gradient(model, survey, make_traces(survey));
            else p->forward(model, survey);
            const MemoryEstimate plan = p->estimate_memory(model, survey, gradient);
            std::printf("%-42s %-8s plan %9zu bytes (levels %9zu, host %9zu), held %9zu, peak %9zu\n", v.name,
                        gradient ? "gradient" : "forward", plan.total(), plan.snapshot_bytes, plan.host_snapshot_bytes,
                        p->workspace_bytes(), p->peak_device_bytes());
            EXPECT_EQ(p->workspace_bytes(), plan.total()) << "gradient " << gradient;
            EXPECT_EQ(p->peak_device_bytes(), plan.total()) << "gradient " << gradient;
        }
    }
}

// The CUDA plan needs no GPU (`gprfwi check` reads it on a login node):
// what moves the kept levels moves exactly them.
TEST(CudaMemoryPlan, StorageMovesTheKeptLevelsAndNothingElse) {
    if (!cuda_backend_compiled()) GTEST_SKIP() << "the CUDA backend is not compiled into this build";
    const Grid g{90, 70, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 3);
    const Survey survey = test::random_survey(g, 3, 1, 3, 120, 3e8, 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4), 2);
    PropagatorOptions opt;
    opt.backend = BackendKind::cuda;
    opt.snapshots.compression = SnapshotCompression::bf16;  // (not Ey's type: no step pairs with kept levels)
    auto plan = [&](const PropagatorOptions& o, bool gradient) {
        return plan_batch_memory(PropagationSetup::build(model, survey, o), o, gradient, BackendKind::cuda);
    };
    const MemoryEstimate device = plan(opt, true), forward = plan(opt, false);
    PropagatorOptions host = opt, disk = opt;
    host.snapshots.storage = SnapshotStorage::host;
    disk.snapshots.storage = SnapshotStorage::disk;
    const MemoryEstimate on_host = plan(host, true), on_disk = plan(disk, true);
    const std::size_t n = PropagationSetup::build(model, survey, opt).grid.storage_size() * survey.shots.size();
    const std::size_t level = n * 2;  // bf16
    const int nt = PropagationSetup::build(model, survey, opt).time.nt_internal;
    EXPECT_EQ(device.snapshot_bytes, static_cast<std::size_t>(nt) * level);
    EXPECT_EQ(on_host.host_snapshot_bytes, device.snapshot_bytes);
    EXPECT_EQ(on_host.snapshot_bytes, 4 * level);  // the ring of device slots
    EXPECT_EQ(on_disk.host_snapshot_bytes, 4 * level);  // the ring's page-locked staging
    EXPECT_EQ(on_disk.snapshot_bytes, 4 * level);
    for (const MemoryEstimate* e : {&on_host, &on_disk}) {
        EXPECT_EQ(e->traces_bytes, device.traces_bytes);
        EXPECT_EQ(e->fields_bytes, device.fields_bytes - n * sizeof(float));  // no third lambda_ey (paired imaging)
    }
    EXPECT_EQ(forward.snapshot_bytes, 0u);
    EXPECT_LT(forward.total(), device.fields_bytes);
}

TEST(CudaBackend, ReportsBlowUpAndOutOfMemory) {
    GPRFWI_SKIP_WITHOUT_GPU();
    // the checks' flags are read a check or two later (the GPU does not wait for them): the shot and the
    // step of the check that found the blow-up are still the ones reported
    const std::string blowup = blowup_message(3, 1, 0);
    EXPECT_NE(blowup.find("in Ey of shot 1 at internal step "), std::string::npos) << blowup;
    if (blowup.find("internal step ") != std::string::npos) {
        const int step = std::stoi(blowup.substr(blowup.find("internal step ") + 14));
        EXPECT_TRUE(step == 0 || (step + 1) % 10 == 0) << "a check's step: " << blowup;
    }
    PropagatorOptions opt;
    opt.backend = BackendKind::cuda;

    // 6000 x 6000 nodes, 4 shots, 4000 kept levels: about 2.3 TB on the device
    const Grid huge{6000, 6000, 0.01, 0.01};
    const Model big = Model::uniform(huge, 4.0, 0.0);
    Survey s = test::random_survey(huge, 4, 1, 1, 4000, 3e8, 0.9 * test::cfl_limit(huge, 4.0, 4), 2);
    opt.snapshots.storage = SnapshotStorage::device;
    try {
        make_propagator(opt)->gradient(big, s, make_traces(s));
        FAIL() << "expected OutOfMemory";
    } catch (const OutOfMemory& e) {
        const std::string msg = e.what();
        std::printf("%s\n", msg.c_str());
        EXPECT_NE(msg.find("GiB are free"), std::string::npos) << msg;
        EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
    }
}

TEST(CudaBackend, DiskStorageCleansUpAndRefusesWhenTheDiskIsTooSmall) {
    GPRFWI_SKIP_WITHOUT_GPU();
    const auto scratch = test::scratch_path("levels");
    std::filesystem::create_directories(scratch);
    PropagatorOptions opt;
    opt.backend = BackendKind::cuda;
    opt.snapshots.storage = SnapshotStorage::disk;
    opt.snapshots.scratch_dir = scratch.string();
    const Grid g{60, 50, 0.02, 0.02};
    const Model model = test::heterogeneous_model(g, 3);
    const Survey survey = test::random_survey(g, 2, 1, 3, 200, 3e8, 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4), 2);
    auto p = make_propagator(opt);
    p->gradient(model, survey, make_traces(survey));
    EXPECT_NE(p->last_timings().level_storage.find("disk"), std::string::npos);
    EXPECT_TRUE(std::filesystem::is_empty(scratch)) << "the run's scratch folder must be removed";

    // about 260 GB of kept levels: more than the free space of any test machine's disk
    const Grid big{2000, 2000, 0.01, 0.01};
    const Survey s = test::random_survey(big, 4, 1, 1, 4000, 3e8, 0.9 * test::cfl_limit(big, 4.0, 4), 2);
    try {
        make_propagator(opt)->gradient(Model::uniform(big, 4.0, 0.0), s, make_traces(s));
        FAIL() << "expected OutOfMemory";
    } catch (const OutOfMemory& e) {
        std::printf("%s\n", e.what());
        EXPECT_NE(std::string(e.what()).find("MiB are free there"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(std::filesystem::is_empty(scratch)) << "a refused run must leave nothing behind";
}

TEST(CudaBackend, WithoutCudaTheBackendSaysSo) {
    if (cuda_backend_compiled() && cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
    PropagatorOptions opt;
    opt.backend = BackendKind::cuda;
    EXPECT_THROW(make_propagator(opt), Error);
    opt.backend = BackendKind::automatic;
    EXPECT_EQ(make_propagator(opt)->name(), "cpu");
}

}  // namespace
}  // namespace gprfwi
