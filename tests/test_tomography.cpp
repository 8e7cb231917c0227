// The first-break picker of the traveltime tomography and its picks file:
// a delayed arrival moves the pick by the delay; the noise estimate finds
// the noise's standard deviation; a noise-free trace picked at a noisy one's
// noise carries the noisy one's bias (what the calibration on modelled
// traces relies on), and an arrival barely above the noise has no pick; picks survive the
// file and a bad line is refused with its file and line. Amplitude
// tomography: the plane-wave attenuation against the complex wavenumber; the
// amplitude misfit's gradient against central differences, and its fit exact
// at a model whose ratios it predicted; on traces modelled by the propagator
// in two homogeneous grounds, the amplitude ratios decay with the ray's
// length at the attenuation's difference, and the misfit is least at the
// conductivity the traces were modelled in.

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gprfwi/constants.hpp"
#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/tomography.hpp"
#include "gprfwi/wavelet.hpp"
#include "support.hpp"

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

TEST(Amplitudes, FirstArrivalAmplitudeIsThePeakAfterThePick) {
    std::vector<double> a = ricker(kNt, kDt, kF, 30e-9), b = ricker(kNt, kDt, kF, 55e-9);
    for (double& v : b) v *= 0.37;
    std::vector<double> later(a);  // a stronger arrival three periods after the first one is not read
    const std::vector<double> second = ricker(kNt, kDt, kF, 60e-9);
    for (std::size_t n = 0; n < later.size(); ++n) later[n] += 1.5 * second[n];
    ShotTraces t(3, kNt);
    std::copy(a.begin(), a.end(), t.receiver(0));
    std::copy(b.begin(), b.end(), t.receiver(1));
    std::copy(later.begin(), later.end(), t.receiver(2));
    const Traces traces{t};
    Picks picks = pick_first_breaks(traces, kDt, 0.0, kF);
    const Picks amplitude = first_arrival_amplitudes(traces, kDt, 0.0, kF, picks);
    EXPECT_NEAR(amplitude[0][0], 1.0, 1e-2);  // the main lobe's peak
    EXPECT_NEAR(amplitude[0][1] / amplitude[0][0], 0.37, 1e-3);
    EXPECT_NEAR(amplitude[0][2], amplitude[0][0], 1e-2 * amplitude[0][0]);
    picks[0][1] = std::nan("");
    EXPECT_TRUE(std::isnan(first_arrival_amplitudes(traces, kDt, 0.0, kF, picks)[0][1]));
}

TEST(Amplitudes, PlaneWaveAttenuationIsTheComplexWavenumbers) {
    for (const double f : {2e7, 1e8, 5e8})
        for (const double eps_r : {3.0, 9.0, 25.0})
            for (const double sigma : {1e-5, 1e-3, 1e-2, 0.1}) {
                const double omega = 2 * kPi * f;
                // k = omega sqrt(mu (eps - i sigma / omega)); a wave exp(i (k x - omega t)) decays as exp(-Im k x)
                const std::complex<double> k =
                    omega * std::sqrt(std::complex<double>(kMu0 * 1.5 * kEps0 * eps_r, -kMu0 * 1.5 * sigma / omega));
                const double alpha = plane_wave_attenuation(sigma, eps_r, 1.5, f);
                EXPECT_NEAR(alpha / std::abs(k.imag()), 1.0, 1e-10) << f << " Hz, eps_r " << eps_r << ", " << sigma;
                const double h = 1e-6 * sigma;
                const double slope = (plane_wave_attenuation(sigma + h, eps_r, 1.5, f) -
                                      plane_wave_attenuation(sigma - h, eps_r, 1.5, f)) / (2 * h);
                EXPECT_NEAR(plane_wave_attenuation_slope(sigma, eps_r, 1.5, f) / slope, 1.0, 1e-7);
            }
    // low loss: sigma Z0 sqrt(mu_r / eps_r) / 2
    const double z0 = std::sqrt(kMu0 / kEps0);
    EXPECT_NEAR(plane_wave_attenuation(1e-6, 9.0, 1.0, 1e8) / (1e-6 * z0 / 6), 1.0, 1e-9);
}

/// A crosshole-like survey on grid g: sources down x = 0.3 m, receivers down the far side.
Survey crosshole(const Grid& g, int sources, int receivers, double dt, int nt) {
    Survey s;
    s.dt = dt;
    s.nt = nt;
    for (int i = 0; i < sources; ++i) {
        Shot shot{{{{0.3, 0.3 + (g.depth_m() - 0.6) * i / std::max(1, sources - 1)}, 1.0}}, {}, ricker(nt, dt, kF, 1.5e-8)};
        for (int r = 0; r < receivers; ++r)
            shot.receivers.push_back({g.width_m() - 0.3, 0.3 + (g.depth_m() - 0.6) * r / std::max(1, receivers - 1)});
        s.shots.push_back(shot);
    }
    return s;
}

TEST(Amplitudes, MisfitGradientMatchesCentralDifferences) {
    const Grid g{61, 71, 0.05, 0.05};
    const Survey survey = crosshole(g, 4, 7, kDt, 10);
    Model calibration = Model::uniform(g, 6.0, 0.004), m = calibration;
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            const std::size_t i = static_cast<std::size_t>(iz) * g.nx + ix;
            calibration.eps_r.data()[i] = m.eps_r.data()[i] = 6.0 + 2.0 * std::exp(-(std::pow(ix - 30, 2) + std::pow(iz - 35, 2)) / 80.0);
            m.sigma.data()[i] = 0.004 + 0.01 * std::exp(-(std::pow(ix - 25, 2) + std::pow(iz - 30, 2)) / 60.0);
        }
    Picks d(4, std::vector<double>(7));
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    for (auto& shot : d)
        for (double& v : shot) v = u(rng);
    d[1][3] = std::nan("");  // left out
    std::vector<std::size_t> shots{0, 1, 2, 3};
    AmplitudeObjective objective(survey, shots, d, calibration, kF);
    const StageSpec stage;
    Array2D ge, gs;
    const double j0 = objective.evaluate(m, stage, ge, gs);
    std::vector<double> dsigma(gs.size());
    for (double& v : dsigma) v = 1e-3 * (u(rng) + 0.5);
    double slope = 0;
    for (std::size_t i = 0; i < dsigma.size(); ++i) slope += gs.data()[i] * dsigma[i];
    const double h = 1e-3;
    Model plus = m, minus = m;
    for (std::size_t i = 0; i < dsigma.size(); ++i) {
        plus.sigma.data()[i] += h * dsigma[i];
        minus.sigma.data()[i] -= h * dsigma[i];
    }
    Array2D unused_e, unused_s;
    const double central = (objective.evaluate(plus, stage, unused_e, unused_s) -
                            objective.evaluate(minus, stage, unused_e, unused_s)) / (2 * h);
    std::printf("J %.6e: central difference %.10e, gradient %.10e\n", j0, central, slope);
    EXPECT_NEAR(central / slope, 1.0, 1e-6);
    for (std::size_t i = 0; i < ge.size(); ++i) ASSERT_EQ(ge.data()[i], 0.0);  // eps_r held

    // ratios the objective predicted at m are fitted exactly there, with their source ratio
    double c = 0;
    Picks exact = objective.predicted(m, c);
    for (auto& shot : exact)
        for (double& v : shot) v += 0.25;  // a stronger observed source
    exact[1][3] = std::nan("");
    AmplitudeObjective fitted(survey, shots, exact, calibration, kF);
    double c_exact = 0;
    fitted.predicted(m, c_exact);
    EXPECT_NEAR(c_exact, c + 0.25, 1e-12);
    EXPECT_LT(fitted.evaluate(m, stage, ge, gs), 1e-24);
    EXPECT_GT(fitted.evaluate(calibration, stage, ge, gs), 1e-2);
}

TEST(Amplitudes, ModelledTracesDecayAtTheAttenuationsDifference) {
    // Two homogeneous grounds of different conductivity, the propagator's traces in each: the log ratio of
    // their first-arrival amplitudes falls along the ray at alpha - alpha_c, and the amplitude misfit of the
    // conductive ground's traces against the calibration's is least near the conductivity they came from.
    const Grid g{81, 91, 0.05, 0.05};
    const double eps_r = 6.0, sigma_c = 0.004, sigma = 0.012;
    const Survey survey = crosshole(g, 3, 9, kDt, 700);
    CpuPropagator p(test::double_options(4, 20));
    const Model calibration = Model::uniform(g, eps_r, sigma_c), conductive = Model::uniform(g, eps_r, sigma);
    const Traces tc = p.forward(calibration, survey), to = p.forward(conductive, survey);
    const Picks noise = trace_noise(to, kDt, kF);
    const Picks ac = first_arrival_amplitudes(tc, kDt, kDt, kF, pick_first_breaks(tc, kDt, kDt, kF, noise));
    const Picks ao = first_arrival_amplitudes(to, kDt, kDt, kF, pick_first_breaks(to, kDt, kDt, kF, noise));
    // least squares d = c - beta r over every trace
    Picks d(ac.size());
    double sr = 0, sd = 0, srr = 0, srd = 0, n = 0;
    for (std::size_t s = 0; s < ac.size(); ++s)
        for (std::size_t r = 0; r < ac[s].size(); ++r) {
            d[s].push_back(std::log(ao[s][r] / ac[s][r]));
            const Position a = survey.shots[s].sources[0].position, b = survey.shots[s].receivers[r];
            const double length = std::hypot(a.x - b.x, a.z - b.z);
            sr += length, sd += d[s].back(), srr += length * length, srd += length * d[s].back(), n += 1;
        }
    const double beta = -(n * srd - sr * sd) / (n * srr - sr * sr);
    const double expected = plane_wave_attenuation(sigma, eps_r, 1.0, kF) - plane_wave_attenuation(sigma_c, eps_r, 1.0, kF);
    std::printf("log amplitude ratio falls at %.4f Np/m along the ray; plane wave at %.0f MHz: %.4f Np/m\n", beta,
                kF / 1e6, expected);
    EXPECT_NEAR(beta / expected, 1.0, 0.1);

    AmplitudeObjective objective(survey, {0, 1, 2}, d, calibration, kF);
    const StageSpec stage;
    Array2D ge, gs;
    std::vector<double> misfits;
    const std::vector<double> trial{0.004, 0.008, 0.010, 0.012, 0.014, 0.016, 0.024};
    for (const double s : trial) misfits.push_back(objective.evaluate(Model::uniform(g, eps_r, s), stage, ge, gs));
    const std::size_t best = static_cast<std::size_t>(std::min_element(misfits.begin(), misfits.end()) - misfits.begin());
    std::printf("amplitude misfit least at sigma %.3f S/m (the traces' %.3f)\n", trial[best], sigma);
    EXPECT_NEAR(trial[best], sigma, 0.0021);
}

}  // namespace
}  // namespace gprfwi
