// The first-break picker of the traveltime tomography and its picks file:
// a delayed arrival moves the pick by the delay; the noise estimate finds
// the noise's standard deviation; a noise-free trace picked at a noisy one's
// noise carries the noisy one's bias (what the calibration on modelled
// traces relies on), and an arrival barely above the noise has no pick; picks survive the
// file and a bad line is refused with its file and line.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gprfwi/error.hpp"
#include "gprfwi/tomography.hpp"
#include "gprfwi/wavelet.hpp"

namespace gprfwi {
namespace {

constexpr double kDt = 1e-10, kF = 1e8;
constexpr int kNt = 1000;

ShotTraces one_trace(const std::vector<double>& x) {
    ShotTraces t(1, static_cast<int>(x.size()));
    std::copy(x.begin(), x.end(), t.receiver(0));
    return t;
}

double pick(const std::vector<double>& x, const Picks& noise = {}) {
    return pick_first_breaks(Traces{one_trace(x)}, kDt, 0.0, kF, noise)[0][0];
}

TEST(Picker, ADelayedArrivalMovesThePickByTheDelay) {
    const double a = pick(ricker(kNt, kDt, kF, 20e-9)), b = pick(ricker(kNt, kDt, kF, 23.7e-9));
    EXPECT_NEAR(b - a, 3.7e-9, 1.01 * kDt);
    // the onset, not the peak: earlier than the delay by a good part of the wavelet's half-length
    EXPECT_LT(a, 20e-9 - 0.5 / kF);
    EXPECT_TRUE(std::isnan(pick(std::vector<double>(kNt, 0.0))));  // a silent trace has no pick
}

TEST(Picker, NoiseEstimateFindsTheStandardDeviation) {
    std::mt19937 rng(3);
    std::normal_distribution<double> normal(0.0, 0.02);
    std::vector<double> x = ricker(kNt, kDt, kF, 40e-9);
    double peak = 0;
    for (double& v : x) {
        v += normal(rng);
        peak = std::max(peak, std::abs(v));
    }
    const double estimate = trace_noise(Traces{one_trace(x)}, kDt, kF)[0][0] * peak;
    EXPECT_NEAR(estimate, 0.02, 0.1 * 0.02);
}

TEST(Picker, NoiseFreeTracePickedAtTheNoiseCarriesItsBias) {
    // Arrivals of falling strength in the same noise: the picks come later as the arrival weakens. The
    // noise-free trace picked at each noisy one's noise follows them; picked at its own (none) it does not.
    std::mt19937 rng(11);
    std::normal_distribution<double> normal(0.0, 1.0);
    const std::vector<double> clean = ricker(kNt, kDt, kF, 40e-9);
    const double sigma = 0.01;
    const double own = pick(clean);
    double worst_matched = 0, worst_own = 0;
    for (const double amplitude : {1.0, 0.5, 0.3}) {
        double matched_sum = 0, own_sum = 0;
        const int realisations = 40;
        for (int i = 0; i < realisations; ++i) {
            std::vector<double> noisy(clean);
            for (double& v : noisy) v = amplitude * v + sigma * normal(rng);
            const Picks noise = trace_noise(Traces{one_trace(noisy)}, kDt, kF);
            const double observed = pick(noisy, noise);
            ASSERT_FALSE(std::isnan(observed)) << "amplitude " << amplitude << ", realisation " << i;
            matched_sum += observed - pick(clean, noise);
            own_sum += observed - own;
        }
        const double matched = matched_sum / realisations, unmatched = own_sum / realisations;
        std::printf("amplitude %.2f over noise %.2f: observed pick minus the noise-free one's, %.2f ns picked at "
                    "its noise, %.2f ns at none\n",
                    amplitude, sigma, 1e9 * matched, 1e9 * unmatched);
        worst_matched = std::max(worst_matched, std::abs(matched));
        worst_own = std::max(worst_own, std::abs(unmatched));
    }
    EXPECT_GT(worst_own, 1e-9);  // the bias the calibration must cancel is there ...
    EXPECT_LT(worst_matched, 0.1 * worst_own);  // ... and picking at the noise cancels most of it

    // an arrival at a few noise deviations has no pick, nor has the noise-free trace picked at its noise
    std::vector<double> weak(clean);
    for (double& v : weak) v = 0.04 * v + sigma * normal(rng);
    const Picks noise = trace_noise(Traces{one_trace(weak)}, kDt, kF);
    EXPECT_TRUE(std::isnan(pick(weak, noise)));
    EXPECT_TRUE(std::isnan(pick(clean, noise)));
}

TEST(PicksFile, RoundTripsAndRefusesABadLine) {
    Survey survey;
    survey.dt = kDt;
    survey.nt = kNt;
    survey.shots.resize(3);
    for (Shot& s : survey.shots) s.receivers.resize(2);
    const Picks picks{{1.25e-8, std::nan("")}, {2.5e-8, 3.125e-8}};
    const std::vector<std::size_t> shots{0, 2};
    const std::string path = ::testing::TempDir() + "picks.csv";
    {
        std::ofstream(path) << picks_csv_header() << picks_csv_rows(picks, shots);
    }
    const Picks back = read_picks_csv(path, survey, shots);
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back[0][0], picks[0][0]);
    EXPECT_TRUE(std::isnan(back[0][1]));
    EXPECT_EQ(back[1][1], picks[1][1]);

    {
        std::ofstream(path) << picks_csv_header() << "0,0,1e-8\n2,1,soon\n";
    }
    try {
        read_picks_csv(path, survey, shots);
        FAIL() << "a time that is not a number was read";
    } catch (const InputFileError& e) {
        EXPECT_NE(std::string(e.what()).find(path + ":4"), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
}

}  // namespace
}  // namespace gprfwi
