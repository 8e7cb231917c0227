// The background scan (background_scan.hpp): on analytic misfits it finds the
// global minimum over the bounds past a local one, to its tolerance, leaves
// the mask alone and clamps to the bounds; on a surface survey modelled by
// the CPU propagator it finds the ground's permittivity from a wrong start;
// in a campaign it runs once, before the first stage, and writes scan.csv and
// scan.h5. A fresh campaign measures the observed traces' level against its
// start's and warns where they differ by more than kAmplitudeWarnFactor.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gprfwi/background_scan.hpp"
#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/wavelet.hpp"
#include "petsc_environment.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

const auto* const kPetsc = ::testing::AddGlobalTestEnvironment(new test::PetscEnvironment);

/// Air above the ground at z = 0.24 m, masked.
InversionSpec air_masked_spec() {
    InversionSpec s;
    s.eps_r_min = 1.0;
    s.eps_r_max = 40.0;
    s.sigma_min = 1e-4;
    s.sigma_max = 0.2;
    ModelRegion air;
    air.kind = ModelRegion::Kind::rectangle;
    air.from = {-1.0, -1.0};
    air.to = {100.0, 0.22};  // (the ground starts at z = 0.24)
    s.mask = {air};
    StageSpec stage;
    stage.name = "all";
    stage.invert_eps_r = stage.invert_sigma = true;
    stage.iterations = 1;
    s.stages = {stage};
    s.save_models = false;
    return s;
}

Model air_over_ground(const Grid& g, double eps_r, double sigma) {
    Model m = Model::uniform(g, eps_r, sigma);
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix)
            if (iz * g.dz < 0.24) m.eps_r(iz, ix) = 1.0, m.sigma(iz, ix) = 0.0;
    return m;
}

/// The median eps_r of the ground (rows below the air).
double ground_eps_r(const Model& m) { return m.eps_r(m.grid.nz - 1, 0); }

TEST(BackgroundScan, FindsTheGlobalMinimumPastALocalOne) {
    const Grid g{12, 10, 0.05, 0.05};
    const InversionSpec spec = air_masked_spec();
    const Model start = air_over_ground(g, 7.0, 0.004);
    // in ln eps_r: a shallow minimum at 7.7 next to the start, the deepest at 4.9
    auto j = [](double eps) {
        const double u = std::log(eps);
        return 1.0 - 0.6 * std::exp(-std::pow((u - std::log(4.9)) / 0.08, 2)) -
               0.3 * std::exp(-std::pow((u - std::log(7.7)) / 0.08, 2));
    };
    int calls = 0;
    InversionSpec spec_eps = spec;
    spec_eps.scan.eps_r = true;
    spec_eps.scan.eps_r_step = std::log(1.25);
    const ScanResult r = scan_background(start, spec_eps, [&](const Model& m, const char*) {
        ++calls;
        return j(ground_eps_r(m));
    });
    EXPECT_NEAR(ground_eps_r(r.model), 4.9, 4.9 * kScanToleranceEpsR);
    EXPECT_NEAR(r.eps_r_factor, 4.9 / 7.0, 0.7 * kScanToleranceEpsR);
    EXPECT_EQ(static_cast<std::size_t>(calls), r.points.size());
    EXPECT_LT(calls, 40) << "the scan should not need more forward runs than its grid and refinement";
    bool start_seen = false;
    for (const ScanPoint& p : r.points) start_seen = start_seen || p.factor == 1.0;
    EXPECT_TRUE(start_seen) << "the start itself is on the grid";
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            if (iz * g.dz < 0.24) {
                EXPECT_EQ(r.model.eps_r(iz, ix), 1.0) << "the masked air changed";
                EXPECT_EQ(r.model.sigma(iz, ix), 0.0);
            } else {
                EXPECT_DOUBLE_EQ(r.model.eps_r(iz, ix), 7.0 * r.eps_r_factor);
                EXPECT_EQ(r.model.sigma(iz, ix), 0.004) << "sigma was not scanned";
            }
        }
}

TEST(BackgroundScan, ScalesStructureClampsToBoundsAndScansSigma) {
    const Grid g{12, 10, 0.05, 0.05};
    InversionSpec spec = air_masked_spec();
    spec.scan.eps_r = spec.scan.sigma = true;
    spec.scan.eps_r_step = std::log(1.25);
    Model start = air_over_ground(g, 8.0, 0.004);
    for (int ix = 0; ix < g.nx; ++ix) start.eps_r(g.nz - 1, ix) = 24.0;  // a wet bottom row, three times the rest
    // the best factor of eps_r is 2.5 (so the bottom row would be 60, above the bound 40); sigma's is 1/8
    auto j = [&](const Model& m, const char*) {
        return std::pow(std::log(m.eps_r(5, 3) / 20.0), 2) + 0.1 * std::pow(std::log(m.sigma(5, 3) / 0.0005), 2);
    };
    const ScanResult r = scan_background(start, spec, j);
    EXPECT_NEAR(r.eps_r_factor, 2.5, 2.5 * kScanToleranceEpsR);
    EXPECT_NEAR(r.sigma_factor, 0.125, 0.125 * kScanToleranceSigma);
    EXPECT_EQ(r.model.eps_r(g.nz - 1, 4), spec.eps_r_max) << "scaled values are clamped to the bounds";
    EXPECT_NEAR(r.model.eps_r(5, 4), 20.0, 20.0 * kScanToleranceEpsR);
    EXPECT_EQ(r.model.eps_r(1, 4), 1.0);
    int sigma_points = 0;
    for (const ScanPoint& p : r.points) sigma_points += std::string(p.parameter) == "sigma";
    EXPECT_GT(sigma_points, 5);
    const std::string csv = scan_csv(r);
    EXPECT_NE(csv.find("parameter,factor,median,misfit\n"), std::string::npos);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(r.points.size()) + 2);
}

/// A surface survey over a uniform ground, 20 cm above it: the scan with the
/// relative misfit finds the ground's permittivity from a start 40% off.
TEST(BackgroundScan, FindsTheGroundOfASurfaceSurvey) {
    const Grid g{90, 36, 0.04, 0.04};
    const Model truth = air_over_ground(g, 6.0, 0.003), start = air_over_ground(g, 8.5, 0.003);
    Survey survey;
    survey.dt = 0.9 * test::cfl_limit(g, 1.0, 4);
    survey.nt = static_cast<int>(std::ceil(40e-9 / survey.dt));
    for (int s = 0; s < 2; ++s) {
        Shot shot;
        shot.sources = {Source{{0.4 + 2.6 * s, 0.2}, 1.0}};
        for (int r = 0; r < 10; ++r) shot.receivers.push_back({0.3 + 0.3 * r, 0.2});
        shot.wavelet = ricker(survey.nt, survey.dt, 4.0e8);
        survey.shots.push_back(shot);
    }
    PropagatorOptions opt = fix_survey_wide_options(test::double_options(4, 10), start, survey);
    opt.backend = BackendKind::cpu;
    opt.precision = Precision::single;
    const Traces observed = CpuPropagator(opt).forward(truth, survey);
    DistributedRunner runner(survey, opt, 0);
    FwiObjective objective(runner, observed, MisfitKind::relative);
    InversionSpec spec = air_masked_spec();
    spec.scan.eps_r = true;
    // as a campaign's: half the dominant frequency, a step from the record's length
    spec.scan.max_frequency_hz = kScanBandOfDominant * 4.0e8;
    spec.scan.eps_r_step = 1.0 / (spec.scan.max_frequency_hz * survey.nt * survey.dt);
    StageSpec stage = spec.stages.front();
    stage.max_frequency_hz = spec.scan.max_frequency_hz;
    // the misfit alone is the gradient's, and another kind's is that kind's
    Array2D ge, gs;
    const double j = objective.misfit(start, stage);
    EXPECT_NEAR(j, objective.evaluate(start, stage, ge, gs), 1e-12 * j);
    DistributedRunner runner2(survey, opt, 0);
    FwiObjective normalized(runner2, observed, MisfitKind::normalized);
    const double jn = normalized.evaluate(start, stage, ge, gs);
    EXPECT_NEAR(objective.misfit(start, stage, MisfitKind::normalized), jn, 1e-12 * jn);
    EXPECT_NEAR(objective.misfit(start, stage), j, 1e-12 * j) << "the campaign's own misfit after another kind's";
    // as a campaign's: the amplitude-blind misfit for eps_r
    const ScanResult r = scan_background(start, spec, [&](const Model& m, const char*) {
        return objective.misfit(m, stage, MisfitKind::normalized);
    });
    EXPECT_NEAR(ground_eps_r(r.model), 6.0, 6.0 * kScanToleranceEpsR);
    EXPECT_LT(r.points.back().misfit, r.points.front().misfit);
}

/// J = sum (eps_r - 5)^2 over the ground: a campaign that scans starts its
/// first stage at the minimum, writes scan.csv and scan.h5, and a resumed run
/// does not scan again.
class Bowl final : public InversionObjective {
public:
    double evaluate(const Model& m, const StageSpec&, Array2D& ge, Array2D& gs) override {
        ++evaluations;
        ge = Array2D(m.grid.nz, m.grid.nx);
        gs = Array2D(m.grid.nz, m.grid.nx);
        double j = 0;
        for (std::size_t i = 0; i < m.eps_r.size(); ++i) {
            if (m.sigma.data()[i] == 0) continue;  // air
            const double d = m.eps_r.data()[i] - 5.0;
            j += d * d;
            ge.data()[i] = 2 * d;
        }
        return j;
    }
    int evaluations = 0;
};

TEST(BackgroundScan, RunsOnceBeforeTheFirstStage) {
    const Grid g{12, 10, 0.05, 0.05};
    InversionSpec spec = air_masked_spec();
    spec.scan.eps_r = true;
    spec.edges = EdgeRule::free;
    const Model start = air_over_ground(g, 9.0, 0.004);
    const auto dir = test::scratch_path("scan");
    std::filesystem::create_directories(dir);
    Bowl bowl;
    const InversionResult r = invert(start, spec, bowl, dir.string(), "", false);
    ASSERT_FALSE(r.history.empty());
    EXPECT_LT(r.history.front().misfit, 1.0) << "the first iteration starts at the scan's minimum (the start: 16 a node)";
    EXPECT_TRUE(std::filesystem::exists(dir / "scan.csv"));
    const Model scanned = read_model_h5((dir / "scan.h5").string(), g);
    EXPECT_NEAR(ground_eps_r(scanned), 5.0, 5.0 * kScanToleranceEpsR);
    const int first_run = bowl.evaluations;
    std::ifstream csv(dir / "scan.csv");
    const int lines = static_cast<int>(std::count(std::istreambuf_iterator<char>(csv), {}, '\n'));
    EXPECT_LT(lines - 2, first_run);

    Bowl again;
    invert(start, spec, again, dir.string(), "", true);
    EXPECT_LT(again.evaluations, lines - 2) << "a resumed campaign scanned again";
}

/// Two sources in one borehole, five receivers in another 2 m away, in a
/// conductive ground (sigma 0.01 S/m: the direct wave loses about e^-1.7).
struct Crosshole {
    Grid g{60, 40, 0.05, 0.05};
    Survey survey;
    PropagatorOptions options;
    Traces observed;
    explicit Crosshole(const Model& truth) {
        survey.dt = 0.9 * test::cfl_limit(g, 1.0, 4);
        survey.nt = static_cast<int>(std::ceil(45e-9 / survey.dt));
        for (int s = 0; s < 2; ++s) {
            Shot shot;
            shot.sources = {Source{{0.4, 0.6 + 0.8 * s}, 1.0}};
            for (int r = 0; r < 5; ++r) shot.receivers.push_back({2.4, 0.4 + 0.3 * r});
            shot.wavelet = ricker(survey.nt, survey.dt, 2.0e8);
            survey.shots.push_back(shot);
        }
        options = fix_survey_wide_options(test::double_options(4, 10), truth, survey);
        options.backend = BackendKind::cpu;
        options.precision = Precision::single;
        observed = CpuPropagator(options).forward(truth, survey);
    }
};

TEST(StartAmplitudes, TheObjectiveMeasuresTheObservedLevel) {
    const Grid g{60, 40, 0.05, 0.05};
    const Model truth = Model::uniform(g, 6.0, 0.01);
    Crosshole c(truth);
    DistributedRunner runner(c.survey, c.options, 0);
    FwiObjective objective(runner, c.observed, MisfitKind::relative);
    const AmplitudeRatio same = objective.amplitude_ratio(truth);
    EXPECT_EQ(same.traces, 10);
    EXPECT_NEAR(same.ratio, 1.0, 1e-12) << "the true model's own traces";
    // a start whose sigma is four times too low attenuates too little: the observed are weaker than its traces
    const AmplitudeRatio low = objective.amplitude_ratio(Model::uniform(g, 6.0, 0.0025));
    EXPECT_LT(low.ratio, 1 / kAmplitudeWarnFactor);
    const AmplitudeRatio high = objective.amplitude_ratio(Model::uniform(g, 6.0, 0.03));
    EXPECT_GT(high.ratio, kAmplitudeWarnFactor);
    // a sigma 20% high attenuates a little too much: stronger observed traces, within the warning's factor
    const AmplitudeRatio near = objective.amplitude_ratio(Model::uniform(g, 6.0, 0.012));
    EXPECT_GT(near.ratio, 1.0);
    EXPECT_LT(near.ratio, kAmplitudeWarnFactor);
}

/// A flat misfit whose data are a given factor stronger than any model's.
class Level final : public InversionObjective {
public:
    explicit Level(double ratio) : ratio_(ratio) {}
    double evaluate(const Model& m, const StageSpec&, Array2D& ge, Array2D& gs) override {
        ge = Array2D(m.grid.nz, m.grid.nx);
        gs = Array2D(m.grid.nz, m.grid.nx);
        return 1.0;
    }
    AmplitudeRatio amplitude_ratio(const Model&) override {
        ++asked;
        return {ratio_, 7};
    }
    int asked = 0;

private:
    double ratio_;
};

/// A fresh campaign from a ground of 6 over `spec`, against `objective`.
InversionResult campaign(Level& objective, const InversionSpec& spec, bool resume = false) {
    const auto dir = test::scratch_path("level");
    if (!resume) std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return invert(air_over_ground(Grid{12, 10, 0.05, 0.05}, 6.0, 0.004), spec, objective, dir.string(), "", resume);
}

// A fresh campaign measures the level once, before its first stage (and
// warns where it is off: the log); a resumed one, one that fits the
// wavelet, or one that scans sigma do not.
TEST(StartAmplitudes, AFreshCampaignMeasuresTheLevelOnce) {
    InversionSpec spec = air_masked_spec();
    Level off(0.3);
    const InversionResult r = campaign(off, spec);
    EXPECT_EQ(off.asked, 1);
    EXPECT_EQ(r.start_amplitudes.ratio, 0.3);
    EXPECT_EQ(r.start_amplitudes.traces, 7);
    Level resumed(0.3);
    EXPECT_EQ(campaign(resumed, spec, true).start_amplitudes.traces, 0);
    EXPECT_EQ(resumed.asked, 0) << "a resumed campaign measured its start again";
    InversionSpec scanning = spec;
    scanning.scan.sigma = true;
    Level scanned(0.3);
    campaign(scanned, scanning);
    EXPECT_EQ(scanned.asked, 0) << "the scan fits sigma's level itself";
    spec.stages.front().project_wavelet = true;
    Level fitted(0.3);
    campaign(fitted, spec);
    EXPECT_EQ(fitted.asked, 0) << "a fitted wavelet takes up the level";
}

}  // namespace
}  // namespace gprfwi
