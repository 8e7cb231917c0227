// Small hand-checkable tests of the building blocks: stencil coefficients,
// material coefficients and their derivatives, CPML profiles, point weights,
// time resampling, bfloat16 storage and wavelets.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdio>
#include <map>
#include <random>

#include "gprfwi/checkpoint_schedule.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/cpml.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/material.hpp"
#include "gprfwi/model_builder.hpp"
#include "gprfwi/point_weights.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/resample.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/storage.hpp"
#include "gprfwi/wavelet.hpp"

namespace gprfwi {
namespace {

TEST(Stencil, CoefficientsAreTheTabulatedFractions) {
    EXPECT_EQ(Stencil<2>::c(1), 1.0);
    EXPECT_EQ(Stencil<4>::c(1), 9.0 / 8.0);
    EXPECT_EQ(Stencil<4>::c(2), -1.0 / 24.0);
    EXPECT_EQ(Stencil<6>::c(3), 3.0 / 640.0);
    EXPECT_EQ(Stencil<8>::c(4), -5.0 / 7168.0);
    EXPECT_DOUBLE_EQ(stencil_abs_sum(4), 7.0 / 6.0);
    EXPECT_EQ(Stencil<8>::halo, 4);
}

// sum_k c_k (2k-1)^(2m+1) = 1 for m = 0 and 0 for m = 1..halo-1: the staggered
// derivative is exact for polynomials up to degree `order`.
template <int ORDER>
void check_order_conditions() {
    for (int m = 0; m < ORDER / 2; ++m) {
        double s = 0;
        for (int k = 1; k <= ORDER / 2; ++k) s += Stencil<ORDER>::c(k) * std::pow(2 * k - 1, 2 * m + 1);
        EXPECT_NEAR(s, m == 0 ? 1.0 : 0.0, 1e-13) << "order " << ORDER << " moment " << m;
    }
}

TEST(Stencil, SatisfiesTheOrderConditions) {
    check_order_conditions<2>();
    check_order_conditions<4>();
    check_order_conditions<6>();
    check_order_conditions<8>();
    EXPECT_THROW(stencil_coefficient(5, 1), InvalidArgument);
    EXPECT_THROW(stencil_coefficient(4, 3), InvalidArgument);
}

TEST(Material, LosslessAndLossyCoefficientsByHand) {
    const double dt = 1e-11;
    const auto lossless = lossy_coefficients(4.0, 0.0, dt);
    EXPECT_EQ(lossless.ca, 1.0);
    EXPECT_DOUBLE_EQ(lossless.cb, dt / (4.0 * kEps0));
    const double f = 0.01 * dt / (2.0 * 4.0 * kEps0);  // 1e-13 / 7.08335e-11
    EXPECT_NEAR(f, 1.411762e-3, 1e-9);
    const auto lossy = lossy_coefficients(4.0, 0.01, dt);
    EXPECT_DOUBLE_EQ(lossy.ca, (1 - f) / (1 + f));
    EXPECT_DOUBLE_EQ(lossy.cb, dt / (4.0 * kEps0) / (1 + f));
    EXPECT_DOUBLE_EQ(magnetic_coefficient(2.0, dt), dt / (2.0 * kMu0));
}

TEST(Material, DerivativesMatchCentralDifferences) {
    const double dt = 2e-11;
    for (double eps_r : {1.0, 5.0, 30.0})
        for (double sigma : {0.0, 0.003, 0.5}) {
            const auto d = lossy_coefficient_derivatives(eps_r, sigma, dt);
            const double he = 1e-6 * eps_r, hs = 1e-6;
            const auto ep = lossy_coefficients(eps_r + he, sigma, dt), em = lossy_coefficients(eps_r - he, sigma, dt);
            const auto sp = lossy_coefficients(eps_r, sigma + hs, dt), sm = lossy_coefficients(eps_r, sigma - hs, dt);
            const double cb = lossy_coefficients(eps_r, sigma, dt).cb;
            EXPECT_NEAR(d.dca_deps_r, (ep.ca - em.ca) / (2 * he), 1e-8);
            EXPECT_NEAR(d.dca_dsigma, (sp.ca - sm.ca) / (2 * hs), 1e-8);
            EXPECT_NEAR(d.dcb_deps_r / cb, (ep.cb - em.cb) / (2 * he) / cb, 1e-8);
            EXPECT_NEAR(d.dcb_dsigma / cb, (sp.cb - sm.cb) / (2 * hs) / cb, 1e-8);
        }
}

TEST(Cpml, ProfileByHand) {
    CpmlOptions o;
    o.kappa_max = 2.0;
    const double h = 0.1, c = 1e8, alpha = 1e9, dt = 1e-10;
    const int w = 10, n = 40;
    const auto p = make_cpml_axis(n, h, w, w, o, c, alpha, dt);
    // interior: no stretching, no memory
    for (int i = w; i <= n - 1 - w; ++i) {
        EXPECT_EQ(p.inv_kappa_int[i], 1.0);
        EXPECT_EQ(p.a_int[i], 0.0);
    }
    // outermost node: s = L, r = 1
    const double L = w * h, d0 = -(o.power + 1) * c * std::log(o.reflection) / (2 * L);
    const double b = std::exp(-(d0 / 2.0 + 0.0) * dt);
    EXPECT_NEAR(p.inv_kappa_int[0], 0.5, 1e-15);
    EXPECT_NEAR(p.b_int[0], b, 1e-15);
    EXPECT_NEAR(p.a_int[0], d0 * (b - 1) / (2.0 * (d0 + 0.0)), 1e-15);
    // half node 0.5: r = 0.95
    const double r = 0.95, d = d0 * std::pow(r, 3), kap = 1 + std::pow(r, 3), al = alpha * (1 - r);
    const double bh = std::exp(-(d / kap + al) * dt);
    EXPECT_NEAR(p.b_half[0], bh, 1e-14);
    EXPECT_NEAR(p.a_half[0], d * (bh - 1) / (kap * (d + kap * al)), 1e-14);
    // kappa grows outwards and psi's update gain a is negative in the layer
    // (b is not monotone: alpha falls outwards while d grows); both sides match
    for (int i = 1; i < w; ++i) EXPECT_GT(p.inv_kappa_int[i], p.inv_kappa_int[i - 1]);
    for (int i = 0; i < w; ++i) EXPECT_LT(p.a_int[i], 0.0);
    for (int i = 0; i < w; ++i) EXPECT_NEAR(p.b_int[i], p.b_int[n - 1 - i], 1e-15);
    for (int i = 0; i < w; ++i) EXPECT_NEAR(p.b_half[i], p.b_half[n - 2 - i], 1e-15);
    EXPECT_EQ(p.strip_low_end, w);
    EXPECT_EQ(p.strip_high_begin, n - 1 - w);
}

TEST(PointWeights, OnANodeBothMethodsReduceToThatNode) {
    const PaddedGrid g(Grid{20, 10, 0.1, 0.2}, PmlWidths::uniform(5));
    for (auto m : {PointInterpolation::sinc, PointInterpolation::bilinear}) {
        const auto w = point_weights(g, {0.7, 0.4}, m, "test");
        ASSERT_EQ(w.size(), 1u);
        EXPECT_EQ(w[0].index, g.index(5 + 2, 5 + 7));
        EXPECT_EQ(w[0].weight, 1.0);
    }
}

TEST(PointWeights, BilinearAtACellCentreIsAQuarterEach) {
    const PaddedGrid g(Grid{20, 10, 0.1, 0.2}, PmlWidths::uniform(5));
    const auto w = point_weights(g, {0.75, 0.5}, PointInterpolation::bilinear, "test");
    ASSERT_EQ(w.size(), 4u);
    for (const auto& pw : w) EXPECT_DOUBLE_EQ(pw.weight, 0.25);
}

TEST(PointWeights, SincIsNearlyAPartitionOfUnityAndInterpolatesSmoothFields) {
    const PaddedGrid g(Grid{30, 30, 0.1, 0.1}, PmlWidths::uniform(6));
    const auto w = point_weights(g, {1.234, 1.567}, PointInterpolation::sinc, "test");
    EXPECT_EQ(w.size(), 64u);
    double sum = 0, field = 0;
    for (const auto& pw : w) {
        sum += pw.weight;
        const int iz = static_cast<int>(pw.index / g.stride) - kMaxHalo - 6;
        const int ix = static_cast<int>(pw.index % g.stride) - kMaxHalo - 6;
        field += pw.weight * std::sin(0.3 * ix) * std::cos(0.2 * iz);  // ~8 nodes per wavelength and more
    }
    EXPECT_NEAR(sum, 1.0, 2e-3);
    EXPECT_NEAR(field, std::sin(0.3 * 12.34) * std::cos(0.2 * 15.67), 5e-3);
}

TEST(PointWeights, OutsideTheModelIsAnError) {
    const PaddedGrid g(Grid{20, 10, 0.1, 0.2}, PmlWidths::uniform(5));
    EXPECT_THROW(point_weights(g, {-0.01, 0.5}, PointInterpolation::sinc, "x"), PositionOutsideModel);
    EXPECT_THROW(point_weights(g, {0.5, 1.81}, PointInterpolation::sinc, "x"), PositionOutsideModel);
    EXPECT_THROW(point_weights(g, {NAN, 0.5}, PointInterpolation::sinc, "x"), PositionOutsideModel);
    EXPECT_NO_THROW(point_weights(g, {1.9, 1.8}, PointInterpolation::sinc, "x"));
}

TEST(PointWeights, TapsBeyondANarrowCpmlAreDropped) {
    const PaddedGrid g(Grid{20, 10, 0.1, 0.1}, PmlWidths::uniform(0));
    const auto w = point_weights(g, {0.05, 0.45}, PointInterpolation::sinc, "x");
    EXPECT_EQ(w.size(), 5u * 8u);  // x taps -3..4 around 0.5: only 0..4 exist
}

TEST(Resample, RatioOneIsTheIdentity) {
    const auto up = ResampleOperator::upsample_sources(50, 1), down = ResampleOperator::downsample_receivers(50, 1);
    std::vector<double> x(50), y(50), z(50);
    for (int i = 0; i < 50; ++i) x[i] = std::sin(i * 0.7) + i;
    up.apply(x.data(), y.data());
    down.apply(x.data(), z.data());
    EXPECT_EQ(x, y);
    EXPECT_EQ(x, z);
}

TEST(Resample, TransposesAreExact) {
    std::mt19937 rng(3);
    std::normal_distribution<double> n(0, 1);
    for (int ratio : {2, 3, 7}) {
        for (const auto& op : {ResampleOperator::upsample_sources(40, ratio),
                               ResampleOperator::downsample_receivers(40, ratio)}) {
            std::vector<double> x(op.n_in()), y(op.n_out()), ax(op.n_out()), aty(op.n_in());
            for (auto& v : x) v = n(rng);
            for (auto& v : y) v = n(rng);
            op.apply(x.data(), ax.data());
            op.apply_transpose(y.data(), aty.data());
            double l = 0, r = 0;
            for (int i = 0; i < op.n_out(); ++i) l += ax[i] * y[i];
            for (int i = 0; i < op.n_in(); ++i) r += x[i] * aty[i];
            EXPECT_NEAR(l, r, 1e-13 * std::abs(l)) << "ratio " << ratio;
        }
    }
}

TEST(Resample, UpsampledRickerMatchesTheFineRicker) {
    const int nt = 200, ratio = 4;
    const double dt = 1e-10, f = 6e8;  // 16 samples per period at the peak
    const auto coarse = ricker(nt, dt, f), fine = ricker(nt * ratio, dt / ratio, f);
    std::vector<double> up(nt * ratio);
    ResampleOperator::upsample_sources(nt, ratio).apply(coarse.data(), up.data());
    double num = 0, den = 0;
    for (int m = 0; m < nt * ratio; ++m) {
        num += std::pow(up[m] - fine[m], 2);
        den += fine[m] * fine[m];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-4);
}

TEST(Bf16, TruncatesAndReadsBackAtTheIntervalsMiddle) {
    EXPECT_EQ(to_bf16(1.0f + 1.0f / 128 + 1.0f / 1024).bits, 0x3f81);  // the upper 16 bits
    EXPECT_EQ(to_bf16(1.0f).bits, 0x3f80);
    EXPECT_EQ(to_bf16(-1.99f).bits, 0xbffe);                                   // towards zero
    EXPECT_EQ(from_bf16(to_bf16(1.0f)), 1.0f + 1.0f / 256);                    // the middle of [1, 1 + 1/128)
    EXPECT_EQ(from_bf16(to_bf16(-1.0f)), -1.0f - 1.0f / 256);
    EXPECT_EQ(from_bf16(to_bf16(0.0f)), 0.0f);
    EXPECT_TRUE(std::signbit(from_bf16(to_bf16(-0.0f))));
    EXPECT_TRUE(std::isinf(from_bf16(to_bf16(INFINITY))));
    EXPECT_TRUE(std::isinf(from_bf16(to_bf16(-INFINITY))));
    EXPECT_TRUE(std::isnan(from_bf16(to_bf16(NAN))));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1e3f, 1e3f);
    double bias = 0;
    for (int i = 0; i < 1000; ++i) {
        const float v = u(rng);
        const float e = from_bf16(to_bf16(v)) - v;
        EXPECT_LE(std::abs(e), std::abs(v) * (1.0f / 256));  // half a step of 7 mantissa bits, as rounding
        bias += e / std::abs(v);
    }
    EXPECT_LT(std::abs(bias / 1000), 3e-4);  // no bias (truncation read back as is: about -3e-3)
}

TEST(Fp8, RoundsToNearestEvenSaturatesAndRoundTrips) {
    EXPECT_EQ(to_fp8(1.0f).bits, 0x38);
    EXPECT_EQ(to_fp8(-1.0f).bits, 0xb8);
    EXPECT_EQ(from_fp8(to_fp8(448.0f)), 448.0f);
    EXPECT_EQ(from_fp8(to_fp8(1e9f)), 448.0f);                 // saturates, no infinity
    EXPECT_EQ(from_fp8(to_fp8(1.0625f)), 1.0f);                // tie -> even
    EXPECT_EQ(from_fp8(to_fp8(1.1875f)), 1.25f);               // tie -> even (up)
    EXPECT_EQ(from_fp8(to_fp8(0.0009765625f)), 0.0f);          // half the smallest subnormal -> 0
    EXPECT_EQ(from_fp8(to_fp8(0.001953125f)), 0.001953125f);   // smallest subnormal, 2^-9
    EXPECT_TRUE(std::isnan(from_fp8(to_fp8(NAN))));
    for (int b = 0; b < 256; ++b) {
        const float v = from_fp8(Fp8{static_cast<std::uint8_t>(b)});
        if (std::isnan(v) || v == 0.0f) continue;
        EXPECT_EQ(to_fp8(v).bits, b) << "code " << b;
    }
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-448.f, 448.f);
    for (int i = 0; i < 1000; ++i) {  // 3 mantissa bits: relative error at most 2^-4 in the normal range
        const float v = u(rng);
        if (std::abs(v) >= 0.015625f) {
            EXPECT_LE(std::abs(from_fp8(to_fp8(v)) - v), std::abs(v) / 16);
        }
    }
}

TEST(Wavelet, RickerPeaksAtItsDelayAndHasItsDominantFrequency) {
    const double dt = 1e-11, f = 2e8, delay = 7.5e-9;
    const auto w = ricker(2000, dt, f, delay, 2.0);
    const int peak = static_cast<int>(std::max_element(w.begin(), w.end()) - w.begin());
    EXPECT_NEAR((peak + 0.5) * dt, delay, dt);
    EXPECT_NEAR(w[peak], 2.0, 1e-3);
    EXPECT_NEAR(dominant_frequency(w, dt), f, 0.03 * f);
    // the Ricker spectrum (f/fp)^2 exp(-(f/fp)^2) is 1% of its peak at f = 2.76 fp
    EXPECT_NEAR(highest_frequency(w, dt, 0.01), 2.76 * f, 0.03 * f);
    EXPECT_THROW(ricker(10, dt, -1.0), InvalidArgument);
}

// The spectrum behind dominant_frequency and highest_frequency comes from an
// FFT (the signal folded modulo the FFT's length where it is longer): its
// answers are those of the direct sum over the same frequencies, for short
// records, long ones and ones longer than the FFT (36,000 samples).
TEST(Wavelet, SpectrumByFftMatchesTheDirectSum) {
    auto direct = [](const std::vector<double>& s, double dt) {
        const int points = static_cast<int>(std::clamp<std::size_t>(4 * s.size(), 1024, 16384));
        std::vector<double> a(static_cast<std::size_t>(points) + 1);
        for (int k = 0; k <= points; ++k) {
            std::complex<double> acc = 0, phase = 1.0;
            const std::complex<double> step = std::polar(1.0, -kPi * k / points);
            for (const double v : s) {
                acc += v * phase;
                phase *= step;
            }
            a[static_cast<std::size_t>(k)] = std::abs(acc);
        }
        const auto best = std::max_element(a.begin() + 1, a.end()) - a.begin();
        const double peak = *std::max_element(a.begin(), a.end());
        int high = points;
        while (high > 0 && a[static_cast<std::size_t>(high)] < 0.01 * peak) --high;
        return std::pair{0.5 / dt * static_cast<double>(best) / points, 0.5 / dt * high / points};
    };
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0.0, 0.01);
    for (const int nt : {300, 2500, 36000}) {
        const double dt = 1e-11;
        auto w = ricker(nt, dt, 1.7e8, 2e-8, 1.0);
        for (double& v : w) v += noise(rng);
        const auto [dominant, highest] = direct(w, dt);
        EXPECT_DOUBLE_EQ(dominant_frequency(w, dt), dominant) << nt << " samples";
        EXPECT_DOUBLE_EQ(highest_frequency(w, dt, 0.01), highest) << nt << " samples";
    }
}

TEST(TimeStepping, SubStepsWhenDtExceedsTheLimit) {
    const Model m = Model::uniform(Grid{10, 10, 0.01, 0.02}, 4.0, 0.0);
    const double v = speed_of_light() / 2.0;
    const double limit = 1.0 / (v * std::sqrt(1e4 + 2500.0) * (7.0 / 6.0));
    Survey s;
    s.nt = 100;
    s.dt = limit;
    auto t = plan_time_stepping(m, s, 4, true);
    EXPECT_NEAR(t.dt_max, limit, 1e-12 * limit);
    EXPECT_EQ(t.ratio, 1);
    s.dt = 2.5 * limit;
    t = plan_time_stepping(m, s, 4, true);
    EXPECT_EQ(t.ratio, 3);
    EXPECT_EQ(t.nt_internal, 300);
    EXPECT_DOUBLE_EQ(t.dt_internal, s.dt / 3);
}

// A kernel far longer than the lines (a smoothing length the memory of a
// kernel stored whole could not hold) costs no more than the line: its mass
// past the ends is worked out in closed form. Past about 2^18 nodes it
// switches from the term-by-term sum to the closed form, and the two agree
// across the switch; at 1e30 nodes, extended edges give each line the mean
// of its end values, and zero edges give nothing.
TEST(Smoothing, AKernelFarLongerThanTheLineNeedsOnlyTheLine) {
    const int nz = 6, nx = 9;
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    Array2D a(nz, nx);
    for (double& v : a.values()) v = u(rng);
    // three lengths a node apart, the last past the switch: the closed form
    // continues the summed results' trend (their second difference is the
    // closed form's error and the rounding of 2^20 terms summed one by one,
    // about 1e-13; the trend itself is 4e-11 a node)
    const double switch_s = (1 << 20) / 4.0;  // 4 s terms past which the closed form takes over
    Array2D before = a, summed = a, closed = a;
    smooth_gaussian(before, switch_s - 1, switch_s - 1, SmoothingEdges::extend);
    smooth_gaussian(summed, switch_s, switch_s, SmoothingEdges::extend);
    smooth_gaussian(closed, switch_s + 1, switch_s + 1, SmoothingEdges::extend);
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(closed.data()[i] - summed.data()[i], summed.data()[i] - before.data()[i], 1e-12) << "node " << i;

    Array2D ends(nz, nx), got = a, zero = a;
    for (int iz = 0; iz < nz; ++iz)
        for (int ix = 0; ix < nx; ++ix) ends(iz, ix) = 0.5 * (a(iz, 0) + a(iz, nx - 1));
    Array2D expected(nz, nx);
    for (int iz = 0; iz < nz; ++iz)
        for (int ix = 0; ix < nx; ++ix) expected(iz, ix) = 0.5 * (ends(0, ix) + ends(nz - 1, ix));
    smooth_gaussian(got, 1e30, 1e30, SmoothingEdges::extend);
    smooth_gaussian(zero, 1e30, 1e30, SmoothingEdges::zero);
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_NEAR(got.data()[i], expected.data()[i], 1e-12) << "node " << i;
        EXPECT_NEAR(zero.data()[i], 0.0, 1e-12) << "node " << i;
    }
}

}  // namespace
}  // namespace gprfwi

namespace gprfwi {
namespace {

/// Runs a schedule on paper: every reverse comes in order nt-1 .. 0 with the
/// current state at its step, slots hold what is restored from them, and no
/// more than `slots` are used.
long long simulate(const std::vector<CheckpointAction>& schedule, int nt, int slots) {
    int cur = 0, next_reverse = nt - 1;
    bool spent = false;
    std::map<int, int> slot_step;
    long long steps = 0;
    for (const CheckpointAction& a : schedule) {
        switch (a.kind) {
        case CheckpointAction::advance:
            EXPECT_FALSE(spent);
            EXPECT_GE(a.step, cur);
            steps += a.step - cur;
            cur = a.step;
            break;
        case CheckpointAction::store:
            EXPECT_FALSE(spent);
            EXPECT_GE(a.slot, 0);
            EXPECT_LT(a.slot, slots);
            slot_step[a.slot] = cur;
            break;
        case CheckpointAction::restore:
            if (a.slot < 0) {
                cur = 0;
            } else {
                EXPECT_TRUE(slot_step.count(a.slot)) << "restore of an empty slot";
                cur = slot_step[a.slot];
            }
            EXPECT_EQ(cur, a.step);
            spent = false;
            break;
        case CheckpointAction::reverse:
            EXPECT_FALSE(spent);
            EXPECT_EQ(a.step, next_reverse);
            EXPECT_EQ(cur, a.step);
            --next_reverse;
            ++steps;
            spent = true;
            break;
        }
    }
    EXPECT_EQ(next_reverse, -1) << "every step reversed once";
    return steps;
}

TEST(BinomialCheckpointing, SchedulesReverseEveryStepOnceWithinTheirSlots) {
    for (int nt : {1, 2, 3, 7, 64, 100, 1000})
        for (int slots : {0, 1, 2, 3, 5, 10, 2000}) {
            if (slots == 0 && nt > 100) continue;
            const auto schedule = binomial_schedule(nt, slots);
            const long long steps = simulate(schedule, nt, std::max(slots, 1));
            EXPECT_EQ(steps, schedule_forward_steps(schedule));
            if (slots == 0) {
                EXPECT_EQ(steps, static_cast<long long>(nt) * (nt + 1) / 2);
            }
            if (slots >= nt - 1) {
                EXPECT_EQ(steps, 2LL * nt - 1) << nt << " " << slots;
            }
        }
    // ceil(log2 nt) slots: about log2(nt)/2 extra forward runs, far from quadratic
    const int nt = 2000, slots = resolve_binomial_slots(-1, nt);
    EXPECT_EQ(slots, 11);
    const long long steps = schedule_forward_steps(binomial_schedule(nt, slots));
    std::printf("binomial schedule, %d steps, %d slots: %lld forward steps (%.2f runs)\n", nt, slots, steps,
                static_cast<double>(steps) / nt);
    EXPECT_LT(steps, static_cast<long long>(nt) * (2 + slots / 2));
}

// The reverse-time loop in each of its modes, on an engine that only counts:
// the state is the step it has reached, a slot holds the level it was given.
// Each adjoint step m comes once, from nt-1 down to 0, with Ey^m and Ey^{m+1}
// in the slots it names (none for Ey^0, the zero start), and the binomial
// mode runs as many forward steps as its schedule says.
TEST(ReverseTime, EveryAdjointStepFindsItsLevelsInEachMode) {
    for (int nt : {1, 2, 5, 64, 101})
        for (int mode = 0; mode < 7; ++mode) {
            // mode 0: every level kept; 1-3: segments of 1, 7 and 40 steps; 4-6: binomial, 0, 2 and 5 slots
            const int c = mode >= 1 && mode <= 3 ? std::array{1, 7, 40}[mode - 1] : 0;
            std::vector<CheckpointAction> schedule;
            if (mode >= 4) schedule = binomial_schedule(nt, std::array{0, 2, 5}[mode - 4]);
            SCOPED_TRACE(::testing::Message() << "nt " << nt << ", mode " << mode);
            int state = -1, next_adjoint = nt - 1;  // -1: no state yet
            long long forward_steps = 0;
            std::map<int, int> slot_level, saved;
            ReverseTimeSteps steps;
            steps.start_from_zero = [&] { state = 0; };
            steps.advance = [&](int m) {
                EXPECT_EQ(state, m);
                state = m + 1;
                ++forward_steps;
            };
            steps.save = [&](int k) { saved[k] = state; };
            steps.load = [&](int k) {
                ASSERT_TRUE(saved.count(k));
                state = saved[k];
            };
            steps.load_segment = [&](int seg, int a) {
                EXPECT_EQ(a, seg * c);
                state = a;
                if (a > 0) slot_level[0] = a;
            };
            steps.keep = [&](int m, int k) {
                EXPECT_EQ(state, m);
                slot_level[k] = m;
            };
            steps.step_keeping = [&](int m, int k) {
                EXPECT_EQ(state, m);
                state = m + 1;
                slot_level[k] = m + 1;
                ++forward_steps;
            };
            steps.adjoint = [&](int m, int prev, int next, bool) {
                EXPECT_EQ(m, next_adjoint--);
                if (m == 0) {
                    EXPECT_EQ(prev, -1);
                } else {
                    EXPECT_EQ(slot_level.at(prev), m);
                }
                EXPECT_EQ(slot_level.at(next), m + 1);
            };
            steps.adjoint_kept = [&](int m) { EXPECT_EQ(m, next_adjoint--); };
            run_reverse_time(nt, c, mode >= 4 ? &schedule : nullptr, steps);
            EXPECT_EQ(next_adjoint, -1) << "every adjoint step once";
            if (mode >= 4) {
                EXPECT_EQ(forward_steps, schedule_forward_steps(schedule));
            }
            if (c) {
                EXPECT_EQ(forward_steps, nt);  // each step recomputed once, from the segments' states
            }
        }
}

// Gaussian smoothing against the sum written out (the kernel reaching 4
// standard deviations, edges extended or zero), also where the kernel is
// far longer than the lines: there the parts beyond the ends are summed in
// closed form, so that a long kernel costs no more than the line. The
// larger grid has several blocks of lines, the last one partial.
TEST(Smoothing, MatchesTheDirectSumWhateverTheKernelLength) {
    for (const std::pair<int, int>& shape : {std::pair{7, 9}, std::pair{70, 45}}) {
        const int nz = shape.first, nx = shape.second;  // (no structured binding: the lambda below captures them)
        std::mt19937 rng(5);
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        Array2D a(nz, nx);
        for (double& v : a.values()) v = u(rng);
        for (const double s : {0.7, 2.5, 30.0})
            for (const SmoothingEdges edges : {SmoothingEdges::extend, SmoothingEdges::zero}) {
                const int half = static_cast<int>(std::ceil(4 * s));
                std::vector<double> k(2 * half + 1);
                double sum = 0;
                for (int i = -half; i <= half; ++i) sum += k[i + half] = std::exp(-0.5 * i * i / (s * s));
                auto direct = [&](const Array2D& in, bool along_x) {
                    Array2D out(nz, nx);
                    for (int iz = 0; iz < nz; ++iz)
                        for (int ix = 0; ix < nx; ++ix) {
                            double acc = 0;
                            for (int j = -half; j <= half; ++j) {
                                int jz = iz + (along_x ? 0 : j), jx = ix + (along_x ? j : 0);
                                const bool outside = jz < 0 || jz >= nz || jx < 0 || jx >= nx;
                                if (outside && edges == SmoothingEdges::zero) continue;
                                jz = std::clamp(jz, 0, nz - 1);
                                jx = std::clamp(jx, 0, nx - 1);
                                acc += k[j + half] / sum * in(jz, jx);
                            }
                            out(iz, ix) = acc;
                        }
                    return out;
                };
                const Array2D expected = direct(direct(a, true), false);
                Array2D got = a;
                smooth_gaussian(got, s, s, edges);
                for (std::size_t i = 0; i < got.size(); ++i)
                    EXPECT_NEAR(got.data()[i], expected.data()[i], 1e-13) << nz << " x " << nx << ", s = " << s << ", node " << i;
            }
    }
}

TEST(Regions, APolygonHoldsTheNodesOnItsEdges) {
    // a layer drawn to the model's edges, on the suite's 0.05 m grid: the nodes of its right
    // column (x = 100 * 0.05) and bottom row (z = 150 * 0.05) lie on its edges and belong to it
    ModelRegion layer;
    layer.kind = ModelRegion::Kind::polygon;
    layer.points = {{0.0, 3.0}, {5.0, 3.5}, {5.0, 7.5}, {0.0, 7.5}};
    const double dx = 0.05;
    for (int i = 0; i <= 100; i += 10) EXPECT_TRUE(layer.contains(i * dx, 150 * dx)) << "bottom row, x = " << i * dx;
    for (int k = 75; k <= 150; k += 5) EXPECT_TRUE(layer.contains(100 * dx, k * dx)) << "right column, z = " << k * dx;
    EXPECT_TRUE(layer.contains(0.0, 3.0));   // a vertex
    EXPECT_TRUE(layer.contains(2.5, 3.25));  // on the dipping top
    EXPECT_FALSE(layer.contains(2.5, 3.25 - 1e-6));
    EXPECT_FALSE(layer.contains(100 * dx + 1e-6, 5.0));
    EXPECT_FALSE(layer.contains(2.5, 150 * dx + 1e-6));
    EXPECT_TRUE(layer.contains(2.5, 5.0));
    // painted on a 101 x 151 grid, the last column and row take the layer's value
    Model m = Model::uniform(Grid{101, 151, dx, dx}, 5.5, 0.003);
    layer.eps_r = 8.0;
    paint_regions(m, {layer});
    EXPECT_EQ(m.eps_r(150, 100), 8.0);
    EXPECT_EQ(m.eps_r(150, 0), 8.0);
    EXPECT_EQ(m.eps_r(100, 100), 8.0);
    EXPECT_EQ(m.eps_r(50, 100), 5.5);
}

}  // namespace
}  // namespace gprfwi
