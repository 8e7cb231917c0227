// The inversion's parts: the misfits, the zero-phase filter and the
// regularisers pass Taylor and transpose tests; the TAO driver, on analytic
// objectives without the propagator, respects bounds, frozen parameters and
// masks, does not stop at iteration 0 on a tiny misfit, and resumes a stopped
// run without repeating or losing an iteration.

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <iterator>
#include <cmath>
#include <limits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/data_misfits.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/model_builder.hpp"
#include "gprfwi/regularization.hpp"
#include "gprfwi/wavelet.hpp"
#include "gprfwi/wavelet_projection.hpp"
#include "petsc_environment.hpp"
#include "inversion/flood.hpp"
#include "inversion/stage_checkpoint.hpp"
#include "inversion/stage_newton.hpp"
#include "inversion/stage_objective.hpp"
#include "inversion/stage_output.hpp"
#include "inversion/stage_solver.hpp"
#include "inversion/stage_regularization.hpp"
#include "inversion/stage_smoothing.hpp"
#include "inversion/stage_variables.hpp"
#include "support.hpp"

namespace gprfwi {
namespace {

const auto* const kPetsc = ::testing::AddGlobalTestEnvironment(new test::PetscEnvironment);

std::vector<double> random_vector(std::size_t n, std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> d;
    std::vector<double> v(n);
    for (double& x : v) x = d(gen);
    return v;
}

/// A stage's node weights for tests of its change of variables: every
/// `period`-th node masked (weight 0), the others in (lo, 1] from r's first
/// values.
struct NodeWeights {
    std::vector<double> weight;
    std::vector<char> masked;
};
NodeWeights node_weights(const std::vector<double>& r, std::size_t n, std::size_t period, double lo) {
    NodeWeights w{std::vector<double>(n), std::vector<char>(n)};
    for (std::size_t i = 0; i < n; ++i) {
        w.masked[i] = i % period == 0;
        w.weight[i] = w.masked[i] ? 0.0 : lo + (1 - lo) / (1 + r[i] * r[i]);
    }
    return w;
}

/// w with the model's outermost nodes masked and, where `linked`, linked to
/// their inner nodes (InversionSpec::edges, follow) in `links`.
NodeWeights edges_of(NodeWeights w, const Grid& g, bool linked, EdgeLinks& links) {
    if (!linked) return w;
    links = edge_links(InversionSpec{}, g);
    for (const auto& [e, i] : links) {
        w.masked[e] = 1;
        w.weight[e] = 0;
    }
    return w;
}

/// Slopes of |f(x + h d) - f(x) - h <g, d>| over h = 2^-2 .. 2^-6 must be ~2.
template <typename F>
void expect_taylor_second_order(F&& f, const std::vector<double>& x, const std::vector<double>& d, const char* what) {
    std::vector<double> g(x.size());
    const double f0 = f(x, g.data());
    double gd = 0;
    for (std::size_t i = 0; i < x.size(); ++i) gd += g[i] * d[i];
    ASSERT_NE(gd, 0.0) << what;
    std::vector<double> r2, scratch(x.size());
    double h = 0.25;
    for (int k = 0; k < 5; ++k, h *= 0.5) {
        std::vector<double> xh = x;
        for (std::size_t i = 0; i < x.size(); ++i) xh[i] += h * d[i];
        r2.push_back(std::abs(f(xh, scratch.data()) - f0 - h * gd));
    }
    for (std::size_t k = 1; k < r2.size(); ++k) {
        const double slope = std::log2(r2[k - 1] / r2[k]);
        std::printf("%s: r2 = %.3e, slope %.3f\n", what, r2[k], slope);
        EXPECT_NEAR(slope, 2.0, 0.15) << what << " at step " << k;
    }
}

TEST(Misfits, TraceMisfitsPassTaylorTests) {
    const std::size_t n = 300;
    std::vector<double> o(n), s(n);
    for (std::size_t i = 0; i < n; ++i) {  // two wavelets, shifted and scaled
        const double t = static_cast<double>(i);
        o[i] = std::exp(-std::pow((t - 120) / 15, 2)) * std::cos(0.3 * t);
        s[i] = 0.7 * std::exp(-std::pow((t - 131) / 17, 2)) * std::cos(0.3 * (t - 9)) + 0.01 * std::sin(0.05 * t);
    }
    const auto d = random_vector(n, 5);
    for (MisfitKind kind : {MisfitKind::l2, MisfitKind::normalized, MisfitKind::relative, MisfitKind::envelope}) {
        expect_taylor_second_order(
            [&](const std::vector<double>& x, double* g) { return trace_misfit(kind, x.data(), o.data(), n, g); }, s,
            [&] {
                std::vector<double> dd = d;
                for (double& v : dd) v *= 0.05;  // a perturbation small beside the trace
                return dd;
            }(),
            to_string(kind));
    }
    // the normalised misfit ignores amplitude; zero when the shapes agree
    std::vector<double> g(n), scaled = o;
    for (double& v : scaled) v *= 3.7;
    EXPECT_NEAR(trace_misfit(MisfitKind::normalized, scaled.data(), o.data(), n, g.data()), 0.0, 1e-14);
    EXPECT_NEAR(trace_misfit(MisfitKind::envelope, o.data(), o.data(), n, g.data()), 0.0, 1e-20);
    // the relative misfit sees amplitude (twice the observed trace: 1/2) but
    // not the trace's scale: a trace and its data scaled alike misfit alike
    std::vector<double> twice = o, s_scaled = s;
    for (double& v : twice) v *= 2;
    for (double& v : s_scaled) v *= 3.7;
    EXPECT_NEAR(trace_misfit(MisfitKind::relative, twice.data(), o.data(), n, g.data()), 0.5, 1e-14);
    EXPECT_NEAR(trace_misfit(MisfitKind::relative, s_scaled.data(), scaled.data(), n, g.data()),
                trace_misfit(MisfitKind::relative, s.data(), o.data(), n, g.data()), 1e-14);
}

// A trace that no arrival reached (here 1e-25 of the others) would weigh
// 1e50 times as much in the relative misfit, its adjoint source beyond single
// precision: its energy counts as kRelativeEnergyFloor of its gather's mean.
TEST(Misfits, RelativeMisfitBoundsTheWeightOfEmptyTraces) {
    const int nt = 200;
    ShotTraces observed(3, nt), synthetic(3, nt);
    double mean = 0;
    for (int r = 0; r < 3; ++r)
        for (int i = 0; i < nt; ++i) {
            const double t = i - 80.0 - 10 * r;
            observed.receiver(r)[i] = (r == 2 ? 1e-25 : 1.0) * std::exp(-t * t / 100);
            synthetic.receiver(r)[i] = 0.8 * std::exp(-(t - 3) * (t - 3) / 100);
            mean += observed.receiver(r)[i] * observed.receiver(r)[i] / 3;
        }
    const BandLimitedMisfit m(MisfitKind::relative, {0}, Traces{observed}, 0.0, 1e-10);
    ShotTraces adjoint;
    const double j = m.evaluate(0, synthetic, adjoint);
    std::vector<double> g(nt);
    double expected = 0;
    for (int r = 0; r < 3; ++r) {
        double oo = 0;
        for (int i = 0; i < nt; ++i) oo += observed.receiver(r)[i] * observed.receiver(r)[i];
        expected += trace_misfit(MisfitKind::relative, synthetic.receiver(r), observed.receiver(r), nt, g.data(),
                                 kRelativeEnergyFloor * mean);
        if (r < 2) {
            EXPECT_GT(oo, kRelativeEnergyFloor * mean);  // (the floor leaves these alone)
        }
    }
    EXPECT_NEAR(j, expected, 1e-12 * expected);
    double peak = 0;
    for (int r = 0; r < 3; ++r)
        for (int i = 0; i < nt; ++i) peak = std::max(peak, std::abs(adjoint.receiver(r)[i]));
    EXPECT_LT(peak, 1e4 / (kRelativeEnergyFloor * mean));
    EXPECT_TRUE(std::isfinite(static_cast<float>(peak)));
    // the third trace weighs as one of the floor's energy: 1/2 |s|^2 / floor
    double ss = 0;
    for (int i = 0; i < nt; ++i) ss += synthetic.receiver(2)[i] * synthetic.receiver(2)[i];
    EXPECT_GT(j, 0.4 * ss / (kRelativeEnergyFloor * mean));
}

TEST(Misfits, FilterAndHilbertTransposesAreExact) {
    const std::size_t n = 500;
    const auto x = random_vector(n, 1), y = random_vector(n, 2);
    const ZeroPhaseLowpass f(1.0e8, 4e-11);
    ASSERT_FALSE(f.identity());
    std::vector<double> fx = x, fy = y, hx(n), hy(n);
    f.apply(fx.data(), n);
    f.apply(fy.data(), n);
    hilbert_fir(x.data(), n, hx.data());
    hilbert_fir(y.data(), n, hy.data());
    double a = 0, b = 0, c = 0, e = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
        a += fx[i] * y[i];
        b += x[i] * fy[i];
        c += hx[i] * y[i];
        e += x[i] * hy[i];
        scale += std::abs(x[i] * y[i]);
    }
    EXPECT_LT(std::abs(a - b) / scale, 1e-14) << "F^T = F";
    EXPECT_LT(std::abs(c + e) / scale, 1e-14) << "H^T = -H";
    // and the filter does filter: a 20 ns sine (50 MHz) passes, a 1 GHz one does not
    const std::size_t m = 10000;  // 20 periods of 50 MHz; look far from the ends
    std::vector<double> low(m), high(m);
    for (std::size_t i = 0; i < m; ++i) {
        low[i] = std::sin(2 * M_PI * 5.0e7 * 4e-11 * static_cast<double>(i));
        high[i] = std::sin(2 * M_PI * 1.0e9 * 4e-11 * static_cast<double>(i));
    }
    f.apply(low.data(), m);
    f.apply(high.data(), m);
    for (std::size_t i : {5000u, 5130u, 5260u}) {
        EXPECT_NEAR(low[i], std::sin(2 * M_PI * 5.0e7 * 4e-11 * static_cast<double>(i)), 0.01) << i;
        EXPECT_LT(std::abs(high[i]), 1e-3) << i;
    }
}

TEST(Regularization, TikhonovAndTotalVariationPassTaylorTests) {
    const int nz = 12, nx = 15;
    const auto q0 = random_vector(static_cast<std::size_t>(nz * nx), 3), d = random_vector(q0.size(), 4);
    auto as_array = [&](const std::vector<double>& v) {
        Array2D a(nz, nx);
        std::copy(v.begin(), v.end(), a.data());
        return a;
    };
    expect_taylor_second_order(
        [&](const std::vector<double>& x, double* g) {
            Array2D grad(nz, nx);
            const double r = tikhonov(as_array(x), 0.02, 0.03, grad);
            std::copy_n(grad.data(), grad.size(), g);
            return r;
        },
        q0, d, "tikhonov");
    expect_taylor_second_order(
        [&](const std::vector<double>& x, double* g) {
            Array2D grad(nz, nx);
            const double r = total_variation(as_array(x), 0.02, 0.03, 5.0, grad);
            std::copy_n(grad.data(), grad.size(), g);
            return r;
        },
        q0, d, "total variation");
    Array2D flat(nz, nx, 2.5), grad(nz, nx);
    EXPECT_EQ(tikhonov(flat, 0.02, 0.03, grad), 0.0);
}

/// The regularisers' Hessian-vector products are analytic: against central
/// differences of their gradients (the error falls as h^2), symmetric, and
/// positive semi-definite (both terms are convex).
TEST(Regularization, HessianVectorProductsAreExact) {
    const int nz = 12, nx = 15;
    const double dx = 0.02, dz = 0.03;
    const auto q0 = random_vector(static_cast<std::size_t>(nz * nx), 7);
    auto as_array = [&](const std::vector<double>& v) {
        Array2D a(nz, nx);
        std::copy(v.begin(), v.end(), a.data());
        return a;
    };
    auto dot = [](const Array2D& a, const Array2D& b) {
        double s = 0;
        for (std::size_t i = 0; i < a.size(); ++i) s += a.data()[i] * b.data()[i];
        return s;
    };
    const Array2D q = as_array(q0);
    for (const double beta : {5.0, 0.5}) {
        SCOPED_TRACE(::testing::Message() << "beta " << beta);
        auto gradient = [&](const Array2D& at) {
            Array2D g(nz, nx);
            total_variation(at, dx, dz, beta, g);
            return g;
        };
        auto product = [&](const Array2D& d) {
            Array2D hv(nz, nx);
            total_variation_hessian(q, d, dx, dz, beta, hv);
            return hv;
        };
        const Array2D v = as_array(random_vector(q0.size(), 8)), u = as_array(random_vector(q0.size(), 9));
        const Array2D hv = product(v), hu = product(u);
        const double norm = std::sqrt(dot(hv, hv));
        auto difference_error = [&](double h) {
            Array2D plus = q, minus = q;
            for (std::size_t i = 0; i < q.size(); ++i) {
                plus.data()[i] += h * v.data()[i];
                minus.data()[i] -= h * v.data()[i];
            }
            const Array2D gp = gradient(plus), gm = gradient(minus);
            double e = 0;
            for (std::size_t i = 0; i < q.size(); ++i) {
                const double d = (gp.data()[i] - gm.data()[i]) / (2 * h) - hv.data()[i];
                e += d * d;
            }
            return std::sqrt(e) / norm;
        };
        const double coarse = difference_error(1e-4), fine = difference_error(1e-5);
        EXPECT_LT(fine, 1e-8);
        EXPECT_GT(coarse / fine, 50.0) << "the difference's error falls as h^2: " << coarse << " -> " << fine;
        const double scale = std::sqrt(dot(u, u) * dot(hv, hv));
        EXPECT_LT(std::abs(dot(u, hv) - dot(hu, v)) / scale, 1e-13) << "symmetric";
        for (int seed = 10; seed < 15; ++seed) {
            const Array2D w = as_array(random_vector(q0.size(), seed));
            EXPECT_GE(dot(w, product(w)), 0.0) << "positive semi-definite, seed " << seed;
        }
        // a constant shift changes no difference: no curvature along it
        const Array2D shifted = product(as_array(std::vector<double>(q0.size(), 2.0)));
        EXPECT_EQ(dot(shifted, shifted), 0.0);
    }
    // Tikhonov's: its gradient at the direction, whatever the model
    const Array2D v = as_array(random_vector(q0.size(), 8));
    Array2D hv(nz, nx), g(nz, nx);
    tikhonov_hessian(v, dx, dz, hv);
    tikhonov(v, dx, dz, g);
    EXPECT_EQ(hv.values(), g.values());
    Array2D plus = q, minus = q, gp(nz, nx), gm(nz, nx);
    for (std::size_t i = 0; i < q.size(); ++i) {
        plus.data()[i] += 1e-3 * v.data()[i];
        minus.data()[i] -= 1e-3 * v.data()[i];
    }
    tikhonov(plus, dx, dz, gp);
    tikhonov(minus, dx, dz, gm);
    for (std::size_t i = 0; i < q.size(); ++i)
        EXPECT_NEAR((gp.data()[i] - gm.data()[i]) / 2e-3, hv.data()[i], 1e-8 * std::abs(hv.data()[i]) + 1e-6) << i;
}

/// A stage's regularisation in its optimisation variables (eps_r = s_eps w x,
/// sigma = sigma_ref exp(s_sig w x); masked nodes fixed): the gradient it adds
/// is that of its value, and its Hessian products those of the gradient
/// (central differences along a random direction, both parameters, both
/// terms, weights below 1 and masked nodes).
/// With the edges linked (they follow their inner nodes), the same.
void expect_regularization_derivatives(bool linked) {
    SCOPED_TRACE(linked ? "edges linked" : "edges as their weights say");
    const Grid g{31, 24, 0.05, 0.04};
    const std::size_t n = static_cast<std::size_t>(g.nx) * g.nz;
    InversionSpec spec;
    spec.regularize_eps_r = {0.3, 0.7, 0.5};
    spec.regularize_sigma = {0.0, 0.5, 0.2};
    const std::vector<int> params{0, 1};
    const auto r = random_vector(3 * n, 11);
    EdgeLinks links;
    const auto [weight, masked] = edges_of(node_weights(r, n, 17, 0.6), g, linked, links);
    const StageVariables v{params, weight, masked, 0.3, 0.2, 7.0, 0.004, 1e-9, 1e9, 1e-30, 1e30,  // (no bound reached)
                           linked ? &links : nullptr};
    Model base = Model::uniform(g, 7.0, 0.004);
    std::vector<double> x(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = (7.0 + 2.0 * r[n + i]) / (v.s_eps * std::max(weight[i], 1e-3));
        x[n + i] = 0.8 * r[2 * n + i] / (v.s_sig * std::max(weight[i], 1e-3));
    }
    auto model = [&](const std::vector<double>& at) {
        Model m = base;
        v.model_from_x(at.data(), m);
        return m;
    };
    const StageRegularization reg(spec);
    auto gradient = [&](const std::vector<double>& at) {
        std::vector<double> gx(2 * n, 0.0);
        reg.value(model(at), v, gx.data());
        return gx;
    };
    const std::vector<double> gx = gradient(x);
    std::vector<double> d = random_vector(2 * n, 12);
    for (std::size_t i = 0; i < n; ++i)
        if (masked[i]) d[i] = d[n + i] = 0;
    const double h = 1e-5;
    std::vector<double> plus = x, minus = x;
    for (std::size_t i = 0; i < 2 * n; ++i) {
        plus[i] += h * d[i];
        minus[i] -= h * d[i];
    }
    double gd = 0;
    for (std::size_t i = 0; i < 2 * n; ++i) gd += gx[i] * d[i];
    const double fd = (reg.value(model(plus), v, nullptr) - reg.value(model(minus), v, nullptr)) / (2 * h);
    EXPECT_NEAR(fd, gd, 1e-7 * std::abs(gd)) << "gradient along d";
    std::vector<double> hd(2 * n, 0.0);
    reg.hessian(model(x), v, d.data(), hd.data());
    const std::vector<double> gp = gradient(plus), gm = gradient(minus);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < 2 * n; ++i) {
        const double c = (gp[i] - gm[i]) / (2 * h);
        err += (c - hd[i]) * (c - hd[i]);
        norm += hd[i] * hd[i];
    }
    EXPECT_GT(norm, 0.0);
    EXPECT_LT(std::sqrt(err / norm), 1e-6) << "Hessian along d";
}

TEST(StageRegularization, GradientAndHessianAreThoseOfItsValue) {
    expect_regularization_derivatives(false);
    expect_regularization_derivatives(true);
}

/// A stage's change of variables (eps_r = s_eps w x, sigma = sigma_ref
/// exp(s_sig w x); masked nodes fixed): x from a model and back gives the
/// model; the model's direction along v, the gradient in x and the Hessian
/// in x (with the exponential's curvature) are those of central differences
/// through model_from_x, for J = sum a eps_r + b sigma + c sigma^2.
/// With the edges linked, a linked edge takes its inner node's value from x
/// (not base's), and the maps are still the derivatives.
void expect_variable_maps(bool linked) {
    SCOPED_TRACE(linked ? "edges linked" : "edges as their weights say");
    const Grid g{23, 17, 0.05, 0.04};
    const std::size_t n = static_cast<std::size_t>(g.nx) * g.nz;
    const std::vector<int> params{0, 1};
    const auto r = random_vector(6 * n, 21);
    EdgeLinks links;
    const auto [weight, masked] = edges_of(node_weights(r, n, 13, 0.5), g, linked, links);
    const StageVariables v{params, weight, masked, 0.4, 0.3, 6.0, 0.005, 1.0, 30.0, 1e-4, 0.1,
                           linked ? &links : nullptr};
    std::vector<char> follows(n, 0);
    for (const auto& [e, i] : links) follows[e] = !masked[i];
    Model m = Model::uniform(g, 6.0, 0.005), base = m;
    for (std::size_t i = 0; i < n; ++i) {
        m.eps_r.data()[i] = 6.0 + std::tanh(r[n + i]);
        m.sigma.data()[i] = 0.005 * std::exp(0.5 * std::tanh(r[2 * n + i]));
        base.eps_r.data()[i] = 3.0;
        base.sigma.data()[i] = 0.002;
    }
    std::vector<double> x(2 * n), lo(2 * n), hi(2 * n);
    for (std::size_t j = 0; j < 2 * n; ++j) v.entry_of(m, j, x[j], lo[j], hi[j]);
    Model back = Model::uniform(g, 1.0, 1.0);
    v.model_from_x(x.data(), back, &base);
    for (const auto& [e, i] : links) {
        EXPECT_EQ(back.eps_r.data()[e], back.eps_r.data()[i]) << e;
        EXPECT_EQ(back.sigma.data()[e], back.sigma.data()[i]) << e;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (masked[i]) {
            if (!follows[i]) {
                EXPECT_EQ(back.eps_r.data()[i], 3.0) << i;
                EXPECT_EQ(back.sigma.data()[i], 0.002) << i;
            }
            EXPECT_EQ(x[i], 0.0);
            continue;
        }
        EXPECT_NEAR(back.eps_r.data()[i], m.eps_r.data()[i], 1e-14 * m.eps_r.data()[i]) << i;
        EXPECT_NEAR(back.sigma.data()[i], m.sigma.data()[i], 1e-13 * m.sigma.data()[i]) << i;
        EXPECT_LT(lo[i], x[i]);
        EXPECT_LT(x[i], hi[i]);
    }
    // J = sum a eps_r + b sigma + c sigma^2 and its model-space derivatives
    Array2D a(g.nz, g.nx), b(g.nz, g.nx);
    for (std::size_t i = 0; i < n; ++i) {
        a.data()[i] = r[3 * n + i];
        b.data()[i] = 100 * r[4 * n + i];
    }
    const double c = 3000, j0 = 2.5;
    auto at = [&](const std::vector<double>& y) {
        Model t = base;
        v.model_from_x(y.data(), t, &base);
        return t;
    };
    auto objective = [&](const Model& t) {
        double j = 0;
        for (std::size_t i = 0; i < n; ++i)
            j += a.data()[i] * t.eps_r.data()[i] + b.data()[i] * t.sigma.data()[i] + c * std::pow(t.sigma.data()[i], 2);
        return j;
    };
    auto gradient = [&](const std::vector<double>& y) {
        const Model t = at(y);
        Array2D gs(g.nz, g.nx);
        for (std::size_t i = 0; i < n; ++i) gs.data()[i] = b.data()[i] + 2 * c * t.sigma.data()[i];
        std::vector<double> gx(2 * n);
        v.gradient_to_x(a, gs, t, j0, gx.data());
        return std::pair{gx, gs};
    };
    std::vector<double> d = random_vector(2 * n, 22);
    for (std::size_t i = 0; i < n; ++i)
        if (masked[i]) d[i] = d[n + i] = 0;
    const double h = 1e-5;
    std::vector<double> plus = x, minus = x;
    for (std::size_t j = 0; j < 2 * n; ++j) {
        plus[j] += h * d[j];
        minus[j] -= h * d[j];
    }
    const Model t = at(x), tp = at(plus), tm = at(minus);
    Array2D ve(g.nz, g.nx), vs(g.nz, g.nx);
    v.direction_to_model(d.data(), t, ve, vs);
    for (std::size_t i = 0; i < n; ++i) {
        EXPECT_NEAR(ve.data()[i], (tp.eps_r.data()[i] - tm.eps_r.data()[i]) / (2 * h), 1e-8) << i;
        EXPECT_NEAR(vs.data()[i], (tp.sigma.data()[i] - tm.sigma.data()[i]) / (2 * h), 1e-10) << i;
    }
    const auto [gx, gs] = gradient(x);
    double gd = 0;
    for (std::size_t j = 0; j < 2 * n; ++j) gd += gx[j] * d[j];
    EXPECT_NEAR(gd, (objective(tp) - objective(tm)) / (2 * h) / j0, 1e-7 * std::abs(gd)) << "gradient along d";
    // the model-space Hessian product along (ve, vs): 0 for eps_r, 2 c vs for sigma
    Array2D he(g.nz, g.nx), hs(g.nz, g.nx);
    for (std::size_t i = 0; i < n; ++i) hs.data()[i] = 2 * c * vs.data()[i];
    std::vector<double> hd(2 * n), gauss_newton(2 * n);
    v.hessian_to_x(he, hs, t, j0, d.data(), &gs, hd.data());
    v.hessian_to_x(he, hs, t, j0, d.data(), nullptr, gauss_newton.data());
    const auto gp = gradient(plus).first, gm = gradient(minus).first;
    double err = 0, norm = 0, gn_err = 0;
    for (std::size_t j = 0; j < 2 * n; ++j) {
        const double cd = (gp[j] - gm[j]) / (2 * h);
        err += (cd - hd[j]) * (cd - hd[j]);
        gn_err += (cd - gauss_newton[j]) * (cd - gauss_newton[j]);
        norm += hd[j] * hd[j];
    }
    EXPECT_GT(norm, 0.0);
    EXPECT_LT(std::sqrt(err / norm), 1e-7) << "Hessian along d";
    EXPECT_GT(std::sqrt(gn_err / norm), 1e-3) << "without the exponential's curvature the product is another";
}

TEST(StageVariables, MapsAreTheDerivativesOfTheModelFromX) {
    expect_variable_maps(false);
    expect_variable_maps(true);
}

/// The calibrated scales: a unit step along -df/dx moves eps_r by
/// calibration_eps_r_step * eps_ref and ln(sigma) by calibration_sigma_step
/// at the node that moves most (masked nodes, however steep, not counted);
/// scales the spec fixes are kept.
TEST(StageVariables, CalibratedScalesSetTheFirstStep) {
    const Grid g{19, 14, 0.1, 0.1};
    const std::size_t n = static_cast<std::size_t>(g.nx) * g.nz;
    const std::vector<int> params{0, 1};
    const auto r = random_vector(4 * n, 31);
    const auto [weight, masked] = node_weights(r, n, 11, 0.5);
    Model m = Model::uniform(g, 6.0, 0.005);
    Array2D ge(g.nz, g.nx), gs(g.nz, g.nx);
    for (std::size_t i = 0; i < n; ++i) {
        m.sigma.data()[i] = 0.005 * std::exp(0.3 * r[n + i]);
        ge.data()[i] = masked[i] ? 1e6 : r[2 * n + i];
        gs.data()[i] = masked[i] ? 1e9 : 300 * r[3 * n + i];
    }
    InversionSpec spec;
    const double j0 = 4.0, eps_ref = 6.5;
    const auto [s_eps, s_sig] = calibrated_scales(spec, gradient_peaks(weight, masked, ge, gs, m), j0, eps_ref);
    const StageVariables v{params, weight, masked, s_eps, s_sig, eps_ref, 0.005, 1e-9, 1e9, 1e-30, 1e30};
    std::vector<double> x(2 * n), lo(2 * n), hi(2 * n), gx(2 * n);
    for (std::size_t j = 0; j < 2 * n; ++j) v.entry_of(m, j, x[j], lo[j], hi[j]);
    v.gradient_to_x(ge, gs, m, j0, gx.data());
    std::vector<double> stepped = x;
    for (std::size_t j = 0; j < 2 * n; ++j) stepped[j] -= gx[j];
    Model after = m;
    v.model_from_x(stepped.data(), after);
    double de = 0, ds = 0;
    for (std::size_t i = 0; i < n; ++i) {
        de = std::max(de, std::abs(after.eps_r.data()[i] - m.eps_r.data()[i]));
        ds = std::max(ds, std::abs(std::log(after.sigma.data()[i] / m.sigma.data()[i])));
    }
    EXPECT_NEAR(de, spec.calibration_eps_r_step * eps_ref, 1e-12);
    EXPECT_NEAR(ds, spec.calibration_sigma_step, 1e-12);
    spec.scale_eps_r = 2.5;
    spec.scale_sigma = 0.7;
    EXPECT_EQ(calibrated_scales(spec, gradient_peaks(weight, masked, ge, gs, m), j0, eps_ref), std::pair(2.5, 0.7));
}

/// The data's sensitivity to ln sigma against eps_r / eps_ref: the ratio of
/// the weighted peaks of |sigma dJ/d sigma| and eps_ref |dJ/d eps_r| over the
/// free nodes (a masked node's, however steep, not counted), whatever the
/// misfit's scale; 0 without an eps_r gradient.
TEST(StageVariables, SigmaSensitivityComparesTheGradientsPeaks) {
    const Grid g{9, 7, 0.1, 0.1};
    const std::size_t n = static_cast<std::size_t>(g.nx) * g.nz;
    std::vector<double> weight(n, 1.0);
    std::vector<char> masked(n, 0);
    Model m = Model::uniform(g, 6.0, 0.01);
    Array2D ge(g.nz, g.nx, 0.0), gs(g.nz, g.nx, 0.0);
    ge.data()[10] = -2.0;                  // the eps_r peak, |w^2 g| = 2 x 0.25
    weight[10] = 0.5;
    ge.data()[20] = 0.4;                   // below it once weighted
    gs.data()[30] = 300.0;                 // sigma dJ/d sigma = 3
    m.sigma.data()[31] = 0.02;
    gs.data()[31] = -100.0;                // ... = -2
    masked[40] = 1;
    ge.data()[40] = 1e6;
    gs.data()[40] = 1e9;
    const double eps_ref = 7.5;
    EXPECT_NEAR(sigma_sensitivity(gradient_peaks(weight, masked, ge, gs, m), eps_ref), 3.0 / (eps_ref * 0.5), 1e-14);
    Array2D ge4 = ge, gs4 = gs;
    for (std::size_t i = 0; i < n; ++i) ge4.data()[i] *= 4, gs4.data()[i] *= 4;
    EXPECT_NEAR(sigma_sensitivity(gradient_peaks(weight, masked, ge4, gs4, m), eps_ref), 3.0 / (eps_ref * 0.5), 1e-14)
        << "a property of the data, not of the misfit's scale";
    Array2D none(g.nz, g.nx, 0.0);
    EXPECT_EQ(sigma_sensitivity(gradient_peaks(weight, masked, none, gs, m), eps_ref), 0.0);
}

/// sigma's share of the automatic total variation: all of it where the data
/// hardly see sigma (or nobody knows), less where they see it well, never
/// below the least share.
TEST(Inversion, SigmaTotalVariationFallsWithTheSensitivity) {
    EXPECT_EQ(sigma_total_variation_share(0.0), 1.0);
    EXPECT_EQ(sigma_total_variation_share(0.5 * kSigmaSensitivityReference), 1.0);
    EXPECT_EQ(sigma_total_variation_share(kSigmaSensitivityReference), 1.0);
    EXPECT_DOUBLE_EQ(sigma_total_variation_share(2 * kSigmaSensitivityReference), 0.5);
    EXPECT_LT(sigma_total_variation_share(3 * kSigmaSensitivityReference),
              sigma_total_variation_share(2 * kSigmaSensitivityReference));
    EXPECT_EQ(sigma_total_variation_share(1e6 * kSigmaSensitivityReference), kSigmaTotalVariationLeastShare);
}

/// Illumination factors: 1 at the brightest free node, sqrt((1 + a) / a) where
/// no energy arrives, falling with the energy in between; masked nodes (the
/// brightest here) neither count nor change; none without energy.
TEST(StageVariables, IlluminationFactors) {
    Array2D ill(2, 3);
    const double values[] = {4.0, 1.0, 0.0, 100.0, -1e-30, 2.0};
    std::copy(std::begin(values), std::end(values), ill.data());
    const std::vector<char> masked{0, 0, 0, 1, 0, 0};
    const double a = 0.25;
    const std::vector<double> p = illumination_factors(ill, masked, a);
    ASSERT_EQ(p.size(), 6u);
    EXPECT_DOUBLE_EQ(p[0], 1.0);
    EXPECT_DOUBLE_EQ(p[1], std::sqrt(1.25 / (0.25 + 0.25)));
    EXPECT_DOUBLE_EQ(p[2], std::sqrt(1.25 / 0.25));
    EXPECT_EQ(p[3], 1.0);
    EXPECT_DOUBLE_EQ(p[4], std::sqrt(1.25 / 0.25));  // (a rounding below zero counts as none)
    EXPECT_DOUBLE_EQ(p[5], std::sqrt(1.25 / (0.5 + 0.25)));
    Array2D dark(2, 3);
    EXPECT_TRUE(illumination_factors(dark, masked, a).empty());
}

/// A stage's update weights: sin^2(pi d / 2 r) within the taper's radius of
/// each antenna (the least where two reach; an antenna twice counts once), 0
/// in the mask and at the edges (but where edges are free), 1 elsewhere.
TEST(StageVariables, UpdateWeightsTaperMaskAndEdges) {
    const Grid g{40, 30, 0.1, 0.1};
    InversionSpec spec;
    spec.taper_radius_m = 0.25;
    spec.taper_points = {{1.0, 1.0}, {1.2, 1.0}, {1.0, 1.0}, {3.05, 2.0}};
    ModelRegion air;
    air.kind = ModelRegion::Kind::layer;
    air.top = -1;
    air.bottom = 0.35;  // rows 0-3
    spec.mask = {air};
    spec.edges = EdgeRule::fixed;
    const std::vector<double> w = update_weights(spec, g);
    ASSERT_EQ(w.size(), static_cast<std::size_t>(g.nx * g.nz));
    auto at = [&](int ix, int iz) { return w[static_cast<std::size_t>(iz) * g.nx + ix]; };
    auto taper = [&](double d) { return d < 0.25 ? std::pow(std::sin(0.5 * M_PI * d / 0.25), 2) : 1.0; };
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            double expected = 1;
            if (iz <= 3 || ix == 0 || ix == g.nx - 1 || iz == g.nz - 1) expected = 0;
            for (const Position& p : spec.taper_points)
                expected = std::min(expected, taper(std::hypot(ix * g.dx - p.x, iz * g.dz - p.z)));
            EXPECT_NEAR(at(ix, iz), expected, 1e-15) << ix << ", " << iz;
        }
    EXPECT_EQ(at(10, 10), 0.0);                 // on an antenna
    EXPECT_GT(at(11, 10), 0.0);                 // between the two antennas of row 10: the nearer's
    EXPECT_LT(at(11, 10), taper(0.1) + 1e-15);
    EXPECT_NEAR(at(30, 20), taper(0.05), 1e-15);  // an antenna between nodes
    spec.edges = EdgeRule::follow;  // (the same weights: the edges are masked, and follow)
    EXPECT_EQ(update_weights(spec, g), w);
    spec.edges = EdgeRule::free;
    spec.mask.clear();
    spec.taper_radius_m = 0;
    for (double x : update_weights(spec, g)) EXPECT_EQ(x, 1.0);
    // a radius far beyond the model (a run file may give up to 1e30 m; the columns it spans are no int)
    // covers every node, each weighted by its distance to the nearest antenna
    spec.taper_radius_m = 1e30;
    for (double x : update_weights(spec, g)) EXPECT_TRUE(x >= 0.0 && x < 1e-20) << x;
}

/// The nodes the taper alone holds are the antennas' own (not those in the
/// mask or on the edges, which stay held without it); each takes the mean of
/// its free neighbours, eps_r arithmetic and sigma geometric, never from
/// another held node, and only for the parameters asked.
TEST(StageVariables, TaperHeldNodesTakeTheirFreeNeighboursMean) {
    const Grid g{12, 10, 0.1, 0.1};
    InversionSpec spec;
    spec.taper_radius_m = 0.1;
    // on nodes (5, 5) and (6, 5), side by side; on (4, 2), below the masked air; on the edge (0, 7); in the
    // air; between nodes
    spec.taper_points = {{0.5, 0.5}, {0.6, 0.5}, {0.4, 0.2}, {0.0, 0.7}, {0.3, 0.1}, {0.85, 0.75}};
    ModelRegion air;
    air.kind = ModelRegion::Kind::layer;
    air.top = -1;
    air.bottom = 0.15;  // rows 0 and 1
    spec.mask = {air};
    const std::vector<std::size_t> held = taper_held_nodes(spec, g);
    auto node = [&](int ix, int iz) { return static_cast<std::size_t>(iz) * g.nx + ix; };
    EXPECT_EQ(held, (std::vector<std::size_t>{node(4, 2), node(5, 5), node(6, 5)}));

    Model m = Model::uniform(g, 5.0, 0.01);
    for (std::size_t i = 0; i < m.eps_r.size(); ++i) {
        m.eps_r.data()[i] = 4.0 + 0.1 * static_cast<double>(i % 7);
        m.sigma.data()[i] = 0.001 * (1.0 + static_cast<double>(i % 5));
    }
    const Model before = m;
    const std::vector<double> weight = update_weights(spec, g);
    EXPECT_EQ(fill_held_nodes(held, weight, true, true, m), 3u);
    auto e = [&](int ix, int iz) { return before.eps_r.data()[node(ix, iz)]; };
    auto ln_s = [&](int ix, int iz) { return std::log(before.sigma.data()[node(ix, iz)]); };
    // (5, 5): left, up and down; its right neighbour (6, 5) is held too
    EXPECT_NEAR(m.eps_r.data()[node(5, 5)], (e(4, 5) + e(5, 4) + e(5, 6)) / 3, 1e-14);
    EXPECT_NEAR(std::log(m.sigma.data()[node(5, 5)]), (ln_s(4, 5) + ln_s(5, 4) + ln_s(5, 6)) / 3, 1e-13);
    EXPECT_NEAR(m.eps_r.data()[node(6, 5)], (e(7, 5) + e(6, 4) + e(6, 6)) / 3, 1e-14);
    // (4, 2): the air above it is masked
    EXPECT_NEAR(m.eps_r.data()[node(4, 2)], (e(3, 2) + e(5, 2) + e(4, 3)) / 3, 1e-14);
    for (std::size_t i = 0; i < m.eps_r.size(); ++i)
        if (std::find(held.begin(), held.end(), i) == held.end()) {
            EXPECT_EQ(m.eps_r.data()[i], before.eps_r.data()[i]) << i;
            EXPECT_EQ(m.sigma.data()[i], before.sigma.data()[i]) << i;
        }
    Model sigma_only = before;
    fill_held_nodes(held, weight, false, true, sigma_only);
    EXPECT_EQ(sigma_only.eps_r.data()[node(5, 5)], before.eps_r.data()[node(5, 5)]) << "a stage of sigma alone";
    EXPECT_EQ(sigma_only.sigma.data()[node(5, 5)], m.sigma.data()[node(5, 5)]);
    spec.taper_radius_m = 0;
    EXPECT_TRUE(taper_held_nodes(spec, g).empty()) << "no taper, nothing held by it";
}

// Flooding finds each column's deepest strong band of eps_r change (its
// extremum, and its top halfway up the upper flank) and replaces the free
// nodes from the top down by a step from the value above the band, of the
// height asked in units of the extremum's contrast (within the bounds;
// sigma the extremum's), each column's step the median of its neighbours'
// within the width asked; a column whose change is small beside the others'
// is left.
TEST(Flood, StepsEachColumnBelowItsDeepestChange) {
    const Grid g{6, 20, 0.1, 0.1};
    const Model reference = Model::uniform(g, 7.0, 0.004);
    Model m = reference;
    // column 1: a positive band (rows 8-10, peak 11 at row 9) below a weaker negative one (rows 3-4)
    m.eps_r(3, 1) = 6.2, m.eps_r(4, 1) = 6.0;
    m.eps_r(8, 1) = 9.0, m.eps_r(9, 1) = 11.0, m.eps_r(10, 1) = 8.0, m.eps_r(12, 1) = 7.5;  // (row 12 under 30%)
    m.sigma(9, 1) = 0.01;
    m.eps_r(5, 2) = 3.0, m.eps_r(6, 2) = 2.0, m.eps_r(7, 2) = 4.0;  // column 2: a negative band, least at row 6
    m.eps_r(9, 3) = 7.2;                                              // column 3: a change too small to flood
    m.eps_r(5, 4) = 10.0;                                             // column 4: its lower rows are masked
    std::vector<double> weight(static_cast<std::size_t>(g.nx) * g.nz, 1.0);
    for (int iz = 15; iz < g.nz; ++iz) weight[static_cast<std::size_t>(iz) * g.nx + 4] = 0.0;
    const std::vector<FloodColumn> c = flood_columns(m, reference, weight);
    ASSERT_EQ(c.size(), 6u);
    EXPECT_EQ(c[1].extremum, 9);  // row 10's change (1) is under 30% of 4
    EXPECT_EQ(c[1].top, 8);       // row 8's change (2) is half the extremum's
    EXPECT_EQ(c[2].extremum, 6);  // up from row 7, the band's deepest, to its least
    EXPECT_EQ(c[2].top, 5);
    EXPECT_EQ(c[4].extremum, 5);
    EXPECT_EQ(c[4].top, 5);
    for (int ix : {0, 3, 5}) EXPECT_EQ(c[ix].extremum, -1) << ix;
    for (double height : {0.0, 1.0, 2.0}) {
        const Model f = flood_step(m, reference, c, weight, height, 1.0, 12.0, 0);
        for (int iz = 0; iz < g.nz; ++iz) {
            EXPECT_EQ(f.eps_r(iz, 1), iz < 8 ? m.eps_r(iz, 1) : std::min(7.0 + height * 4.0, 12.0)) << iz;
            EXPECT_EQ(f.sigma(iz, 1), iz < 8 ? m.sigma(iz, 1) : 0.01) << iz;
            EXPECT_EQ(f.eps_r(iz, 2), iz < 5 ? m.eps_r(iz, 2) : std::max(7.0 - height * 5.0, 1.0)) << iz;  // bound
            EXPECT_EQ(f.eps_r(iz, 3), m.eps_r(iz, 3)) << iz;
            EXPECT_EQ(f.eps_r(iz, 4), iz < 5 || iz >= 15 ? m.eps_r(iz, 4) : std::min(7.0 + height * 3.0, 12.0))
                << iz;
            EXPECT_EQ(f.eps_r(iz, 0), m.eps_r(iz, 0)) << iz;  // unchanged column
        }
        EXPECT_EQ(f.mu_r.values(), m.mu_r.values());
    }
    // a band at the ground's top steps from the reference's value there
    std::vector<double> air(weight.size(), 1.0);
    for (int iz = 0; iz < 5; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) air[static_cast<std::size_t>(iz) * g.nx + ix] = 0.0;
    const Model f = flood_step(m, reference, flood_columns(m, reference, air), air, 2.0, 1.0, 12.0, 0);
    EXPECT_EQ(f.eps_r(19, 4), std::min(7.0 + 2.0 * 3.0, 12.0));

    // laterally, each column's step is the median of the flooded columns' near it: one column's
    // stronger band (column 3 of 1-5; 0 and 6 unchanged) leaves no streak
    const Grid g7{7, 12, 0.1, 0.1};
    const Model flat = Model::uniform(g7, 7.0, 0.004);
    Model layered = flat;
    for (int ix = 1; ix <= 5; ++ix) layered.eps_r(4, ix) = ix == 3 ? 13.0 : 10.0;
    const std::vector<double> free7(static_cast<std::size_t>(g7.nx) * g7.nz, 1.0);
    const std::vector<FloodColumn> c7 = flood_columns(layered, flat, free7);
    const Model alone = flood_step(layered, flat, c7, free7, 1.0, 1.0, 40.0, 0);
    const Model median = flood_step(layered, flat, c7, free7, 1.0, 1.0, 40.0, 1);
    EXPECT_EQ(alone.eps_r(8, 3), 13.0);
    for (int ix = 0; ix < g7.nx; ++ix)
        for (int iz = 0; iz < g7.nz; ++iz)
            EXPECT_EQ(median.eps_r(iz, ix), ix == 0 || ix == 6 || iz < 4 ? 7.0 : 10.0) << ix << ", " << iz;

    // a survey from above: every antenna above the shallowest free row
    EXPECT_TRUE(survey_above_free_nodes({{0.1, 0.45}, {0.4, 0.3}}, air, g));
    EXPECT_FALSE(survey_above_free_nodes({{0.1, 0.45}, {0.4, 0.5}}, air, g));  // a receiver at the ground's row
    EXPECT_FALSE(survey_above_free_nodes({}, air, g));
}

// Below a near-surface layer whose own change since the start is the
// column's largest (a topsoil slower than the start), the deepest band of
// change is that layer's, while the deepest strong jump between the
// change's extrema is the reflector below it: FloodBand::jump steps from
// there, rising from the extremum above the jump. Wiggles under
// kFloodJumpReversalShare of the column's change do not split a jump; a
// side lobe below a band, which falls back short of the level the band
// rose from, is not a jump of its own.
TEST(Flood, JumpBandFindsTheReflectorBelowAChangedTopsoil) {
    const Grid g{4, 14, 0.1, 0.1};
    const Model reference = Model::uniform(g, 7.0, 0.004);
    Model m = reference;
    // column 1: topsoil 3 lower (least at row 4), then the reflector's band +0.6 at row 8
    const double topsoil[] = {0, 0, -2.0, -2.5, -3.0, -2.8, -1.5, -0.5, 0.6, 0.5, 0.2, 0, 0, 0};
    // column 2: a band of +3 at row 7 between side lobes of -1 (row 4) and -0.5 (row 9), with a wiggle
    // of 0.05 on its upper flank (rows 5 and 6)
    const double lobe[] = {0, 0, 0, -0.5, -1.0, 1.5, 1.45, 3.0, 1.0, -0.5, -0.2, 0, 0, 0};
    for (int iz = 0; iz < g.nz; ++iz) {
        m.eps_r(iz, 1) += topsoil[iz];
        m.eps_r(iz, 2) += lobe[iz];
    }
    std::vector<double> weight(static_cast<std::size_t>(g.nx) * g.nz, 1.0);
    for (int iz = 0; iz < 2; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) weight[static_cast<std::size_t>(iz) * g.nx + ix] = 0.0;  // the air
    const std::vector<FloodColumn> change = flood_columns(m, reference, weight, FloodBand::change);
    EXPECT_EQ(change[1], (FloodColumn{4, 2, -1}));  // the topsoil's band, from its top
    const std::vector<FloodColumn> jump = flood_columns(m, reference, weight, FloodBand::jump);
    EXPECT_EQ(jump[1], (FloodColumn{8, 7, 4}));  // -3 to +0.6 (rows 4 to 8); its middle, -1.2, between rows 6 and 7
    EXPECT_EQ(jump[2], (FloodColumn{7, 5, 4}));  // -1 to +3, not the side lobe's fall back to -0.5; half: 1
    for (int ix : {0, 3}) EXPECT_EQ(jump[ix].extremum, -1) << ix;
    const Model f = flood_step(m, reference, jump, weight, 2.0, 1.0, 40.0, 0);
    for (int iz = 0; iz < g.nz; ++iz) {
        EXPECT_EQ(f.eps_r(iz, 1), iz < 7 ? m.eps_r(iz, 1) : 4.0 + 2.0 * (7.6 - 4.0)) << iz;
        EXPECT_EQ(f.eps_r(iz, 2), iz < 5 ? m.eps_r(iz, 2) : 6.0 + 2.0 * (10.0 - 6.0)) << iz;
    }
    // a topsoil alone (no reflector below): its band is the jump from the reference, as the change's
    Model alone = reference;
    for (int iz = 2; iz < 8; ++iz) alone.eps_r(iz, 1) -= topsoil[iz] < -1.0 ? 2.0 : 1.0;
    EXPECT_EQ(flood_columns(alone, reference, weight, FloodBand::jump)[1].above, -1);
}

// A flood goes ahead only where its best step fits the data at most
// kFloodMisfitFactor times worse than the model it floods; never on a NaN.
TEST(Flood, GoesAheadOnlyWhereItsStepFitsTheDataNearlyAsWell) {
    EXPECT_TRUE(flood_fits(0.5, 1.0));  // a flood may fit better
    EXPECT_TRUE(flood_fits(kFloodMisfitFactor, 1.0));
    EXPECT_FALSE(flood_fits(kFloodMisfitFactor * 1.001, 1.0));
    EXPECT_FALSE(flood_fits(0.0877, 0.00983));  // a side lobe flooded (docs/inversion.md, "Flooding")
    EXPECT_FALSE(flood_fits(std::nan(""), 1.0));
    EXPECT_FALSE(flood_fits(1.0, std::nan("")));
}

/// A stage's own stopping rules: the misfit's fall over its window, counted
/// within the stage only (rows of the stage before do not count), and its
/// wall-time budget; neither when switched off.
TEST(StageStopping, MisfitWindowTimeAndPropagationBudgets) {
    StageSpec st;
    st.name = "full";
    st.min_relative_decrease = 0.01;
    st.decrease_window = 3;
    std::vector<HistoryRow> h;
    auto row = [&](const char* stage, double misfit) {
        HistoryRow r;
        r.stage = stage;
        r.misfit = misfit;
        h.push_back(r);
    };
    row("low", 10.0);
    row("full", 5.0);
    row("full", 4.99);
    row("full", 4.98);
    EXPECT_EQ(stage_stop_reason(st, h, 0, 0), "") << "the window reaches back into the stage before";
    row("full", 4.96);  // 0.8% below 5.0, three iterations back
    EXPECT_NE(stage_stop_reason(st, h, 0, 0).find("less than 0.01 over 3"), std::string::npos);
    h.back().misfit = 4.94;  // 1.2%: goes on
    EXPECT_EQ(stage_stop_reason(st, h, 0, 0), "");
    // the rule from the stage's min_iterations-th iteration on
    for (std::size_t i = 0; i < h.size(); ++i) h[i].iteration = static_cast<int>(i) - 1;  // low: -1; full: 0..3
    h.back().misfit = 4.96;
    st.min_iterations = 4;
    EXPECT_EQ(stage_stop_reason(st, h, 0, 0), "") << "the rule before the stage's min_iterations";
    st.min_iterations = 3;
    EXPECT_NE(stage_stop_reason(st, h, 0, 0).find("less than 0.01 over 3"), std::string::npos);
    st.min_iterations = 0;
    h.back().misfit = 4.94;
    st.max_seconds = 60;
    EXPECT_EQ(stage_stop_reason(st, h, 59.9, 0), "");
    EXPECT_NE(stage_stop_reason(st, h, 60.1, 0).find("wall-time budget of 60 s"), std::string::npos);
    st.max_seconds = 0;
    st.min_relative_decrease = 0;
    h.back().misfit = 5.0;  // no fall at all, but no rule
    EXPECT_EQ(stage_stop_reason(st, h, 1e9, 0), "");
    // the campaign's budget counts every stage's propagations (each stage's latest row)
    for (std::size_t i = 0; i < h.size(); ++i) h[i].propagations = 10 * static_cast<int>(i) + 2;  // low: 2; full: 12..42
    EXPECT_EQ(campaign_propagations(h), 2 + 42);
    EXPECT_EQ(stage_stop_reason(st, h, 0, 45), "");
    EXPECT_NE(stage_stop_reason(st, h, 0, 44).find("budget of 44 propagations"), std::string::npos);
    EXPECT_EQ(campaign_propagations({}), 0);
}

/// With min_relative_change, a flat misfit stops the stage only where eps_r
/// and sigma have each moved by less than that over the window (the sum of
/// its rows' changes, not counting the row the window starts from).
TEST(StageStopping, FlatMisfitGoesOnWhileTheModelMoves) {
    StageSpec st;
    st.name = "full";
    st.min_relative_decrease = 0.01;
    st.decrease_window = 3;
    st.min_relative_change = 0.003;
    std::vector<HistoryRow> h;
    for (int i = 0; i < 5; ++i) {
        HistoryRow r;
        r.stage = "full";
        r.iteration = i;
        r.misfit = 1.0;  // flat
        r.change_eps_r = r.change_sigma = 0.00099;
        h.push_back(r);
    }
    h[1].change_eps_r = 0.5;  // outside the window (rows 2..4 after row 1)
    const std::string stops = stage_stop_reason(st, h, 0, 0);
    EXPECT_NE(stops.find("moved by less than 0.003"), std::string::npos) << stops;
    h[4].change_eps_r = 0.00103;  // eps_r moved 0.00301 over the window: goes on
    EXPECT_EQ(stage_stop_reason(st, h, 0, 0), "");
    h[4].change_eps_r = 0.00099;
    h[2].change_sigma = 0.00200;  // sigma moved 0.00398
    EXPECT_EQ(stage_stop_reason(st, h, 0, 0), "");
    st.min_relative_change = 0;  // off: the misfit alone
    EXPECT_NE(stage_stop_reason(st, h, 0, 0).find("less than 0.01 over 3 iterations"), std::string::npos);
}

/// The regularisers and the updates' smoothing run on all threads; what they
/// return must not depend on how many (the suite runs its tests on one).
TEST(Regularization, ResultsDoNotDependOnTheThreadCount) {
    const int nz = 70, nx = 53;
    const auto q0 = random_vector(static_cast<std::size_t>(nz * nx), 5);
    Array2D q(nz, nx);
    std::copy(q0.begin(), q0.end(), q.data());
    auto run = [&](int threads) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        Array2D g_tik(nz, nx), g_tv(nz, nx), smooth = q;
        const double r_tik = tikhonov(q, 0.02, 0.03, g_tik);
        const double r_tv = total_variation(q, 0.02, 0.03, 5.0, g_tv);
        smooth_gaussian(smooth, 2.5, 4.0, SmoothingEdges::zero);
        omp_set_num_threads(before);
        return std::tuple{r_tik, r_tv, g_tik.values(), g_tv.values(), smooth.values()};
    };
    const auto one = run(1), three = run(3);
    EXPECT_EQ(std::get<0>(one), std::get<0>(three));
    EXPECT_EQ(std::get<1>(one), std::get<1>(three));
    EXPECT_EQ(std::get<2>(one), std::get<2>(three));
    EXPECT_EQ(std::get<3>(one), std::get<3>(three));
    EXPECT_EQ(std::get<4>(one), std::get<4>(three));
}

/// The FWI objective's gradient is that of its value (second-order Taylor
/// tests) for every misfit, and with the wavelet projected out (every
/// evaluation fits the filter of a wrong wavelet anew: the variable
/// projection's gradient is exact) for both quadratic misfits, in the full
/// band and a low band; the projection refuses the other misfits.
TEST(Misfits, FwiObjectiveOfEachMisfitPassesTaylorTests) {
    const Grid g{36, 30, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 3), truth = test::heterogeneous_model(g, 4);
    const double dt = 0.9 * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), 4);
    const Survey survey = test::random_survey(g, 2, 1, 4, 160, 4.0e8, dt, 9);
    PropagatorOptions opt = fix_survey_wide_options(test::double_options(4, 8), model, survey);
    opt.backend = BackendKind::cpu;
    const Traces observed = CpuPropagator(opt).forward(truth, survey);
    Survey unknown = survey;  // the wavelet the projection starts from
    for (Shot& s : unknown.shots) s.wavelet = ricker(survey.nt, dt, 3.2e8, 4e-9, 0.3);
    std::vector<double> dm(2 * g.nz * g.nx);
    {
        std::mt19937 gen(21);
        std::uniform_real_distribution<double> u(-1, 1);
        for (std::size_t i = 0; i < dm.size() / 2; ++i) dm[i] = 0.5 * u(gen);
        for (std::size_t i = dm.size() / 2; i < dm.size(); ++i) dm[i] = 0.002 * u(gen);
    }
    const std::size_t n = static_cast<std::size_t>(g.nz * g.nx);
    std::vector<double> x0(2 * n);
    std::copy_n(model.eps_r.data(), n, x0.begin());
    std::copy_n(model.sigma.data(), n, x0.begin() + static_cast<std::ptrdiff_t>(n));
    auto check = [&](FwiObjective& objective, const StageSpec& stage, const std::string& what) {
        auto f = [&](const std::vector<double>& x, double* grad) {
            Model m = model;
            for (std::size_t i = 0; i < n; ++i) {
                m.eps_r.data()[i] = x[i];
                m.sigma.data()[i] = x[n + i];
            }
            Array2D ge, gs;
            const double j = objective.evaluate(m, stage, ge, gs);
            std::copy_n(ge.data(), n, grad);
            std::copy_n(gs.data(), n, grad + n);
            if (stage.project_wavelet) {
                EXPECT_NEAR(objective.misfit(m, stage), j, 1e-12 * j) << "the misfit alone";
            }
            return j;
        };
        expect_taylor_second_order(f, x0, dm, what.c_str());
    };
    for (MisfitKind kind : {MisfitKind::l2, MisfitKind::normalized, MisfitKind::relative, MisfitKind::envelope}) {
        DistributedRunner runner(survey, opt, 1);  // one shot per batch
        FwiObjective objective(runner, observed, kind);
        StageSpec stage;
        stage.max_frequency_hz = 0.5 * 4.0e8;
        check(objective, stage, to_string(kind));
    }
    for (MisfitKind kind : {MisfitKind::l2, MisfitKind::relative})
        for (double band : {0.0, 0.5 * 4.0e8}) {
            DistributedRunner runner(unknown, opt, 1);
            FwiObjective objective(runner, observed, kind, 0.01);
            StageSpec stage;
            stage.max_frequency_hz = band;
            stage.project_wavelet = true;
            EXPECT_EQ(objective.evaluation_propagations(stage), 3);
            check(objective, stage, fmt::format("{}, projected wavelet, band {}", to_string(kind), band));
        }
    DistributedRunner runner(unknown, opt, 1);
    EXPECT_THROW(WaveletProjection(MisfitKind::normalized, runner.shots(), observed, survey.nt, 0.0, dt, 0.01, 10),
                 InvalidArgument);
}

/// Data of a heterogeneous model made with one wavelet, and the survey with
/// another (wrong amplitude, frequency and delay, covering the band): what
/// the wavelet's estimate and projection must undo.
struct UnknownWaveletCase {
    Grid g{40, 32, 0.04, 0.05};
    Model truth = test::heterogeneous_model(g, 4);
    double dt = 0.9 * test::cfl_limit(g, truth.min_eps_mu(), 4);
    Survey survey = test::random_survey(g, 3, 1, 5, 300, 3.0e8, dt, 9);
    std::vector<double> true_w = ricker(survey.nt, dt, 3.0e8, 6e-9, 2.0);
    PropagatorOptions opt;
    Traces observed;
    Survey wrong;
    UnknownWaveletCase() {
        for (Shot& s : survey.shots) s.wavelet = true_w;
        opt = fix_survey_wide_options(test::double_options(4, 8), truth, survey);
        opt.backend = BackendKind::cpu;
        observed = CpuPropagator(opt).forward(truth, survey);
        wrong = survey;
        for (Shot& s : wrong.shots) s.wavelet = ricker(survey.nt, dt, 3.6e8, 7.5e-9, 0.5);
    }
};

/// On the true model, the projection finds the true wavelet from a wrong one
/// (amplitude, frequency and delay) and the misfit all but vanishes; on a
/// model whose traces are the observed ones scaled, it finds the scale.
TEST(Wavelet, ProjectionFindsTheWaveletThatFits) {
    const UnknownWaveletCase c;
    const Model& truth = c.truth;
    const Survey &survey = c.survey, &wrong = c.wrong;
    const std::vector<double>& true_w = c.true_w;
    const PropagatorOptions& opt = c.opt;
    const Traces& observed = c.observed;
    const double dt = c.dt;
    // (the water level's term shrinks the filter and damps the lag combinations the traces hardly excite: the
    // wavelet's error grows with it)
    const struct {
        double water, wavelet_error, misfit_share;
    } levels[] = {{1e-7, 1e-4, 1e-6}, {1e-3, 5e-3, 1e-3}};
    for (const auto& level : levels)
        for (MisfitKind kind : {MisfitKind::l2, MisfitKind::relative}) {
            DistributedRunner runner(wrong, opt, 0);
            FwiObjective objective(runner, observed, kind, level.water);
            StageSpec stage;
            stage.project_wavelet = true;
            const std::vector<double> w = objective.projected_wavelet(truth, stage);
            ASSERT_EQ(w.size(), true_w.size());
            double d = 0, n = 0;
            for (int i = 0; i < survey.nt; ++i) {
                d += std::pow(w[i] - true_w[i], 2);
                n += true_w[i] * true_w[i];
            }
            StageSpec plain;
            const double j = objective.misfit(truth, stage), j_wrong = objective.misfit(truth, plain);
            std::printf("%s, water level %g: projected wavelet's error %.3e; misfit on the true model %.3e, with the "
                        "wrong wavelet held %.3e\n", to_string(kind), level.water, std::sqrt(d / n), j, j_wrong);
            EXPECT_LT(std::sqrt(d / n), level.wavelet_error) << to_string(kind);
            EXPECT_LT(j, level.misfit_share * j_wrong) << to_string(kind);
        }
    // traces twice the observed ones: the filter is one half (up to the water level's shrinking, 1e-12 here)
    Traces doubled = observed;
    for (auto& t : doubled)
        for (double& v : t.samples()) v *= 2;
    WaveletProjection p(MisfitKind::relative, {0, 1, 2}, observed, survey.nt, 0.0, dt, 1e-12, 10);
    auto misfit = [&](double& adjoint_norm) {
        double j = p.regularization();
        adjoint_norm = 0;
        for (std::size_t i = 0; i < doubled.size(); ++i) {
            ShotTraces adjoint;
            j += p.evaluate(i, doubled[i], adjoint);
            for (double v : adjoint.samples()) adjoint_norm += v * v;
        }
        return j;
    };
    double g0 = 0, g1 = 0;
    const double j0 = misfit(g0);  // f = 1
    p.fit(doubled);
    const double j1 = misfit(g1);
    EXPECT_NEAR(p.gain(), 0.5, 1e-10);
    const std::vector<double> half = p.filtered(true_w);
    const double peak = *std::max_element(true_w.begin(), true_w.end());
    // (lag combinations the traces hardly excite are held only by the water level: errors of its square root)
    for (int i = 0; i < survey.nt; ++i) EXPECT_NEAR(half[i], 0.5 * true_w[i], 1e-6 * peak);
    std::printf("doubled traces: misfit %.3e -> %.3e, adjoint source's norm %.3e -> %.3e\n", j0, j1, std::sqrt(g0),
                std::sqrt(g1));
    EXPECT_LT(j1, 1e-10 * j0);  // (what is left: the water level's term, 1e-12 of the traces' power)
    EXPECT_LT(std::sqrt(g1), 1e-6 * std::sqrt(g0));
}

/// On the true model, the least-squares wavelet of data made with one wavelet,
/// estimated starting from another (wrong amplitude, frequency and delay),
/// is the true one up to the water level.
TEST(Wavelet, EstimateRecoversTheTrueWavelet) {
    const UnknownWaveletCase c;
    DistributedRunner runner(c.wrong, c.opt, 0);
    FwiObjective objective(runner, c.observed, MisfitKind::l2);
    const std::vector<double> w = objective.estimate_wavelet(c.truth, 1e-3);
    double d = 0, n = 0, d0 = 0;
    for (int i = 0; i < c.survey.nt; ++i) {
        d += std::pow(w[i] - c.true_w[i], 2);
        d0 += std::pow(c.wrong.shots[0].wavelet[i] - c.true_w[i], 2);
        n += c.true_w[i] * c.true_w[i];
    }
    std::printf("wavelet error: %.3e (the starting wavelet's: %.3e)\n", std::sqrt(d / n), std::sqrt(d0 / n));
    EXPECT_LT(std::sqrt(d / n), 0.02);
    // the objective now uses it: the misfit on the true model is (almost) zero
    Array2D ge, gs;
    StageSpec full;
    const double j = objective.evaluate(c.truth, full, ge, gs);
    double energy = 0;
    for (const auto& t : c.observed)
        for (double v : t.samples()) energy += 0.5 * v * v;
    EXPECT_LT(j, 1e-3 * energy);
}

// The time loops report their progress: every 256 steps and the last, forward then adjoint.
TEST(Progress, TimeLoopsReportTheirSteps) {
    const Grid g{30, 24, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 3);
    const double dt = 0.9 * test::cfl_limit(g, model.min_eps_mu(), 4);
    const Survey survey = test::random_survey(g, 1, 1, 3, 600, 4.0e8, dt, 9);
    PropagatorOptions opt = test::double_options(4, 6);
    std::vector<std::string> seen;
    opt.progress = [&](const char* phase, int done, int total) { seen.push_back(fmt::format("{} {}/{}", phase, done, total)); };
    const Traces observed = CpuPropagator(opt).forward(model, survey);
    EXPECT_EQ(seen, (std::vector<std::string>{"forward 256/600", "forward 512/600", "forward 600/600"}));
    seen.clear();
    CpuPropagator(opt).gradient(model, survey, observed);
    EXPECT_EQ(seen, (std::vector<std::string>{"forward 256/600", "forward 512/600", "forward 600/600", "adjoint 256/600",
                                              "adjoint 512/600", "adjoint 600/600"}));
}

// ---- the TAO driver on analytic objectives ----

/// J = 1/2 sum w (eps_r - a)^2 + 1/2 sum v (ln sigma - ln b)^2, scaled by `scale`.
class Quadratic final : public InversionObjective {
public:
    Quadratic(const Grid& g, double scale) : a_(g.nz, g.nx), b_(g.nz, g.nx), scale_(scale) {
        for (int iz = 0; iz < g.nz; ++iz)
            for (int ix = 0; ix < g.nx; ++ix) {
                a_(iz, ix) = 4.0 + 0.5 * ix - 0.3 * iz;  // some nodes above the upper bound 8
                b_(iz, ix) = 0.001 * std::exp(0.1 * ix);
            }
    }
    double evaluate(const Model& m, const StageSpec&, Array2D& ge, Array2D& gs) override {
        ++evaluations;
        if (stop_after > 0 && evaluations == stop_after) request_stop();
        if (inspect) inspect(m);
        double j = 0;
        for (std::size_t i = 0; i < m.eps_r.size(); ++i) {
            const double w = 1.0 + 0.1 * static_cast<double>(i % 7);
            const double de = m.eps_r.data()[i] - a_.data()[i];
            const double sg = m.sigma.data()[i];  // 0 in air, which the objective ignores
            const double ds = sg > 0 ? std::log(sg) - std::log(b_.data()[i]) : 0.0;
            j += 0.5 * w * de * de + 0.5 * ds * ds;
            ge.data()[i] = scale_ * w * de;
            gs.data()[i] = sg > 0 ? scale_ * ds / sg : 0.0;
        }
        return scale_ * j;
    }
    /// Its exact Hessian: diagonal, w for eps_r, (1 - r)/sigma^2 for sigma
    /// with r = ln sigma - ln b (Gauss-Newton: 1/sigma^2, the square of the
    /// residual's derivative).
    int hessian_vector(const Model& m, const StageSpec&, const Array2D& ve, const Array2D& vs, HessianKind kind,
                       Array2D& he, Array2D& hs) override {
        ++products;
        he = Array2D(m.grid.nz, m.grid.nx);
        hs = Array2D(m.grid.nz, m.grid.nx);
        for (std::size_t i = 0; i < m.eps_r.size(); ++i) {
            const double w = 1.0 + 0.1 * static_cast<double>(i % 7);
            const double sg = m.sigma.data()[i];
            const double r = sg > 0 ? std::log(sg) - std::log(b_.data()[i]) : 0.0;
            he.data()[i] = scale_ * w * ve.data()[i];
            hs.data()[i] = sg > 0 ? scale_ * (kind == HessianKind::full ? 1 - r : 1.0) / (sg * sg) * vs.data()[i] : 0.0;
        }
        return 2;
    }
    const Array2D& a() const { return a_; }
    int evaluations = 0;
    int products = 0;
    int stop_after = 0;
    std::function<void(const Model&)> inspect;  // called with every model evaluated

private:
    Array2D a_, b_;
    double scale_;
};

std::string scratch_dir(const std::string& name) {
    const auto d = test::scratch_path(name);
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d.string();
}

// A CPU batch under shots_per_batch 0 holds as many shots as its share of
// the node's memory takes: the fixed arrays first, then whole shots; never
// none, never more than the rank has.
TEST(DistributedRunner, ShotsThatFitTheirShareOfMemory) {
    const auto linear = [](std::size_t n) { return 7e8 + 3e8 * static_cast<double>(n); };  // 1 GB for one shot
    EXPECT_EQ(shots_that_fit(linear, 5.7e9, 36), 16u);   // (5.7 - 0.7) / 0.3 = 16.7
    EXPECT_EQ(shots_that_fit(linear, 1e12, 36), 36u);    // all fit
    EXPECT_EQ(shots_that_fit(linear, 1.2e9, 36), 1u);    // not even two: one at a time, as small as it gets
    EXPECT_EQ(shots_that_fit(linear, 5e8, 36), 1u);
    EXPECT_EQ(shots_that_fit([](std::size_t) { return 1e9; }, 1e9, 36), 36u);  // shots that cost nothing more
    EXPECT_EQ(shots_that_fit(linear, 5.7e9, 1), 1u);
    EXPECT_EQ(shots_that_fit(linear, 5.7e9, 0), 1u);
    EXPECT_GT(host_batch_room(1), 0.0);
    EXPECT_DOUBLE_EQ(host_batch_room(4), host_batch_room(1) / 4);  // shared by the node's ranks
}

/// A checkpoint's state survives the model file: every field, written as
/// attributes and read back (what --resume starts from).
TEST(StageCheckpoint, StateRoundTripsThroughTheModelFile) {
    CheckpointState s;
    s.stage = 2;
    s.stage_done = true;
    s.iterations = 17;
    s.evaluations = 23;
    s.seconds = 123.25;
    s.stage_seconds = 45.5;
    s.j0 = 3.0625;
    s.scale_eps_r = 0.125;
    s.scale_sigma = 7.5;
    s.sigma_ref = 0.004;
    s.eps_ref = 6.25;
    s.sigma_sensitivity = 0.375;
    s.history_csv = "stage,iteration\nlow,0\n";
    const std::string file = scratch_dir("checkpoint") + "/checkpoint.h5";
    const Model m = Model::uniform(Grid{5, 4, 0.1, 0.1}, 6.0, 0.01);
    ModelFileExtras written = checkpoint_attributes(s);
    Array2D least(m.grid.nz, m.grid.nx);
    for (std::size_t i = 0; i < least.size(); ++i) least.data()[i] = 1.0 + 0.25 * static_cast<double>(i);
    written.arrays.emplace(kLeastEpsR, least);
    write_model_h5(file, m, "config", written);
    EXPECT_EQ(read_model_array_h5(file, kLeastEpsR, m.grid).values(), least.values());
    written.arrays.emplace(kLeastSigma, Array2D(m.grid.nz + 1, m.grid.nx));
    EXPECT_THROW(write_model_h5(file, m, "config", written), SizeMismatch) << "an extra dataset must fit the model";
    ModelFileExtras a = checkpoint_attributes({});
    read_model_h5(file, m.grid, &a);
    const CheckpointState r = checkpoint_state(a);
    EXPECT_EQ(r.stage, 2);
    EXPECT_TRUE(r.stage_done);
    EXPECT_EQ(r.iterations, 17);
    EXPECT_EQ(r.evaluations, 23);
    EXPECT_EQ(r.seconds, 123.25);
    EXPECT_EQ(r.stage_seconds, 45.5);
    EXPECT_EQ(r.j0, 3.0625);
    EXPECT_EQ(r.scale_eps_r, 0.125);
    EXPECT_EQ(r.scale_sigma, 7.5);
    EXPECT_EQ(r.sigma_ref, 0.004);
    EXPECT_EQ(r.eps_ref, 6.25);
    EXPECT_EQ(r.sigma_sensitivity, 0.375);
    EXPECT_EQ(r.history_csv, s.history_csv);

    // a checkpoint of an earlier version, without the sensitivity, still resumes (the sensitivity unknown)
    ModelFileExtras old = checkpoint_attributes(s);
    old.numbers.erase("sigma_sensitivity");
    write_model_h5(file, m, "config", old);
    ModelFileExtras b = checkpoint_attributes({});
    read_model_h5(file, m.grid, &b);
    EXPECT_EQ(checkpoint_state(b).sigma_sensitivity, 0.0);
    EXPECT_EQ(checkpoint_state(b).eps_ref, 6.25);
    // ... while a required number missing is an error naming it
    old.numbers.erase("eps_ref");
    write_model_h5(file, m, "config", old);
    ModelFileExtras c = checkpoint_attributes({});
    EXPECT_THROW(
        {
            try {
                read_model_h5(file, m.grid, &c);
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("eps_ref"), std::string::npos) << e.what();
                throw;
            }
        },
        Error);
}

/// A stage's files: each recorded row carries the model's errors against
/// the truth and lands in history.csv and the checkpoint, whose numbers are
/// the iteration's; the model and gradient files where asked for; the
/// preconditioner read back must fit the model.
TEST(StageOutput, WritesTheHistoryCheckpointAndIterationFiles) {
    const Grid g{6, 5, 0.1, 0.1};
    const std::string dir = scratch_dir("stage-output");
    InversionSpec spec;
    spec.save_gradients = true;
    StageSpec stage;
    stage.name = "out";
    std::vector<HistoryRow> history;
    const std::optional<Model> truth = Model::uniform(g, 5.0, 0.01);
    BackgroundWriter writer;
    double writing = 0;
    StageOutput output(spec, stage, 2, history, dir, "config text", truth, writer, writing);
    const Model m = Model::uniform(g, 5.5, 0.01);
    HistoryRow r;
    r.stage = stage.name;
    r.iteration = 1;
    r.misfit = 0.5;
    output.record(r, m);
    ASSERT_EQ(history.size(), 1u);
    EXPECT_NEAR(history[0].error_eps_r, 0.1, 1e-12);
    EXPECT_EQ(history[0].error_sigma, 0.0);
    EXPECT_EQ(history[0].change_eps_r, 0.0) << "no iterate before the first row";
    EXPECT_TRUE(output.wants_gradient(1, false));
    EXPECT_FALSE(output.wants_gradient(0, false));
    EXPECT_FALSE(output.wants_gradient(1, true));
    const Array2D ge(g.nz, g.nx, 2.0), gs(g.nz, g.nx, -3.0);
    CheckpointState state;
    state.stage = 2;
    state.iterations = 1;
    state.j0 = 4.0;
    state.sigma_sensitivity = 0.25;
    output.write({m, &ge, &gs, 0.5, state});
    writer.wait();
    EXPECT_GE(writing, 0.0);
    EXPECT_TRUE(std::filesystem::exists(dir + "/models/03_out_001.h5"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/gradients/03_out_001.h5"));
    ModelFileExtras a = checkpoint_attributes({});
    const Model back = read_model_h5(dir + "/checkpoint.h5", g, &a);
    EXPECT_EQ(back.eps_r(2, 3), 5.5);
    const CheckpointState read = checkpoint_state(a);
    EXPECT_EQ(read.stage, 2);
    EXPECT_EQ(read.iterations, 1);
    EXPECT_EQ(read.j0, 4.0);
    EXPECT_EQ(read.sigma_sensitivity, 0.25);
    const std::vector<HistoryRow> rows = parse_history(read.history_csv);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].error_eps_r, history[0].error_eps_r);
    std::ifstream csv(dir + "/history.csv");
    const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, read.history_csv);

    output.write_preconditioner(std::vector<double>(7, 1.5));
    EXPECT_EQ(output.read_preconditioner(7), std::vector<double>(7, 1.5));
    try {
        output.read_preconditioner(30);
        ADD_FAILURE() << "a preconditioner of another size must not be read";
    } catch (const SizeMismatch& e) {
        EXPECT_NE(std::string(e.what()).find(output.preconditioner_file()), std::string::npos) << e.what();
    }
}

/// Each row records how far its iteration moved the model, from the iterate
/// recorded before (or the model the stage started at), and the history
/// reads back what it wrote, with or without the errors' columns.
TEST(StageOutput, RecordsHowFarEachIterationMovedTheModel) {
    const Grid g{6, 5, 0.1, 0.1};
    for (const bool with_truth : {true, false}) {
        SCOPED_TRACE(with_truth ? "with a true model" : "without");
        InversionSpec spec;
        StageSpec stage;
        stage.name = "move";
        std::vector<HistoryRow> history;
        std::optional<Model> truth;
        if (with_truth) truth = Model::uniform(g, 5.0, 0.01);
        BackgroundWriter writer;
        double writing = 0;
        StageOutput output(spec, stage, 0, history, scratch_dir("stage-moves"), "", truth, writer, writing);
        output.start_at(Model::uniform(g, 5.0, 0.01));
        HistoryRow r;
        r.stage = stage.name;
        output.record(r, Model::uniform(g, 5.0, 0.01));
        Model m = Model::uniform(g, 5.5, 0.011);
        m.eps_r(1, 2) = 6.0;
        r.iteration = 1;
        output.record(r, m);
        r.iteration = 2;
        output.record(r, m);
        ASSERT_EQ(history.size(), 3u);
        EXPECT_EQ(history[0].change_eps_r, 0.0) << "the stage's start";
        EXPECT_DOUBLE_EQ(history[1].change_eps_r, relative_error(Model::uniform(g, 5.0, 0.01).eps_r, m.eps_r));
        EXPECT_GT(history[1].change_eps_r, 0.09);
        EXPECT_NEAR(history[1].change_sigma, 0.001 / 0.011, 1e-12);
        EXPECT_EQ(history[2].change_eps_r, 0.0) << "an iteration that did not move";
        std::string csv = history_header(with_truth);
        for (const HistoryRow& row : history) csv += history_line(row, with_truth);
        const std::vector<HistoryRow> back = parse_history(csv);
        ASSERT_EQ(back.size(), history.size());
        for (std::size_t i = 0; i < back.size(); ++i) {
            EXPECT_EQ(back[i].iteration, history[i].iteration);
            EXPECT_EQ(back[i].change_eps_r, history[i].change_eps_r);
            EXPECT_EQ(back[i].change_sigma, history[i].change_sigma);
            EXPECT_EQ(back[i].error_eps_r, history[i].error_eps_r);
        }
    }
}

/// A history written before the propagations and the model's changes were
/// columns reads with those at 0; a header without a column the rows need,
/// or a row of another length, is an error that shows the line.
TEST(StageOutput, ReadsHistoriesOfEarlierVersionsByTheirHeader) {
    const std::vector<HistoryRow> old = parse_history(
        "stage,iteration,misfit,misfit_relative,gradient_norm,step,evaluations,seconds,error_eps_r,error_sigma\n"
        "full,3,0.5,0.25,0.1,1,4,12.5,0.2,0.3\n");
    ASSERT_EQ(old.size(), 1u);
    EXPECT_EQ(old[0].stage, "full");
    EXPECT_EQ(old[0].iteration, 3);
    EXPECT_EQ(old[0].evaluations, 4);
    EXPECT_EQ(old[0].propagations, 0);
    EXPECT_EQ(old[0].seconds, 12.5);
    EXPECT_EQ(old[0].error_sigma, 0.3);
    EXPECT_EQ(old[0].change_eps_r, 0.0);
    const auto fails = [](const std::string& csv, const std::string& expected) {
        try {
            parse_history(csv);
            ADD_FAILURE() << "expected an error for " << csv;
        } catch (const InputFileError& e) {
            EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
        }
    };
    fails("stage,iteration,misfit,misfit_relative,step,evaluations,seconds\nfull,1,1,1,1,1,1\n", "no column gradient_norm");
    fails("stage,iteration,misfit,misfit_relative,gradient_norm,step,evaluations,seconds\nfull,1,1,1,1,1,1\n",
          "malformed history line: full,1,1,1,1,1,1");
}

/// A stage's evaluations: the model of the last one is not evaluated again
/// (not even after a product at it), another model is, and one with
/// illumination always is; evaluations and propagations are counted (2 an
/// evaluation, what the objective reports a product).
TEST(StageObjective, HoldsTheLastEvaluationAndCountsPropagations) {
    class Counting final : public InversionObjective {
    public:
        int calls = 0;
        double evaluate(const Model& m, const StageSpec&, Array2D& ge, Array2D& gs) override {
            ++calls;
            std::fill(ge.data(), ge.data() + ge.size(), 2 * m.eps_r(0, 0));
            std::fill(gs.data(), gs.data() + gs.size(), 3.0);
            return m.eps_r(0, 0) * m.eps_r(0, 0);
        }
        int hessian_vector(const Model&, const StageSpec&, const Array2D& ve, const Array2D&, HessianKind,
                           Array2D& he, Array2D& hs) override {
            he = ve;
            hs = Array2D(ve.nz(), ve.nx());
            return 3;
        }
    } counting;
    StageSpec stage;
    double seconds = 0;
    StageObjective eval(counting, stage, seconds);
    Model a = Model::uniform(Grid{6, 5, 0.1, 0.1}, 4.0, 0.01), b = a;
    b.sigma(2, 3) = 0.02;
    EXPECT_FALSE(eval.holds(a));
    EXPECT_EQ(eval.evaluate(a), 16.0);
    EXPECT_EQ(eval.grad_eps_r()(4, 5), 8.0);
    EXPECT_TRUE(eval.holds(a));
    EXPECT_EQ(eval.evaluate(a), 16.0);
    EXPECT_EQ(counting.calls, 1);
    Array2D ve(5, 6), vs(5, 6), he, hs;
    eval.hessian_vector(a, ve, vs, HessianKind::gauss_newton, he, hs);
    EXPECT_EQ(eval.evaluate(a), 16.0);
    EXPECT_EQ(counting.calls, 1);
    EXPECT_FALSE(eval.holds(b));
    eval.evaluate(b);  // sigma alone differs
    EXPECT_EQ(counting.calls, 2);
    Array2D illumination(5, 6);
    eval.evaluate(b, &illumination);
    EXPECT_EQ(counting.calls, 3);
    EXPECT_EQ(eval.evaluations(), 3);
    EXPECT_EQ(eval.propagations(), 3 * 2 + 3);
    EXPECT_GE(seconds, 0.0);
}

InversionSpec quadratic_spec() {
    InversionSpec s;
    s.eps_r_min = 2.0;
    s.eps_r_max = 8.0;
    s.sigma_min = 1e-4;
    s.sigma_max = 0.1;
    StageSpec first;
    first.name = "eps";
    first.invert_eps_r = true;
    first.invert_sigma = false;
    first.iterations = 6;
    StageSpec second;
    second.name = "both";
    second.invert_eps_r = second.invert_sigma = true;
    second.iterations = 25;
    s.stages = {first, second};
    s.save_models = false;
    s.edges = EdgeRule::free;  // the analytic objective has no CPML
    return s;
}

TEST(Tao, RespectsBoundsFrozenParametersAndMasks) {
    const Grid g{10, 8, 0.1, 0.1};
    Quadratic q(g, 1.0);
    InversionSpec spec = quadratic_spec();
    spec.stages.resize(1);
    spec.stages[0].iterations = 40;
    ModelRegion mask;
    mask.kind = ModelRegion::Kind::rectangle;
    mask.from = {0.0, 0.0};
    mask.to = {0.25, 0.15};  // nodes ix 0..2, iz 0..1
    spec.mask = {mask};
    const Model start = Model::uniform(g, 5.0, 0.002);
    const InversionResult r = invert(start, spec, q, scratch_dir("bounds"), "", false);
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            const double e = r.model.eps_r(iz, ix);
            EXPECT_EQ(r.model.sigma(iz, ix), 0.002) << "sigma is frozen in an eps_r stage";
            if (iz <= 1 && ix <= 2) {
                EXPECT_EQ(e, 5.0) << "masked node " << iz << "," << ix;
                continue;
            }
            EXPECT_GE(e, spec.eps_r_min);
            EXPECT_LE(e, spec.eps_r_max * (1 + 1e-12));
            const double target = std::clamp(q.a()(iz, ix), spec.eps_r_min, spec.eps_r_max);
            EXPECT_NEAR(e, target, 1e-3) << "node " << iz << "," << ix;
        }
    ASSERT_GE(r.history.size(), 2u);
    EXPECT_LT(r.history.back().misfit, r.history.front().misfit);
}

/// The smallest J of the Quadratic within the bounds (sigma's targets lie inside them).
double constrained_minimum(const Quadratic& q, const InversionSpec& s, double scale);

/// An objective without Hessian-vector products (the interface's default).
class GradientOnly final : public InversionObjective {
public:
    explicit GradientOnly(Quadratic& q) : q_(q) {}
    double evaluate(const Model& m, const StageSpec& s, Array2D& ge, Array2D& gs) override { return q_.evaluate(m, s, ge, gs); }

private:
    Quadratic& q_;
};

// Newton-type stages through TAO's bounded Newton line search and the
// objective's Hessian-vector products: the same constrained minimum as
// L-BFGS, in fewer iterations, with the propagations counted (two per
// gradient and per product here).
TEST(Tao, NewtonMethodsReachTheBoundedMinimumInFewerIterations) {
    const Grid g{10, 8, 0.1, 0.1};
    InversionSpec base = quadratic_spec();
    base.stages.erase(base.stages.begin());  // both parameters
    base.stages[0].iterations = 60;
    base.stages[0].gradient_tolerance = 1e-9;
    std::map<InversionMethod, int> iterations;
    for (const InversionMethod method : {InversionMethod::lbfgs, InversionMethod::gauss_newton, InversionMethod::newton}) {
        Quadratic q(g, 1.0);
        InversionSpec spec = base;
        spec.method = method;
        const Model start = Model::uniform(g, 5.0, 0.002);
        const InversionResult r = invert(start, spec, q, scratch_dir(std::string("newton-") + to_string(method)), "", false);
        const double j_min = constrained_minimum(q, spec, 1.0);
        const HistoryRow& last = r.history.back();
        iterations[method] = last.iteration;
        std::printf("%s: %d iterations, %d evaluations, %d products, %d propagations; misfit %.10g (minimum %.10g)\n",
                    to_string(method), last.iteration, q.evaluations, q.products, last.propagations, last.misfit, j_min);
        EXPECT_NEAR(last.misfit, j_min, 1e-6 * j_min + 1e-9) << to_string(method);
        for (std::size_t i = 0; i < q.a().size(); ++i)
            EXPECT_NEAR(r.model.eps_r.data()[i], std::clamp(q.a().data()[i], spec.eps_r_min, spec.eps_r_max), 1e-3)
                << to_string(method) << " node " << i;
        EXPECT_EQ(method == InversionMethod::lbfgs, q.products == 0) << to_string(method);
        EXPECT_EQ(last.propagations, 2 * (q.evaluations + q.products)) << to_string(method);
    }
    EXPECT_LT(iterations[InversionMethod::gauss_newton], iterations[InversionMethod::lbfgs]);
    EXPECT_LT(iterations[InversionMethod::newton], iterations[InversionMethod::lbfgs]);
}

// A Newton stage with the regularisers on (their analytic Hessian-vector
// products) reaches L-BFGS's minimum, the bounds active and the updates'
// smoothing preconditioning its CG on the free variables (never falling
// back for want of them); and an objective without Hessian-vector products
// is refused with a message.
TEST(Tao, NewtonWithRegularizationAndObjectivesWithoutHessians) {
    const Grid g{10, 8, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.stages.erase(spec.stages.begin());
    spec.stages[0].iterations = 80;
    spec.stages[0].gradient_tolerance = 1e-9;
    spec.regularize_eps_r.tikhonov = 1e-2;
    spec.regularize_sigma.tv = 1e-2;
    const Model start = Model::uniform(g, 5.0, 0.002);
    Quadratic a(g, 1.0), b(g, 1.0);
    const InversionResult lbfgs = invert(start, spec, a, scratch_dir("reg-lbfgs"), "", false);
    spec.method = InversionMethod::newton;
    const InversionResult newton = invert(start, spec, b, scratch_dir("reg-newton"), "", false);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < start.eps_r.size(); ++i) {
        diff += std::pow(newton.model.eps_r.data()[i] - lbfgs.model.eps_r.data()[i], 2);
        norm += std::pow(lbfgs.model.eps_r.data()[i], 2);
    }
    // the iterations each takes to |g| < 1e-6 (f is 1 at the start): below that, total variation's
    // differenced Hessian and its kink leave a floor near 1e-8 whose depth depends on the machine's
    // rounding, so that the stages' stopping iterations need not differ
    const auto iterations_to = [](const InversionResult& r, double level) {
        for (const HistoryRow& row : r.history)
            if (row.iteration > 0 && row.gradient_norm < level) return row.iteration;
        return std::numeric_limits<int>::max();
    };
    const int lbfgs_its = iterations_to(lbfgs, 1e-6), newton_its = iterations_to(newton, 1e-6);
    std::printf("regularised: L-BFGS %d iterations (|g| < 1e-6 after %d), Newton %d (after %d); models differ by %.2e\n",
                lbfgs.history.back().iteration, lbfgs_its, newton.history.back().iteration, newton_its,
                std::sqrt(diff / norm));
    EXPECT_LT(std::sqrt(diff / norm), 1e-4);
    ASSERT_LT(lbfgs_its, std::numeric_limits<int>::max()) << "L-BFGS never brought |g| below 1e-6";
    EXPECT_LT(newton_its, lbfgs_its);

    // the updates' smoothing preconditioning the CG, the bounds active: the CG runs on the free variables
    // the stage finds (where TAO's differ, the stage throws), and the misfit falls most of the way to the
    // minimum (not all: this quadratic's weights vary from node to node, and the smooth steps reach the
    // rough part of its minimum slowly, as the smoothing means them to)
    spec.smoothing_m = spec.smoothing_sigma_m = 0.2;
    spec.newton_preconditioner = NewtonPreconditioner::smoothing;  // (auto: TAO's L-BFGS for full Newton)
    Quadratic c(g, 1.0);
    const InversionResult smoothed = invert(start, spec, c, scratch_dir("reg-newton-smooth"), "", false);
    int bounded = 0;
    for (std::size_t i = 0; i < start.eps_r.size(); ++i) bounded += smoothed.model.eps_r.data()[i] == spec.eps_r_max;
    const double j_min = lbfgs.history.back().misfit, j_start = smoothed.history.front().misfit;
    std::printf("smoothed Newton: %d nodes at the upper bound, misfit %.6g after %d iterations (minimum %.6g, start %.6g)\n",
                bounded, smoothed.history.back().misfit, smoothed.history.back().iteration, j_min, j_start);
    EXPECT_GT(bounded, 0) << "the bounds must be active for the free variables to be a subset";
    EXPECT_LT(smoothed.history.back().misfit - j_min, 1e-2 * (j_start - j_min));

    spec.smoothing_m = spec.smoothing_sigma_m = 0;
    spec.newton_preconditioner.reset();
    Quadratic inner(g, 1.0);
    GradientOnly t(inner);
    spec.regularize_eps_r = {};
    spec.regularize_sigma = {};
    try {
        invert(start, spec, t, scratch_dir("no-hessian"), "", false);
        ADD_FAILURE() << "a Newton stage of an objective without Hessian-vector products ran";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("inversion.method lbfgs"), std::string::npos) << e.what();
    }
}

// The FWI objective's products (band-limited data, each misfit that has a
// Hessian) against central differences of its gradients.
TEST(Misfits, FwiObjectiveHessianMatchesDifferencesOfGradients) {
    const Grid g{36, 30, 0.04, 0.05};
    const Model model = test::heterogeneous_model(g, 3), truth = test::heterogeneous_model(g, 4);
    const double dt = 0.9 * test::cfl_limit(g, std::min(model.min_eps_mu(), truth.min_eps_mu()), 4);
    const Survey survey = test::random_survey(g, 2, 1, 4, 160, 4.0e8, dt, 9);
    PropagatorOptions opt = fix_survey_wide_options(test::double_options(4, 8), model, survey);
    opt.backend = BackendKind::cpu;
    const Traces observed = CpuPropagator(opt).forward(truth, survey);
    const ModelDirection v = test::smooth_direction(g, 0.4, 0.004, 3);
    for (MisfitKind kind : {MisfitKind::l2, MisfitKind::relative}) {
        DistributedRunner runner(survey, opt, 0);
        FwiObjective objective(runner, observed, kind);
        StageSpec stage;
        stage.max_frequency_hz = 0.5 * 4.0e8;
        Array2D he, hs;
        EXPECT_EQ(objective.hessian_vector(model, stage, v.eps_r, v.sigma, HessianKind::full, he, hs), 4);
        EXPECT_EQ(objective.hessian_vector(model, stage, v.eps_r, v.sigma, HessianKind::full, he, hs), 3)
            << "the second product at the model reads the background from the first's levels";
        const double h = 1e-4;
        Array2D gp_e, gp_s, gm_e, gm_s;
        objective.evaluate(test::perturbed(model, v, h), stage, gp_e, gp_s);
        objective.evaluate(test::perturbed(model, v, -h), stage, gm_e, gm_s);
        double num = 0, den = 0;
        for (std::size_t i = 0; i < he.size(); ++i) {
            num += std::pow((gp_e.data()[i] - gm_e.data()[i]) / (2 * h) - he.data()[i], 2);
            den += std::pow(he.data()[i], 2);
        }
        const double rel = std::sqrt(num / den);
        std::printf("%s: full product against differences of gradients (eps_r rows): %.2e\n", to_string(kind), rel);
        EXPECT_LT(rel, 1e-6) << to_string(kind);
        EXPECT_THROW(FwiObjective(runner, observed, MisfitKind::envelope)
                         .hessian_vector(model, stage, v.eps_r, v.sigma, HessianKind::gauss_newton, he, hs),
                     InvalidArgument);
    }
}
double constrained_minimum(const Quadratic& q, const InversionSpec& s, double scale) {
    double j = 0;
    for (std::size_t i = 0; i < q.a().size(); ++i) {
        const double w = 1.0 + 0.1 * static_cast<double>(i % 7), a = q.a().data()[i];
        j += 0.5 * w * std::pow(std::clamp(a, s.eps_r_min, s.eps_r_max) - a, 2);
    }
    return scale * j;
}

/// A stage's TAO solve on a problem of its own: f = 1/2 sum c_i (x_i -
/// a_i)^2 over eps_r and ln sigma's variables, one target entry beyond its
/// bound. The solver starts from the model's variables, keeps to the bounds,
/// reports every accepted iteration once and in order, and stops where the
/// problem says why; an error inside a callback comes back to the stage.
class QuadraticProblem final : public StageProblem {
public:
    explicit QuadraticProblem(std::size_t n) : a(n), c(n) {
        for (std::size_t i = 0; i < n; ++i) {
            a[i] = i < n / 2 ? 4.0 + 0.01 * static_cast<double>(i) : -0.5 + 0.002 * static_cast<double>(i);
            c[i] = 1.0 + static_cast<double>(i % 5);
        }
        a[3] = 200.0;  // beyond eps_r's bound of 100
    }
    double objective(const std::vector<double>& x, std::vector<double>& g) override {
        if (throw_at > 0 && ++evaluations == throw_at) throw NumericalBlowup("test: evaluation failed");
        double f = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            f += 0.5 * c[i] * (x[i] - a[i]) * (x[i] - a[i]);
            g[i] = c[i] * (x[i] - a[i]);
        }
        return f;
    }
    void hessian_product(const std::vector<double>& at, const double* v, double* out) override {
        ++products;
        EXPECT_EQ(at.size(), a.size());
        for (std::size_t i = 0; i < a.size(); ++i) out[i] = c[i] * v[i];
    }
    std::string accepted(const AcceptedIteration& it) override {
        iterations.push_back(it.iteration);
        last_x = it.x;
        return it.iteration == stop_at ? "the test's reason" : "";
    }
    bool stopped() const override { return false; }
    std::vector<double> a, c, last_x;
    std::vector<int> iterations;
    int stop_at = 0, throw_at = 0, evaluations = 0, products = 0;
};

TEST(StageSolver, SolvesWithinTheBoundsReportingEachIteration) {
    const Grid g{6, 5, 0.1, 0.1};
    const std::size_t nodes = static_cast<std::size_t>(g.nx) * g.nz, n = 2 * nodes;
    const std::vector<int> params{0, 1};
    const std::vector<double> weight(nodes, 1.0);
    const std::vector<char> masked(nodes, 0);
    const Model start = Model::uniform(g, 5.0, 0.01);
    const StageVariables vars{params, weight, masked, 1.0, 1.0, 5.0, 0.01, 1.0, 100.0, 1e-6, 1.0};
    InversionSpec spec;
    StageSpec stage;
    stage.name = "solver-test";
    const StageSmoothing smoothing(spec, stage, g, params);
    struct Run {
        StageSolver::Outcome out;
        std::exception_ptr failure;
        StageTimes times;
    };
    const auto run = [&](QuadraticProblem& q, InversionMethod method) {
        StageSmoothing s = smoothing;
        Run r;
        StageSolver solver(spec, stage, method, s, n, r.times, r.failure, q, std::chrono::steady_clock::now());
        r.out = solver.solve(vars, start, 60);
        return r;
    };
    for (const InversionMethod method : {InversionMethod::lbfgs, InversionMethod::gauss_newton}) {
        SCOPED_TRACE(to_string(method));
        QuadraticProblem q(n);
        const Run r = run(q, method);
        ASSERT_FALSE(r.failure);
        EXPECT_EQ(r.out.petsc_error, 0);
        EXPECT_FALSE(r.out.reason.empty());
        ASSERT_EQ(r.out.x.size(), n);
        for (std::size_t i = 0; i < n; ++i) {
            const double target = i == 3 ? 100.0 : q.a[i];  // (the bound where the target lies beyond)
            EXPECT_NEAR(r.out.x[i], target, 1e-5) << i;
        }
        ASSERT_FALSE(q.iterations.empty());
        for (std::size_t k = 0; k < q.iterations.size(); ++k) EXPECT_EQ(q.iterations[k], static_cast<int>(k) + 1);
        EXPECT_EQ(q.last_x, r.out.x) << "the last accepted iteration is the solution";
        EXPECT_EQ(q.products > 0, method != InversionMethod::lbfgs);
        EXPECT_GT(r.times.solve, 0.0);
    }
    QuadraticProblem stopping(n);  // the problem's reason stops the solve at that iteration
    stopping.stop_at = 2;
    const Run stopped = run(stopping, InversionMethod::lbfgs);
    EXPECT_EQ(stopped.out.petsc_error, 0);
    EXPECT_EQ(stopped.out.reason, "the test's reason");
    EXPECT_EQ(stopping.iterations, (std::vector<int>{1, 2}));
    EXPECT_EQ(stopping.last_x, stopped.out.x);
    QuadraticProblem failing(n);  // an error in the objective: TaoSolve fails, the stage gets the exception
    failing.throw_at = 3;
    const Run failed = run(failing, InversionMethod::lbfgs);
    EXPECT_NE(failed.out.petsc_error, 0);
    ASSERT_TRUE(failed.failure);
    EXPECT_THROW(std::rethrow_exception(failed.failure), NumericalBlowup);
}


// The Newton CG's preconditioner P' S P on a subset of free variables:
// symmetric and positive semi-definite (as the CG needs), the smoothing S
// itself where every variable is free, and a vector of another length (TAO's
// free set not the one found) refused.
TEST(FreeVariableSmoothing, SymmetricSemiDefiniteAndTheSmoothingWhereAllAreFree) {
    const Grid g{14, 11, 0.1, 0.1};
    InversionSpec spec;
    spec.smoothing_m = 0.2;
    spec.smoothing_sigma_m = 0.3;
    const StageSpec stage;
    const std::vector<int> params{0, 1};
    const StageSmoothing smoothing(spec, stage, g, params);
    const std::size_t n = 2 * static_cast<std::size_t>(g.nx) * static_cast<std::size_t>(g.nz);
    double seconds = 0;
    std::exception_ptr failure;
    FreeVariableSmoothing m(smoothing, n, "test", seconds, failure);
    std::vector<std::size_t> free;
    for (std::size_t i = 0; i < n; ++i)
        if (i % 3 != 1) free.push_back(i);
    m.set_free_variables(free);
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    const auto random = [&](std::size_t k) {
        std::vector<double> v(k);
        for (double& x : v) x = u(rng);
        return v;
    };
    const auto dot = [](const std::vector<double>& x, const std::vector<double>& y) {
        double d = 0;
        for (std::size_t i = 0; i < x.size(); ++i) d += x[i] * y[i];
        return d;
    };
    const std::vector<double> a = random(free.size()), b = random(free.size());
    const std::vector<double> ma = m.apply(a), mb = m.apply(b);
    EXPECT_NEAR(dot(a, mb), dot(ma, b), 1e-13 * std::abs(dot(a, mb)));
    EXPECT_GT(dot(a, ma), 0.0);
    std::vector<std::size_t> all(n);
    std::iota(all.begin(), all.end(), std::size_t{0});
    m.set_free_variables(all);
    const std::vector<double> w = random(n);
    std::vector<double> sw = w;
    smoothing.smooth(sw);
    EXPECT_EQ(m.apply(w), sw);
    EXPECT_THROW(m.apply(std::vector<double>(n - 1)), Error);
}

// The smoothing preconditions a Gauss-Newton stage's CG (unless
// inversion.newton.preconditioner asks for TAO's L-BFGS): with one product an
// iteration, the first update is the smoothed gradient's direction, whose
// roughness (second differences) is a fraction of the plain step's (the
// quadratic's weights vary from node to node, so its gradient is rough).
TEST(Tao, SmoothingPreconditionsTheNewtonSteps) {
    const Grid g{40, 30, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.stages.resize(1);  // eps_r
    spec.stages[0].iterations = 1;
    spec.method = InversionMethod::gauss_newton;
    spec.newton_cg_iterations = 1;
    const Model start = Model::uniform(g, 5.0, 0.002);
    const auto roughness = [&](const InversionResult& r) {
        // second differences along x over the update's size (a linear trend is not rough), away from
        // the edges, where the smoothing's own boundary bends the update
        double d2 = 0, n2 = 0;
        const auto u = [&](int iz, int ix) { return r.model.eps_r(iz, ix) - start.eps_r(iz, ix); };
        for (int iz = 6; iz < g.nz - 6; ++iz)
            for (int ix = 6; ix < g.nx - 6; ++ix) {
                n2 += u(iz, ix) * u(iz, ix);
                d2 += std::pow(u(iz, ix + 1) - 2 * u(iz, ix) + u(iz, ix - 1), 2);
            }
        return std::sqrt(d2 / n2);
    };
    Quadratic a(g, 1.0), b(g, 1.0);
    const InversionResult plain = invert(start, spec, a, scratch_dir("newton-plain"), "", false);
    spec.smoothing_m = 0.2;
    const InversionResult smooth = invert(start, spec, b, scratch_dir("newton-smooth"), "", false);
    ASSERT_EQ(plain.history.back().iteration, 1);
    ASSERT_EQ(smooth.history.back().iteration, 1);
    std::printf("roughness of the first update: %.3f plain, %.3f smoothed\n", roughness(plain), roughness(smooth));
    EXPECT_LT(roughness(smooth), 0.5 * roughness(plain));
    EXPECT_LT(smooth.history.back().misfit, smooth.history.front().misfit);
    // TAO's L-BFGS asked for instead: the plain step
    spec.newton_preconditioner = NewtonPreconditioner::lbfgs;
    Quadratic c(g, 1.0);
    const InversionResult unsmoothed = invert(start, spec, c, scratch_dir("newton-lbfgs-pc"), "", false);
    EXPECT_EQ(roughness(unsmoothed), roughness(plain));
}

// Air: sigma = 0 in a masked layer, with a regulariser on log(sigma) (which
// must not see log 0) and both parameters free elsewhere.
TEST(Tao, MaskedAirWithZeroConductivityAndRegularization) {
    const Grid g{10, 8, 0.1, 0.1};
    Quadratic q(g, 1.0);
    InversionSpec spec = quadratic_spec();
    spec.stages.erase(spec.stages.begin());  // the stage with both parameters
    spec.regularize_sigma.tv = 1e-3;
    spec.regularize_sigma.tikhonov = 1e-3;
    ModelRegion air;
    air.kind = ModelRegion::Kind::layer;
    air.top = -1;
    air.bottom = 0.15;  // rows 0 and 1
    spec.mask = {air};
    Model start = Model::uniform(g, 5.0, 0.002);
    for (int ix = 0; ix < g.nx; ++ix)
        for (int iz = 0; iz < 2; ++iz) {
            start.eps_r(iz, ix) = 1.0;
            start.sigma(iz, ix) = 0.0;
        }
    const InversionResult r = invert(start, spec, q, scratch_dir("air"), "", false);
    for (int ix = 0; ix < g.nx; ++ix) {
        EXPECT_EQ(r.model.sigma(0, ix), 0.0);
        EXPECT_EQ(r.model.eps_r(1, ix), 1.0);
    }
    EXPECT_LT(r.history.back().misfit, r.history.front().misfit);
    EXPECT_GT(r.history.size(), 3u);
}

/// J = 1/2 sum c_i (eps_r - a_i)^2 with curvatures c_i over three decades: its
/// "illumination" is c, the diagonal of its Hessian.
class Illuminated final : public InversionObjective {
public:
    explicit Illuminated(const Grid& g) : a_(g.nz, g.nx), c_(g.nz, g.nx) {
        for (std::size_t i = 0; i < a_.size(); ++i) {
            a_.data()[i] = 4.0 + 0.03 * static_cast<double>(i % 13);
            c_.data()[i] = std::pow(10.0, 3.0 * static_cast<double>((i * 7) % a_.size()) / static_cast<double>(a_.size()));
        }
    }
    double evaluate(const Model& m, const StageSpec&, Array2D& ge, Array2D& gs) override {
        if (stop_after > 0 && ++evaluations == stop_after) request_stop();
        double j = 0;
        for (std::size_t i = 0; i < a_.size(); ++i) {
            const double d = m.eps_r.data()[i] - a_.data()[i];
            j += 0.5 * c_.data()[i] * d * d;
            ge.data()[i] = c_.data()[i] * d;
            gs.data()[i] = 0;
        }
        return j;
    }
    double evaluate_with_illumination(const Model& m, const StageSpec& st, Array2D& ge, Array2D& gs, Array2D& ill) override {
        ill = c_;
        return evaluate(m, st, ge, gs);
    }
    double error(const Model& m) const {
        double e = 0, n = 0;
        for (std::size_t i = 0; i < a_.size(); ++i) {
            e += std::pow(m.eps_r.data()[i] - a_.data()[i], 2);
            n += std::pow(5.0 - a_.data()[i], 2);
        }
        return std::sqrt(e / n);
    }
    const Array2D& c() const { return c_; }
    int stop_after = 0, evaluations = 0;

private:
    Array2D a_, c_;
};

// Illumination preconditioning divides each node's step by its illumination:
// on a quadratic whose Hessian is that illumination, it makes the problem
// perfectly conditioned, and L-BFGS converges in a step or two.
TEST(Tao, IlluminationPreconditioningEqualisesTheNodes) {
    const Grid g{10, 8, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.stages.resize(1);
    spec.stages[0].iterations = 3;
    const Model start = Model::uniform(g, 5.0, 0.002);
    Illuminated plain_q(g), pre_q(g);
    const InversionResult plain = invert(start, spec, plain_q, scratch_dir("plain"), "", false);
    spec.illumination_stabilization = 1e-9;
    const std::string dir = scratch_dir("illuminated");
    const InversionResult pre = invert(start, spec, pre_q, dir, "", false);
    const double e_plain = plain_q.error(plain.model), e_pre = pre_q.error(pre.model);
    std::printf("model error after 3 iterations: %.3g without, %.3g with illumination preconditioning\n", e_plain, e_pre);
    EXPECT_LT(e_pre, 1e-6);
    EXPECT_GT(e_plain, 1e-2);
    // the weights are written for a resume: sqrt((1 + a) / (c / c_max + a))
    const std::vector<double> w = read_vector_h5(dir + "/preconditioner_01_eps.h5", "weights", 1.0);
    ASSERT_EQ(w.size(), pre_q.c().size());
    double c_max = 0;
    for (double c : pre_q.c().values()) c_max = std::max(c_max, c);
    for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], std::sqrt((1 + 1e-9) / (pre_q.c().data()[i] / c_max + 1e-9)), 1e-9 * w[i]);
}

/// J = 1/2 sum (eps_r - a)^2 for a target a.
class Target final : public InversionObjective {
public:
    explicit Target(Array2D a) : a_(std::move(a)) {}
    double evaluate(const Model& m, const StageSpec&, Array2D& ge, Array2D& gs) override {
        double j = 0;
        for (std::size_t i = 0; i < a_.size(); ++i) {
            const double d = m.eps_r.data()[i] - a_.data()[i];
            j += 0.5 * d * d;
            ge.data()[i] = d;
            gs.data()[i] = 0;
        }
        return j;
    }

private:
    Array2D a_;
};

// Gradient smoothing: L-BFGS's first step is the smoothed gradient, a
// Gaussian of the given width around a spike; later steps still converge to
// the (rough) minimum, because the gradient TAO sees is the exact one.
TEST(Tao, GradientSmoothingSpreadsTheUpdateAsAGaussian) {
    const Grid g{25, 21, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.stages.resize(1);
    spec.stages[0].iterations = 1;
    spec.smoothing_m = 0.2;  // two nodes
    const Model start = Model::uniform(g, 5.0, 0.002);
    Array2D a(g.nz, g.nx, 5.0);
    a(10, 12) = 7.0;  // a spike: its gradient is one node
    Target spike(a);
    const InversionResult one = invert(start, spec, spike, scratch_dir("smooth1"), "", false);
    const double centre = one.model.eps_r(10, 12) - 5.0;
    ASSERT_GT(centre, 0.0);
    EXPECT_NEAR((one.model.eps_r(10, 14) - 5.0) / centre, std::exp(-0.5), 0.02);  // 1 standard deviation
    EXPECT_NEAR((one.model.eps_r(10, 16) - 5.0) / centre, std::exp(-2.0), 0.02);  // 2
    EXPECT_NEAR(one.model.eps_r(10, 10), one.model.eps_r(10, 14), 1e-12);
    EXPECT_NEAR(one.model.eps_r(8, 12), one.model.eps_r(10, 14), 1e-12);
    spec.smoothing_m = 0;
    const InversionResult rough = invert(start, spec, spike, scratch_dir("smooth0"), "", false);
    EXPECT_EQ(rough.model.eps_r(10, 14), 5.0) << "without smoothing only the spike's node moves";
    // A smooth target is reached: the gradient TAO sees is exact, only the
    // proposals are smooth (a spike would take many iterations: its high
    // wavenumbers are what the smoothing holds back).
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix)
            a(iz, ix) = 5.0 + 2.0 * std::exp(-(std::pow(ix - 12, 2) + std::pow(iz - 10, 2)) * 0.01 / (2 * 0.3 * 0.3));
    Target bump(a);
    spec.smoothing_m = 0.2;
    spec.stages[0].iterations = 30;
    const InversionResult many = invert(start, spec, bump, scratch_dir("smooth30"), "", false);
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(many.model.eps_r.data()[i] - a.data()[i]));
    EXPECT_LT(worst, 1e-3);
}

// A resumed stage uses the preconditioner of its start (written beside the
// checkpoint), not one of the model it resumes from.
TEST(Tao, ResumedStageReadsItsPreconditioner) {
    const Grid g{10, 8, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.stages.resize(1);
    spec.stages[0].iterations = 5;
    spec.illumination_stabilization = 0.3;  // partly equalised: several iterations to go
    const std::string dir = scratch_dir("resume-illuminated");
    const Model start = Model::uniform(g, 5.0, 0.002);
    Illuminated q(g);
    q.stop_after = 4;
    EXPECT_THROW(invert(start, spec, q, dir, "", false), StopRequested);
    clear_stop_request();
    const std::string weights = dir + "/preconditioner_01_eps.h5";
    ASSERT_TRUE(std::filesystem::exists(weights));
    std::filesystem::rename(weights, weights + ".away");
    Illuminated q2(g);
    EXPECT_THROW(invert(start, spec, q2, dir, "", true), Error) << "a resume without its preconditioner must stop";
    std::filesystem::rename(weights + ".away", weights);
    const InversionResult r = invert(start, spec, q2, dir, "", true);
    ASSERT_FALSE(r.history.empty());
    EXPECT_EQ(r.history.back().iteration, 5);
    for (std::size_t i = 1; i < r.history.size(); ++i) EXPECT_EQ(r.history[i].iteration, r.history[i - 1].iteration + 1);
    EXPECT_LT(r.history.back().misfit, r.history.front().misfit);
}

TEST(Tao, TinyMisfitStillIterates) {
    const Grid g{10, 8, 0.1, 0.1};
    Quadratic q(g, 1e-22);
    InversionSpec spec = quadratic_spec();
    const InversionResult r = invert(Model::uniform(g, 5.0, 0.002), spec, q, scratch_dir("tiny"), "", false);
    ASSERT_GE(r.history.size(), 3u);
    EXPECT_GT(r.history[1].iteration, 0);
    const double best = constrained_minimum(q, spec, 1e-22);
    EXPECT_LT(r.history.back().misfit - best, 1e-4 * (r.history.front().misfit - best)) << "the scale must not matter";
    // sigma moved in the second stage, towards b
    EXPECT_NEAR(r.model.sigma(3, 9), 0.001 * std::exp(0.9), 1e-3 * 0.001 * std::exp(0.9));
}

// The campaign's propagation budget stops the stage at the first iteration
// that reaches it and skips the stages after it; the final model is written.
TEST(Tao, PropagationBudgetStopsTheCampaign) {
    const Grid g{10, 8, 0.1, 0.1};
    const std::string dir = scratch_dir("budget");
    InversionSpec spec = quadratic_spec();
    spec.max_propagations = 9;
    Quadratic q(g, 1.0);
    const InversionResult r = invert(Model::uniform(g, 5.0, 0.002), spec, q, dir, "", false);
    ASSERT_GE(r.history.size(), 2u);
    for (const HistoryRow& row : r.history) EXPECT_EQ(row.stage, "eps") << "the second stage must be skipped";
    EXPECT_GE(r.history.back().propagations, 9);
    EXPECT_LT(r.history[r.history.size() - 2].propagations, 9) << "the stage must stop at the first iteration that reaches it";
    EXPECT_LT(r.history.back().iteration, spec.stages[0].iterations);
    EXPECT_TRUE(std::filesystem::exists(dir + "/model_final.h5"));
}

TEST(Tao, StoppedRunResumesWithEveryIterationOnce) {
    const Grid g{10, 8, 0.1, 0.1};
    const std::string dir = scratch_dir("resume");
    InversionSpec spec = quadratic_spec();
    spec.save_models = true;
    Quadratic q(g, 1.0);
    q.stop_after = 12;  // in the second stage
    const Model start = Model::uniform(g, 5.0, 0.002);
    EXPECT_THROW(invert(start, spec, q, dir, "", false), StopRequested);
    ASSERT_TRUE(std::filesystem::exists(dir + "/checkpoint.h5"));
    clear_stop_request();  // as a new process would start
    {  // the stages changed since the run began (a stage put before them): no resume, the checkpoint kept
        InversionSpec changed = spec;
        StageSpec first = spec.stages.front();
        first.name = "first";
        changed.stages.insert(changed.stages.begin(), first);
        Quadratic q1(g, 1.0);
        try {
            invert(start, changed, q1, dir, "", true);
            ADD_FAILURE() << "resumed a checkpoint of stage both as stage eps";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("stages changed since the run began"), std::string::npos) << e.what();
        }
        EXPECT_EQ(q1.evaluations, 0) << "nothing evaluated before the refusal";
    }
    Quadratic q2(g, 1.0);
    const InversionResult r = invert(start, spec, q2, dir, "", true);
    std::set<std::pair<std::string, int>> seen;
    std::map<std::string, int> last;
    for (const HistoryRow& row : r.history) {
        EXPECT_TRUE(seen.insert({row.stage, row.iteration}).second) << row.stage << " " << row.iteration << " twice";
        if (last.count(row.stage)) {
            EXPECT_EQ(row.iteration, last[row.stage] + 1) << "a gap in " << row.stage;
        }
        last[row.stage] = row.iteration;
    }
    EXPECT_EQ(last["eps"], 6);
    EXPECT_GT(last["both"], 2);
    // history.csv holds the same rows
    std::ifstream csv(dir + "/history.csv");
    std::size_t lines = 0;
    for (std::string line; std::getline(csv, line);) ++lines;
    EXPECT_EQ(lines, r.history.size() + 1);
    EXPECT_TRUE(std::filesystem::exists(dir + "/model_final.h5"));
}

// The final model's misfit, returned and written to model_final.h5: where
// the taper's fill changes the last stage's model after its last row (whose
// misfit is the last iterate's), the campaign evaluates it anew; where the
// fill changes nothing, it is the last row's.
TEST(Tao, FinalModelsMisfit) {
    const Grid g{10, 8, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.taper_radius_m = 0.1;
    spec.taper_points = {{0.4, 0.4}};  // node (4, 4), held at the start's 5.0 through both stages
    const Model start = Model::uniform(g, 5.0, 0.002);
    Quadratic q(g, 1.0);
    const std::string dir = scratch_dir("final-misfit");
    Model truth = Model::uniform(g, 6.0, 0.003);
    truth.eps_r(4, 4) = 4.0;
    write_model_h5(dir + "/truth.h5", truth, "");
    spec.true_model = dir + "/truth.h5";
    const InversionResult r = invert(start, spec, q, dir, "", false);
    ASSERT_TRUE(r.final_misfit.has_value());
    // the final model's errors against the truth (the filled model's, not the last row's), as the history's columns
    EXPECT_DOUBLE_EQ(r.final_error_eps_r, relative_error(r.model.eps_r, truth.eps_r));
    EXPECT_DOUBLE_EQ(r.final_error_sigma, relative_error(r.model.sigma, truth.sigma));
    EXPECT_NE(r.final_error_eps_r, r.history.back().error_eps_r) << "the node filled after the last row";
    spec.true_model.clear();
    Quadratic fresh(g, 1.0);
    EXPECT_DOUBLE_EQ(*r.final_misfit, fresh.misfit(r.model, spec.stages.back()));
    EXPECT_NE(*r.final_misfit, r.history.back().misfit) << "the node filled after the last row";
    ModelFileExtras written{{{"misfit", 0.0}}, {{"misfit_stage", ""}}, {}, {}};
    read_model_h5(dir + "/model_final.h5", g, &written);
    EXPECT_DOUBLE_EQ(written.numbers["misfit"], *r.final_misfit);
    EXPECT_EQ(written.texts["misfit_stage"], spec.stages.back().name);

    spec.taper_fill = false;
    Quadratic q2(g, 1.0);
    const InversionResult unfilled = invert(start, spec, q2, scratch_dir("final-misfit-unfilled"), "", false);
    ASSERT_TRUE(unfilled.final_misfit.has_value());
    EXPECT_EQ(unfilled.final_error_eps_r, -1) << "no true model, no errors";
    EXPECT_EQ(*unfilled.final_misfit, unfilled.history.back().misfit);
    EXPECT_DOUBLE_EQ(*unfilled.final_misfit, fresh.misfit(unfilled.model, spec.stages.back()));
}

// A stage with a rule on its misfit ends at its least-misfit iterate, not at
// its last: here the smoothness term pulls the model off the data's best fit
// (the ramp of the quadratic's minimum), so the objective falls while the
// misfit rises. Stopped after that iterate and resumed, the campaign ends at
// the same model: the checkpoint carries the iterate.
TEST(Tao, StageWithAMisfitRuleEndsAtItsLeastMisfit) {
    const Grid g{10, 8, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.stages.resize(1);
    StageSpec& stage = spec.stages[0];
    stage.iterations = 12;
    stage.min_relative_decrease = 0.01;
    stage.decrease_window = 3;
    spec.regularize_eps_r.tikhonov = 3.0;
    spec.save_models = true;
    Quadratic q(g, 1.0);
    Model start = Model::uniform(g, 5.0, 0.002);
    for (std::size_t i = 0; i < start.eps_r.size(); ++i)  // near the data's best fit, a little rough
        start.eps_r.data()[i] = std::clamp(q.a().data()[i], 2.0, 8.0) + (i % 3 == 0 ? 0.4 : -0.2);
    const std::string dir = scratch_dir("least-misfit");
    const InversionResult r = invert(start, spec, q, dir, "", false);
    ASSERT_GE(r.history.size(), 3u);
    const auto least = std::min_element(r.history.begin(), r.history.end(),
                                        [](const HistoryRow& a, const HistoryRow& b) { return a.misfit < b.misfit; });
    ASSERT_GT(least->iteration, 0) << "the setting must first lower the misfit";
    ASSERT_LT(least->iteration, r.history.back().iteration) << "... and then raise it";
    const Model at_least = read_model_h5(fmt::format("{}/models/01_eps_{:03}.h5", dir, least->iteration), g);
    EXPECT_EQ(r.model.eps_r.values(), at_least.eps_r.values());
    EXPECT_EQ(read_model_h5(dir + "/model_final.h5", g).eps_r.values(), at_least.eps_r.values());
    Array2D ge(g.nz, g.nx), gs(g.nz, g.nx);
    Quadratic judge(g, 1.0);
    EXPECT_DOUBLE_EQ(judge.evaluate(r.model, stage, ge, gs), least->misfit);

    // stopped after the least-misfit iterate, before the stage's end, and resumed: the same end
    const std::string stopped = scratch_dir("least-misfit-resumed");
    const int outside = q.evaluations - r.history.back().evaluations;  // the campaign's evaluations outside the stage
    Quadratic q1(g, 1.0);
    q1.stop_after = outside + least->evaluations + 2;
    ASSERT_LT(least->evaluations + 2, r.history.back().evaluations);
    EXPECT_THROW(invert(start, spec, q1, stopped, "", false), StopRequested);
    clear_stop_request();
    // the checkpoint: a later iterate, and beside it the least-misfit one
    EXPECT_NE(read_model_h5(stopped + "/checkpoint.h5", g).eps_r.values(), at_least.eps_r.values());
    EXPECT_EQ(read_model_array_h5(stopped + "/checkpoint.h5", kLeastEpsR, g).values(), at_least.eps_r.values());
    EXPECT_EQ(read_model_array_h5(stopped + "/checkpoint.h5", kLeastSigma, g).values(), at_least.sigma.values());
    Quadratic q2(g, 1.0);
    const InversionResult resumed = invert(start, spec, q2, stopped, "", true);
    EXPECT_GT(resumed.history.back().iteration, least->iteration);
    EXPECT_EQ(resumed.model.eps_r.values(), at_least.eps_r.values());

    // stopped right after the least-misfit iterate: it is the checkpoint's own model, kept once
    const std::string early = scratch_dir("least-misfit-early");
    Quadratic q4(g, 1.0);
    q4.stop_after = outside + least->evaluations + 1;
    EXPECT_THROW(invert(start, spec, q4, early, "", false), StopRequested);
    clear_stop_request();
    EXPECT_FALSE(h5_has_dataset(early + "/checkpoint.h5", kLeastEpsR));
    Quadratic q5(g, 1.0);
    EXPECT_EQ(invert(start, spec, q5, early, "", true).model.eps_r.values(), at_least.eps_r.values());

    // with the rule from a later iteration on: the stage runs at least that long, and ends at its least
    // misfit among the iterates from there on, not at the earlier least
    const int later = least->iteration + 2;
    spec.stages[0].min_iterations = later;
    spec.stages[0].iterations = 20;
    spec.stages[0].decrease_window = 5;  // a few iterates past the least, to stop the run between them
    const std::string late_dir = scratch_dir("least-misfit-later");
    Quadratic q6(g, 1.0);
    const InversionResult late = invert(start, spec, q6, late_dir, "", false);
    ASSERT_GE(late.history.back().iteration, later);
    std::vector<HistoryRow> from_later;
    std::copy_if(late.history.begin(), late.history.end(), std::back_inserter(from_later),
                 [&](const HistoryRow& row) { return row.iteration >= later; });
    const auto late_least = std::min_element(from_later.begin(), from_later.end(),
                                             [](const HistoryRow& a, const HistoryRow& b) { return a.misfit < b.misfit; });
    EXPECT_GT(late_least->misfit, least->misfit) << "the misfit keeps rising: the later least is above the first";
    const Model at_late_least =
        read_model_h5(fmt::format("{}/models/01_eps_{:03}.h5", late_dir, late_least->iteration), g);
    EXPECT_EQ(late.model.eps_r.values(), at_late_least.eps_r.values());
    // ... stopped one iterate past that least, and resumed with no iteration left: it ends at that least,
    // chosen from the stopped run's rows from min_iterations on (not the earlier least below them)
    const auto after_least = std::find_if(late.history.begin(), late.history.end(), [&](const HistoryRow& row) {
        return row.iteration == late_least->iteration + 1;
    });
    ASSERT_NE(after_least, late.history.end());
    const std::string late_stopped = scratch_dir("least-misfit-later-resumed");
    Quadratic q7(g, 1.0);
    q7.stop_after = q6.evaluations - late.history.back().evaluations + after_least->evaluations + 1;
    EXPECT_THROW(invert(start, spec, q7, late_stopped, "", false), StopRequested);
    clear_stop_request();
    spec.stages[0].iterations = after_least->iteration;
    Quadratic q8(g, 1.0);
    const InversionResult late_resumed = invert(start, spec, q8, late_stopped, "", true);
    EXPECT_EQ(late_resumed.history.back().iteration, after_least->iteration);
    EXPECT_EQ(late_resumed.model.eps_r.values(), at_late_least.eps_r.values());
    EXPECT_EQ(late_resumed.final_misfit, late_least->misfit);
    spec.stages[0].min_iterations = 0;
    spec.stages[0].decrease_window = 3;

    // without the rule the stage ends where it stops
    spec.stages[0].min_relative_decrease = 0;
    spec.stages[0].iterations = r.history.back().iteration;
    Quadratic q3(g, 1.0);
    const InversionResult plain = invert(start, spec, q3, scratch_dir("least-misfit-off"), "", false);
    EXPECT_NE(plain.model.eps_r.values(), at_least.eps_r.values());
}

// A flooding stage starts from the stage before's model flooded and keeps
// its own end only where that fits better than the stage before's end
// (written to its file): never a worse fit. Stopped while its flood is sized
// or within it, a campaign resumes with every iteration once and makes the
// same choice.
TEST(Tao, FloodingStageKeepsOnlyABetterFit) {
    const Grid g{10, 8, 0.1, 0.1};
    const Model start = Model::uniform(g, 5.0, 0.002);
    for (int flood_iterations : {1, 25}) {
        const std::string dir = scratch_dir(fmt::format("flood-{}", flood_iterations));
        InversionSpec spec = quadratic_spec();
        spec.stages[1] = spec.stages[0];
        spec.stages[1].name = "flood";
        spec.stages[1].flood = true;
        spec.stages[1].iterations = flood_iterations;
        Quadratic q(g, 1.0);
        const InversionResult r = invert(start, spec, q, dir, "", false);
        const Model before = read_model_h5(dir + "/flood_02_flood.h5", g);
        Array2D ge(g.nz, g.nx), gs(g.nz, g.nx);
        Quadratic judge(g, 1.0);
        const double j_end = judge.evaluate(r.model, spec.stages[1], ge, gs);
        const double j_before = judge.evaluate(before, spec.stages[1], ge, gs);
        if (r.model.eps_r.values() != before.eps_r.values()) {
            EXPECT_LT(j_end, j_before) << flood_iterations;
        } else {
            EXPECT_EQ(r.model.sigma.values(), before.sigma.values());
        }
        std::set<std::string> stages;
        for (const HistoryRow& row : r.history) stages.insert(row.stage);
        EXPECT_EQ(stages, (std::set<std::string>{"eps", "flood"}));
        if (flood_iterations == 1) {  // one step from the flooded model leaves it further than the stage before
            EXPECT_EQ(r.model.eps_r.values(), before.eps_r.values());
        }
    }
    // stopped while the flood is sized (the first stage and the flood's 13 step heights from each of
    // its two bands take 34 evaluations) or within the flooding stage, resumed: the same choice,
    // every iteration once
    for (int stop_after : {12, 41}) {
        const std::string dir = scratch_dir(fmt::format("flood-resume-{}", stop_after));
        InversionSpec spec = quadratic_spec();
        spec.stages[1].flood = true;
        spec.save_models = true;
        Quadratic q(g, 1.0);
        q.stop_after = stop_after;
        EXPECT_THROW(invert(start, spec, q, dir, "", false), StopRequested);
        clear_stop_request();
        {
            ModelFileExtras a = checkpoint_attributes({});
            read_model_h5(dir + "/checkpoint.h5", g, &a);
            const CheckpointState s = checkpoint_state(a);
            EXPECT_EQ(s.stage, stop_after == 12 ? 0 : 1);
            EXPECT_EQ(s.stage_done, stop_after == 12);
        }
        Quadratic q2(g, 1.0);
        const InversionResult r = invert(start, spec, q2, dir, "", true);
        std::set<std::pair<std::string, int>> seen;
        for (const HistoryRow& row : r.history)
            EXPECT_TRUE(seen.insert({row.stage, row.iteration}).second)
                << row.stage << " " << row.iteration << " twice (stopped after " << stop_after << ")";
        EXPECT_EQ(r.history.back().stage, "both");
        const Model before = read_model_h5(dir + "/flood_02_both.h5", g);
        Array2D ge(g.nz, g.nx), gs(g.nz, g.nx);
        Quadratic judge(g, 1.0);
        EXPECT_LE(judge.evaluate(r.model, spec.stages[1], ge, gs), judge.evaluate(before, spec.stages[1], ge, gs));
    }
}

// With the edges following (InversionSpec::edges), every model the campaign
// evaluates has them following, not only the stages' iterates: the start
// (whose own edges differ), the background scan's, the flood's candidates
// (whose step the flood leaves off the edges) and the final model, whose
// antenna node one in from an edge the taper's fill changed after the last
// iterate.
TEST(Tao, EveryModelTheCampaignEvaluatesHasItsEdgesFollowing) {
    const Grid g{10, 8, 0.1, 0.1};
    InversionSpec spec = quadratic_spec();
    spec.edges = EdgeRule::follow;
    spec.stages[1].flood = true;
    spec.scan.eps_r = true;
    spec.taper_radius_m = 0.1;
    spec.taper_points = {{0.1, 0.4}};  // node (1, 4): the inner node of the edge node (0, 4)
    Model start = Model::uniform(g, 5.0, 0.002);
    for (int iz = 0; iz < g.nz; ++iz) start.eps_r(iz, 0) = start.eps_r(iz, g.nx - 1) = 7.0;
    const EdgeLinks links = edge_links(spec, g);
    ASSERT_EQ(links.size(), static_cast<std::size_t>(2 * (g.nx + g.nz) - 4));
    auto mismatched = [&](const Model& m) {
        int n = 0;
        for (const auto& [edge, inner] : links)
            n += m.eps_r.data()[edge] != m.eps_r.data()[inner] || m.sigma.data()[edge] != m.sigma.data()[inner];
        return n;
    };
    Quadratic q(g, 1.0);
    int models = 0, broken = 0;
    q.inspect = [&](const Model& m) { ++models, broken += mismatched(m) > 0; };
    const InversionResult r = invert(start, spec, q, scratch_dir("edges-follow-campaign"), "", false);
    EXPECT_GT(models, 40) << "the scan, the flood's heights and both stages";
    EXPECT_EQ(broken, 0) << "of " << models << " models evaluated";
    EXPECT_EQ(mismatched(r.model), 0);
    EXPECT_NE(r.model.eps_r(4, 1), 5.0) << "the fill moved the antenna's node";
}

// The survey's sensitivity to sigma, which weights sigma's automatic total
// variation, is measured once, at the campaign's first calibration: the
// checkpoint carries it, a resumed campaign keeps it, and later stages do not
// measure it again from their own models.
TEST(Tao, SigmaSensitivityIsTheFirstCalibrationsThroughAResume) {
    const Grid g{10, 8, 0.1, 0.1};
    const std::string dir = scratch_dir("resume-sensitivity");
    InversionSpec spec = quadratic_spec();
    spec.sigma_tv_follows_sensitivity = true;
    spec.regularize_sigma.tv = 1e-3;
    const Model start = Model::uniform(g, 5.0, 0.002);
    auto sensitivity_in_checkpoint = [&] {
        ModelFileExtras a = checkpoint_attributes({});
        read_model_h5(dir + "/checkpoint.h5", g, &a);
        return checkpoint_state(a);
    };
    Quadratic q(g, 1.0);
    q.stop_after = 3;  // in the first stage
    EXPECT_THROW(invert(start, spec, q, dir, "", false), StopRequested);
    clear_stop_request();
    const CheckpointState first = sensitivity_in_checkpoint();
    EXPECT_EQ(first.stage, 0);
    ASSERT_GT(first.sigma_sensitivity, 0.0);
    Quadratic q2(g, 1.0);
    q2.stop_after = 11;  // in the second stage, after its first iterations
    EXPECT_THROW(invert(start, spec, q2, dir, "", true), StopRequested);
    clear_stop_request();
    const CheckpointState second = sensitivity_in_checkpoint();
    EXPECT_EQ(second.stage, 1);
    EXPECT_EQ(second.sigma_sensitivity, first.sigma_sensitivity) << "measured once, at the campaign's first calibration";
    Quadratic q3(g, 1.0);
    invert(start, spec, q3, dir, "", true);
    EXPECT_EQ(sensitivity_in_checkpoint().sigma_sensitivity, first.sigma_sensitivity);

    // a fresh campaign measures it anew, from its own first calibration
    Quadratic q4(g, 1.0);
    const std::string other = scratch_dir("resume-sensitivity-fresh");
    invert(Model::uniform(g, 7.0, 0.02), spec, q4, other, "", false);
    ModelFileExtras a = checkpoint_attributes({});
    read_model_h5(other + "/checkpoint.h5", g, &a);
    EXPECT_GT(checkpoint_state(a).sigma_sensitivity, 0.0);
    EXPECT_NE(checkpoint_state(a).sigma_sensitivity, first.sigma_sensitivity);
}

// A checkpoint written before history.csv had its propagations column
// resumes: its rows read as they were, the propagations counted on from 0
// for the rows it lacks them, and the new rows have them.
TEST(Tao, ResumesACheckpointWithoutThePropagationsColumn) {
    const Grid g{10, 8, 0.1, 0.1};
    const std::string dir = scratch_dir("resume-old-history");
    InversionSpec spec = quadratic_spec();
    Quadratic q(g, 1.0);
    q.stop_after = 12;
    const Model start = Model::uniform(g, 5.0, 0.002);
    EXPECT_THROW(invert(start, spec, q, dir, "", false), StopRequested);
    clear_stop_request();
    // the checkpoint's history as the earlier format wrote it: column 8 (propagations) left out
    const std::string path = dir + "/checkpoint.h5";
    ModelFileExtras a;
    for (const char* k : {"stage", "stage_done", "iterations", "evaluations", "seconds", "stage_seconds", "j0",
                          "scale_eps_r", "scale_sigma", "sigma_ref", "eps_ref"})
        a.numbers[k] = 0;
    a.texts["history"] = "";
    const Model saved = read_model_h5(path, g, &a);
    std::istringstream in(a.texts["history"]);
    std::string old, line;
    std::size_t rows = 0;
    while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::stringstream ls(line);
        for (std::string cell; std::getline(ls, cell, ',');) f.push_back(cell);
        ASSERT_GE(f.size(), 9u) << line;
        if (rows++ == 0) {
            ASSERT_EQ(f[7], "propagations");
        }
        f.erase(f.begin() + 7);
        for (std::size_t k = 0; k < f.size(); ++k) old += (k ? "," : "") + f[k];
        old += "\n";
    }
    a.texts["history"] = old;
    write_model_h5(path, saved, "", a);
    Quadratic q2(g, 1.0);
    const InversionResult r = invert(start, spec, q2, dir, "", true);
    ASSERT_GT(r.history.size(), rows - 1);
    for (std::size_t i = 0; i + 1 < rows; ++i) EXPECT_EQ(r.history[i].propagations, 0) << "row " << i << " had none";
    EXPECT_GT(r.history.back().propagations, 0) << "the resumed rows count theirs";
    EXPECT_EQ(r.history.back().stage, "both");
}

}  // namespace
}  // namespace gprfwi
