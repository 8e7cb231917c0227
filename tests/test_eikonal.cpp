// The eikonal solver of the traveltime tomography: first-arrival times
// against straight rays in a homogeneous medium and across a layer
// (refraction, Snell's law), and the adjoint's gradient against finite
// differences of the times (the Taylor test, as for the wave gradient);
// ray integrals (the march's tangent linear model): the slowness's own is
// the time, a quantity's in a homogeneous medium is it times the ray's
// length, and they are the transpose of the adjoint (dot-product test).

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gprfwi/eikonal.hpp"
#include "gprfwi/error.hpp"

namespace gprfwi {
namespace {

TEST(Eikonal, HomogeneousTimesAreStraightRays) {
    const Grid g{121, 101, 0.05, 0.05};
    const double s = 1.0 / 1.2e8;
    const std::vector<double> slowness(static_cast<std::size_t>(g.nx) * g.nz, s);
    const Position src{1.23, 2.01};
    const EikonalField f(g, slowness, src);
    double worst = 0;
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            const double r = std::hypot(ix * g.dx - src.x, iz * g.dz - src.z);
            if (r < 10 * g.dx) continue;
            worst = std::max(worst, std::abs(f.times()[static_cast<std::size_t>(iz) * g.nx + ix] / (s * r) - 1));
        }
    std::printf("homogeneous: largest relative error of first-order fast marching beyond 10 cells %.4f\n", worst);
    // first-order upwinding overestimates oblique times by a few percent; never underestimates much
    EXPECT_LT(worst, 0.06);
    EXPECT_NEAR(f.time_at({4.0, 2.01}), s * (4.0 - 1.23), 1e-3 * s * 4.0);  // along a grid line: exact
}

TEST(Eikonal, RefractedArrivalBeatsTheDirectOne) {
    // a slow layer over a fast one: far from the source the head wave along the interface arrives first
    const Grid g{241, 81, 0.05, 0.05};
    const double slow = 1.0 / 1.0e8, fast = 1.0 / 2.0e8, depth = 1.0;
    std::vector<double> s(static_cast<std::size_t>(g.nx) * g.nz);
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) s[static_cast<std::size_t>(iz) * g.nx + ix] = iz * g.dz < depth ? slow : fast;
    const EikonalField f(g, s, {0.5, 0.0});
    const double x = 11.0;  // offset 10.5 m
    const double direct = slow * 10.5;
    const double crit = std::asin(fast / slow);  // sin(theta_c) = v1 / v2 = s2 / s1
    const double head = 2 * depth * slow / std::cos(crit) + (10.5 - 2 * depth * std::tan(crit)) * fast;
    std::printf("offset 10.5 m: direct %.4g s, head wave %.4g s, fast marching %.4g s\n", direct, head,
                f.time_at({x, 0.0}));
    EXPECT_LT(f.time_at({x, 0.0}), 0.8 * direct);
    EXPECT_NEAR(f.time_at({x, 0.0}) / head, 1.0, 0.04);
}

TEST(Eikonal, GradientPassesTheTaylorTest) {
    const Grid g{61, 47, 0.05, 0.04};
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> s(static_cast<std::size_t>(g.nx) * g.nz), ds(s.size());
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            const std::size_t i = static_cast<std::size_t>(iz) * g.nx + ix;
            s[i] = (1.0 + 0.3 * std::sin(0.21 * ix) * std::cos(0.17 * iz)) / 1.2e8;
            ds[i] = (u(rng) - 0.5) / 1.2e8;
        }
    const Position src{0.4, 0.9};
    std::vector<Position> receivers;
    std::vector<double> observed;
    for (int k = 0; k < 9; ++k) {
        receivers.push_back({2.7, 0.1 + 0.2 * k});
        observed.push_back(2.1e-8 + 1e-9 * k);
    }
    auto misfit = [&](const std::vector<double>& slow, std::vector<double>* residual) {
        const EikonalField f(g, slow, src);
        double j = 0;
        for (std::size_t k = 0; k < receivers.size(); ++k) {
            const double r = f.time_at(receivers[k]) - observed[k];
            j += 0.5 * r * r;
            if (residual) residual->push_back(r);
        }
        return j;
    };
    std::vector<double> residual;
    const double j0 = misfit(s, &residual);
    std::vector<double> grad(s.size(), 0.0);
    EikonalField(g, s, src).add_gradient(receivers, residual, grad);
    double slope = 0;
    for (std::size_t i = 0; i < s.size(); ++i) slope += grad[i] * ds[i];
    std::vector<double> remainders;
    for (double h : {1e-2, 5e-3, 2.5e-3}) {
        std::vector<double> sh(s);
        for (std::size_t i = 0; i < s.size(); ++i) sh[i] += h * ds[i];
        remainders.push_back(std::abs(misfit(sh, nullptr) - j0 - h * slope));
        std::printf("h %.4g: remainder %.3e (first-order term %.3e)\n", h, remainders.back(), std::abs(h * slope));
    }
    // second order: halving h quarters the remainder (upwind choices fixed at these small steps)
    EXPECT_LT(remainders[1], remainders[0] / 3.0);
    EXPECT_LT(remainders[2], remainders[1] / 3.0);
    // and a central difference agrees with the gradient's slope to its own third-order error
    const double h = 1e-4;
    std::vector<double> plus(s), minus(s);
    for (std::size_t i = 0; i < s.size(); ++i) {
        plus[i] += h * ds[i];
        minus[i] -= h * ds[i];
    }
    const double central = (misfit(plus, nullptr) - misfit(minus, nullptr)) / (2 * h);
    std::printf("central difference %.10e, gradient %.10e\n", central, slope);
    EXPECT_NEAR(central / slope, 1.0, 1e-6);
}

/// A smooth slowness with a fast and a slow zone, for the ray-integral tests.
std::vector<double> bumpy_slowness(const Grid& g) {
    std::vector<double> s(static_cast<std::size_t>(g.nx) * g.nz);
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix)
            s[static_cast<std::size_t>(iz) * g.nx + ix] =
                (1.0 + 0.3 * std::exp(-std::pow(ix - 30, 2) / 60.0 - std::pow(iz - 20, 2) / 40.0) -
                 0.2 * std::exp(-std::pow(ix - 15, 2) / 50.0 - std::pow(iz - 35, 2) / 50.0)) / 1.2e8;
    return s;
}

TEST(Eikonal, RayIntegralOfTheSlownessIsTheTime) {
    const Grid g{61, 47, 0.05, 0.04};
    const std::vector<double> s = bumpy_slowness(g);
    const EikonalField f(g, s, {0.4, 0.9});
    std::vector<Position> points;
    for (int k = 0; k < 9; ++k) points.push_back({2.7, 0.1 + 0.2 * k});
    points.push_back({0.45, 0.95});  // next to the source: the straight rays' seeds
    const std::vector<double> integral = f.ray_integrals(points, s);
    for (std::size_t k = 0; k < points.size(); ++k)
        EXPECT_NEAR(integral[k] / f.time_at(points[k]), 1.0, 1e-12) << "point " << k;
    // a quantity constant in a homogeneous medium: its integral is it times the ray's length, T / s
    const std::vector<double> flat(s.size(), 1.0 / 1.2e8), ones(s.size(), 0.37);
    const EikonalField h(g, flat, {0.4, 0.9});
    const std::vector<double> lengths = h.ray_integrals(points, ones);
    for (std::size_t k = 0; k < points.size(); ++k)
        EXPECT_NEAR(lengths[k], 0.37 * h.time_at(points[k]) * 1.2e8, 1e-12) << "point " << k;
}

TEST(Eikonal, RayIntegralsAreTheAdjointsTranspose) {
    const Grid g{61, 47, 0.05, 0.04};
    const std::vector<double> s = bumpy_slowness(g);
    const EikonalField f(g, s, {2.1, 0.3});
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> q(s.size());
    for (double& v : q) v = u(rng);
    std::vector<Position> points;
    std::vector<double> w;
    for (int k = 0; k < 12; ++k) {
        points.push_back({0.1 + 0.25 * k, 1.7 - 0.05 * k});
        w.push_back(u(rng));
    }
    const std::vector<double> lq = f.ray_integrals(points, q);
    std::vector<double> ltw(s.size(), 0.0);
    f.add_gradient(points, w, ltw);
    double a = 0, b = 0;
    for (std::size_t k = 0; k < points.size(); ++k) a += lq[k] * w[k];
    for (std::size_t i = 0; i < q.size(); ++i) b += q[i] * ltw[i];
    std::printf("<L q, w> %.15e, <q, L^T w> %.15e\n", a, b);
    EXPECT_NEAR(a / b, 1.0, 1e-12);
    EXPECT_THROW(f.ray_integrals(points, std::vector<double>(3, 1.0)), SizeMismatch);
}

TEST(Eikonal, RefusesSourcesOutsideAndWrongSizes) {
    const Grid g{10, 10, 0.1, 0.1};
    const std::vector<double> s(100, 1e-8);
    EXPECT_THROW(EikonalField(g, s, {2.0, 0.5}), PositionOutsideModel);
    EXPECT_THROW(EikonalField(g, std::vector<double>(99, 1e-8), {0.5, 0.5}), SizeMismatch);
}

}  // namespace
}  // namespace gprfwi
