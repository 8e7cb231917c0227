#pragma once
// First-arrival traveltimes on the model grid, and their exact adjoint.
//
//   |grad T| = s        s = sqrt(eps_r mu_r) / c0, the slowness (s/m) at each node
//
// solved by first-order fast marching (Sethian 1996) from a point source:
// nodes within kSourceRadius cells of the source take T = s_node |x - x_src|
// (straight rays in the node's own slowness), then each node is accepted in
// order of arrival with the upwind update
//
//   ((T - a) / dx)^2 + ((T - b) / dz)^2 = s^2     (a, b: the smaller accepted
//   neighbour in x and in z; one-sided T = a + s dx or b + s dz where the
//   two-sided root does not exist or lies below max(a, b))
//
// Receivers read T by bilinear interpolation. The adjoint (the discrete
// adjoint state: one sweep over the accepted nodes in reverse order of
// arrival) gives the exact gradient of any function of the receivers' times
// with respect to every node's slowness, for the upwind choices of the solve
// (which change only where two arrivals tie). Assumptions: sources and
// receivers inside the model; the model's own grid (no CPML).

#include <cstddef>
#include <span>
#include <vector>

#include "gprfwi/grid.hpp"
#include "gprfwi/survey.hpp"

namespace gprfwi {

/// Nodes within this many cells of a source (in x and z) start from straight rays.
inline constexpr int kEikonalSourceRadius = 2;

/// The traveltimes from one source, with what the adjoint needs: the order
/// in which nodes were accepted and the derivatives of each node's update.
class EikonalField {
public:
    /// Fast marching on grid g with slowness s (s/m, [nz][nx] row-major) from `source`.
    EikonalField(const Grid& g, std::span<const double> slowness, const Position& source);

    /// Traveltime at every node, s.
    const std::vector<double>& times() const { return t_; }
    /// Traveltime at a point (bilinear interpolation).
    double time_at(const Position& p) const;

    /// Adds to grad_s (per node) the gradient of sum_k w_k T(p_k) with respect
    /// to the slowness: the adjoint of time_at for each point, then of the march.
    void add_gradient(std::span<const Position> points, std::span<const double> weights,
                      std::span<double> grad_s) const;

    /// The derivative of T(p_k) in the direction q (per node), for each point:
    /// sum_i dT(p_k)/ds_i q_i, the march's tangent linear model (add_gradient
    /// is its adjoint). T is homogeneous of degree one in s (every update and
    /// the straight rays scale with s), so dT/ds_i is the length of the ray to
    /// p_k within node i and this is the integral of q along the ray; with
    /// q = s it is T(p_k) itself.
    std::vector<double> ray_integrals(std::span<const Position> points, std::span<const double> q) const;

private:
    struct Update {  // T of node i as a function of its upwind neighbours' T and its slowness
        int x_neighbour = -1, z_neighbour = -1;  // node indices (-1: not used)
        double dt_dx = 0, dt_dz = 0, dt_ds = 0;
    };
    /// The four nodes around p and their bilinear weights.
    void corners(const Position& p, int (&node)[4], double (&w)[4]) const;

    Grid g_;
    std::vector<double> t_;
    std::vector<int> order_;  // nodes in order of acceptance
    std::vector<Update> update_;
};

}  // namespace gprfwi
