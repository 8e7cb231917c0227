#include "gprfwi/point_weights.hpp"

#include <cmath>
#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"

namespace gprfwi {

PointInterpolation parse_point_interpolation(const std::string& name) {
    return kPointInterpolationNames.parse(name);
}
const char* to_string(PointInterpolation p) { return kPointInterpolationNames.name(p); }

double windowed_sinc(double u, int radius, double beta) {
    const double t = u / radius;
    if (std::abs(t) >= 1.0) return 0.0;
    const double sinc = u == 0.0 ? 1.0 : std::sin(kPi * u) / (kPi * u);
    const double window = std::cyl_bessel_i(0.0, beta * std::sqrt(1.0 - t * t)) / std::cyl_bessel_i(0.0, beta);
    return sinc * window;
}

namespace {

constexpr int kSincRadius = 4;
constexpr double kSincBeta = 6.31;  // Hicks (2002), table 2, radius 4
constexpr double kOnNode = 1e-9;    // offsets below this many nodes count as on the node

struct Taps {
    int first = 0;
    std::vector<double> w;
};

// 1D weights for fractional padded coordinate u.
Taps taps_1d(double u, PointInterpolation method) {
    const double nearest = std::round(u);
    if (std::abs(u - nearest) < kOnNode) return {static_cast<int>(nearest), {1.0}};
    const int base = static_cast<int>(std::floor(u));
    const double frac = u - base;
    if (method == PointInterpolation::bilinear) return {base, {1.0 - frac, frac}};
    Taps t{base - kSincRadius + 1, {}};
    for (int j = t.first; j <= base + kSincRadius; ++j) t.w.push_back(windowed_sinc(j - u, kSincRadius, kSincBeta));
    return t;
}

}  // namespace

std::vector<PointWeight> point_weights(const PaddedGrid& grid, const Position& p,
                                       PointInterpolation method, const std::string& what) {
    const Grid& g = grid.model;
    const double tol_x = 1e-9 * g.dx, tol_z = 1e-9 * g.dz;
    if (!std::isfinite(p.x) || !std::isfinite(p.z) || p.x < -tol_x || p.x > g.width_m() + tol_x ||
        p.z < -tol_z || p.z > g.depth_m() + tol_z)
        throw PositionOutsideModel(fmt::format(
            "{} at (x = {} m, z = {} m) is outside the model [0, {}] m x [0, {}] m", what, p.x, p.z,
            g.width_m(), g.depth_m()));
    const Taps tx = taps_1d(p.x / g.dx + grid.pml.left, method);
    const Taps tz = taps_1d(p.z / g.dz + grid.pml.top, method);
    std::vector<PointWeight> out;
    for (std::size_t jz = 0; jz < tz.w.size(); ++jz) {
        const int iz = tz.first + static_cast<int>(jz);
        if (iz < 0 || iz >= grid.nz) continue;  // only with a CPML narrower than the sinc radius
        for (std::size_t jx = 0; jx < tx.w.size(); ++jx) {
            const int ix = tx.first + static_cast<int>(jx);
            if (ix < 0 || ix >= grid.nx) continue;
            const double w = tz.w[jz] * tx.w[jx];
            if (w != 0.0) out.push_back({grid.index(iz, ix), w});
        }
    }
    return out;
}

}  // namespace gprfwi
