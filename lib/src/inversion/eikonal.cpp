// First-order fast marching and its adjoint (see eikonal.hpp for the scheme).

#include "gprfwi/eikonal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi {

namespace {
constexpr double kFar = std::numeric_limits<double>::infinity();
}  // namespace

EikonalField::EikonalField(const Grid& g, std::span<const double> s, const Position& src)
    : g_(g), t_(static_cast<std::size_t>(g.nx) * g.nz, kFar), update_(t_.size()) {
    if (s.size() != t_.size())
        throw SizeMismatch(fmt::format("eikonal: {} slowness values for a grid of {} x {} nodes", s.size(), g.nx, g.nz));
    if (!(src.x >= 0 && src.x <= g.width_m() && src.z >= 0 && src.z <= g.depth_m()))
        throw PositionOutsideModel(fmt::format("eikonal: source ({}, {}) m is outside the model", src.x, src.z));
    const auto at = [&](int iz, int ix) { return static_cast<std::size_t>(iz) * g.nx + ix; };
    std::vector<char> accepted(t_.size(), 0);
    using Entry = std::pair<double, int>;  // (T, node), the smallest first; stale entries skipped
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> trial;

    // straight rays around the source, accepted at once
    const int cx = static_cast<int>(std::floor(src.x / g.dx)), cz = static_cast<int>(std::floor(src.z / g.dz));
    std::vector<int> seeds;
    for (int iz = std::max(0, cz - kEikonalSourceRadius + 1); iz <= std::min(g.nz - 1, cz + kEikonalSourceRadius); ++iz)
        for (int ix = std::max(0, cx - kEikonalSourceRadius + 1); ix <= std::min(g.nx - 1, cx + kEikonalSourceRadius); ++ix) {
            const std::size_t i = at(iz, ix);
            const double d = std::hypot(ix * g.dx - src.x, iz * g.dz - src.z);
            t_[i] = s[i] * d;
            update_[i] = {-1, -1, 0.0, 0.0, d};
            seeds.push_back(static_cast<int>(i));
        }
    std::sort(seeds.begin(), seeds.end(), [&](int a, int b) { return t_[a] < t_[b]; });

    const double ax = 1.0 / (g.dx * g.dx), az = 1.0 / (g.dz * g.dz);
    // the update of node (iz, ix) from its accepted neighbours; true when it lowers T there
    auto relax = [&](int iz, int ix) {
        const std::size_t i = at(iz, ix);
        int nx_best = -1, nz_best = -1;
        double a = kFar, b = kFar;
        for (int d : {-1, 1}) {
            const int jx = ix + d, jz = iz + d;
            if (jx >= 0 && jx < g.nx && accepted[at(iz, jx)] && t_[at(iz, jx)] < a) {
                a = t_[at(iz, jx)];
                nx_best = static_cast<int>(at(iz, jx));
            }
            if (jz >= 0 && jz < g.nz && accepted[at(jz, ix)] && t_[at(jz, ix)] < b) {
                b = t_[at(jz, ix)];
                nz_best = static_cast<int>(at(jz, ix));
            }
        }
        Update u;
        double t = kFar;
        if (nx_best >= 0 && nz_best >= 0) {
            const double disc = (ax + az) * s[i] * s[i] - ax * az * (a - b) * (a - b);
            if (disc >= 0) {
                const double root = (ax * a + az * b + std::sqrt(disc)) / (ax + az);
                if (root >= std::max(a, b)) {
                    t = root;
                    const double d = ax * (t - a) + az * (t - b);  // (half of dF/dT)
                    u = {nx_best, nz_best, ax * (t - a) / d, az * (t - b) / d, s[i] / d};
                }
            }
        }
        if (t == kFar) {  // one-sided: the cheaper of the two directions
            const double tx = nx_best >= 0 ? a + s[i] * g.dx : kFar, tz = nz_best >= 0 ? b + s[i] * g.dz : kFar;
            if (tx <= tz) {
                t = tx;
                u = {nx_best, -1, 1.0, 0.0, g.dx};
            } else {
                t = tz;
                u = {-1, nz_best, 0.0, 1.0, g.dz};
            }
        }
        if (t < t_[i]) {
            t_[i] = t;
            update_[i] = u;
            trial.emplace(t, static_cast<int>(i));
        }
    };
    auto accept = [&](int i) {
        accepted[static_cast<std::size_t>(i)] = 1;
        order_.push_back(i);
        const int iz = i / g.nx, ix = i % g.nx;
        for (int d : {-1, 1}) {
            if (ix + d >= 0 && ix + d < g.nx && !accepted[at(iz, ix + d)]) relax(iz, ix + d);
            if (iz + d >= 0 && iz + d < g.nz && !accepted[at(iz + d, ix)]) relax(iz + d, ix);
        }
    };
    order_.reserve(t_.size());
    for (int i : seeds) accepted[static_cast<std::size_t>(i)] = 1;  // (all of them before any relaxes its neighbours)
    for (int i : seeds) accept(i);
    while (!trial.empty()) {
        const auto [t, i] = trial.top();
        trial.pop();
        if (accepted[static_cast<std::size_t>(i)] || t != t_[static_cast<std::size_t>(i)]) continue;  // stale
        accept(i);
    }
}

void EikonalField::corners(const Position& p, int (&node)[4], double (&w)[4]) const {
    const double fx = std::clamp(p.x / g_.dx, 0.0, static_cast<double>(g_.nx - 1));
    const double fz = std::clamp(p.z / g_.dz, 0.0, static_cast<double>(g_.nz - 1));
    const int ix = std::min(static_cast<int>(fx), std::max(g_.nx - 2, 0));
    const int iz = std::min(static_cast<int>(fz), std::max(g_.nz - 2, 0));
    const int ix1 = std::min(ix + 1, g_.nx - 1), iz1 = std::min(iz + 1, g_.nz - 1);
    const double u = fx - ix, v = fz - iz;
    node[0] = iz * g_.nx + ix;
    node[1] = iz * g_.nx + ix1;
    node[2] = iz1 * g_.nx + ix;
    node[3] = iz1 * g_.nx + ix1;
    w[0] = (1 - u) * (1 - v);
    w[1] = u * (1 - v);
    w[2] = (1 - u) * v;
    w[3] = u * v;
}

double EikonalField::time_at(const Position& p) const {
    int node[4];
    double w[4];
    corners(p, node, w);
    double t = 0;
    for (int k = 0; k < 4; ++k) t += w[k] * t_[static_cast<std::size_t>(node[k])];
    return t;
}

void EikonalField::add_gradient(std::span<const Position> points, std::span<const double> weights,
                                std::span<double> grad_s) const {
    if (grad_s.size() != t_.size() || points.size() != weights.size())
        throw SizeMismatch("EikonalField::add_gradient: sizes do not match the grid or the points");
    std::vector<double> lambda(t_.size(), 0.0);  // dJ/dT at each node
    for (std::size_t k = 0; k < points.size(); ++k) {
        int node[4];
        double w[4];
        corners(points[k], node, w);
        for (int c = 0; c < 4; ++c) lambda[static_cast<std::size_t>(node[c])] += weights[k] * w[c];
    }
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {  // reverse order of arrival
        const std::size_t i = static_cast<std::size_t>(*it);
        const double l = lambda[i];
        if (l == 0) continue;
        const Update& u = update_[i];
        grad_s[i] += l * u.dt_ds;
        if (u.x_neighbour >= 0) lambda[static_cast<std::size_t>(u.x_neighbour)] += l * u.dt_dx;
        if (u.z_neighbour >= 0) lambda[static_cast<std::size_t>(u.z_neighbour)] += l * u.dt_dz;
    }
}

std::vector<double> EikonalField::ray_integrals(std::span<const Position> points, std::span<const double> q) const {
    if (q.size() != t_.size()) throw SizeMismatch("EikonalField::ray_integrals: q does not match the grid");
    std::vector<double> dt(t_.size(), 0.0);  // dT at each node, in order of arrival
    for (const int node : order_) {
        const std::size_t i = static_cast<std::size_t>(node);
        const Update& u = update_[i];
        double v = u.dt_ds * q[i];
        if (u.x_neighbour >= 0) v += u.dt_dx * dt[static_cast<std::size_t>(u.x_neighbour)];
        if (u.z_neighbour >= 0) v += u.dt_dz * dt[static_cast<std::size_t>(u.z_neighbour)];
        dt[i] = v;
    }
    std::vector<double> out;
    out.reserve(points.size());
    for (const Position& p : points) {
        int node[4];
        double w[4];
        corners(p, node, w);
        double v = 0;
        for (int c = 0; c < 4; ++c) v += w[c] * dt[static_cast<std::size_t>(node[c])];
        out.push_back(v);
    }
    return out;
}

}  // namespace gprfwi
