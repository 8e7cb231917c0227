#pragma once
// Regularisation terms of the inversion on a node grid, each returning its
// value and adding its gradient. Differences are forward differences between
// neighbouring nodes, in units per metre; sums are weighted by the cell area
// dx dz, so a term approximates an integral over the model and does not
// change with grid refinement.

#include "gprfwi/array2d.hpp"

namespace gprfwi {

/// Tikhonov smoothness: R = 1/2 sum (|dq/dx|^2 + |dq/dz|^2) dx dz.
double tikhonov(const Array2D& q, double dx, double dz, Array2D& gradient);

/// Total variation: R = sum sqrt(|dq/dx|^2 + |dq/dz|^2 + beta^2) dx dz, with
/// both differences taken forward from the same node (beta > 0, per metre,
/// keeps it differentiable where q is flat).
double total_variation(const Array2D& q, double dx, double dz, double beta, Array2D& gradient);

/// Adds the Tikhonov term's Hessian along dq into hv: the term is quadratic,
/// so it is its gradient at dq, whatever q.
void tikhonov_hessian(const Array2D& dq, double dx, double dz, Array2D& hv);

/// Adds total variation's Hessian at q along dq into hv, exactly: each
/// node's term n = sqrt(|a|^2 + beta^2), a its two forward differences, has
/// the Hessian D^T (I / n - a a^T / n^3) D, D the map from q to a (symmetric
/// positive semi-definite: the term is convex).
void total_variation_hessian(const Array2D& q, const Array2D& dq, double dx, double dz, double beta, Array2D& hv);

}  // namespace gprfwi
