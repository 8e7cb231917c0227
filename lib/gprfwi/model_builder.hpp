#pragma once
// Models for synthetic studies: regions (layers, circles, rectangles,
// polygons) painted over a background, and Gaussian smoothing (for starting
// models and for conditioning gradients).

#include <optional>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/survey.hpp"

namespace gprfwi {

/// A region of the model with its own values; unset values keep what is there.
struct ModelRegion {
    enum class Kind { layer, circle, rectangle, polygon };
    Kind kind = Kind::layer;
    double top = 0, bottom = 1e300;  // layer: top <= z < bottom, m
    Position center;                 // circle, m
    double radius = 0;               // circle, m
    Position from, to;               // rectangle: opposite corners, m
    std::vector<Position> points;    // polygon vertices, m (even-odd rule, edges inside)
    std::optional<double> eps_r, sigma, mu_r;

    /// Whether the point (x, z), in metres, lies inside: boundary included for
    /// circles, rectangles and polygons; a layer holds its top, not its bottom.
    bool contains(double x, double z) const;
};

/// Paints each region over the model, in order (later regions win).
void paint_regions(Model& model, const std::vector<ModelRegion>& regions);

/// 1 for each node of grid g (row-major, z outer) inside any of the regions,
/// else 0: the nodes an inversion's mask holds fixed.
std::vector<char> nodes_in_regions(const Grid& g, const std::vector<ModelRegion>& regions);

/// What lies beyond the array's edges for smoothing: its edge values
/// (a constant array stays constant; for models), or zeros (the operator is
/// then symmetric; for preconditioners).
enum class SmoothingEdges { extend, zero };

/// Gaussian smoothing with standard deviations sx and sz in nodes (0: none
/// along that axis), separable: along x, then along z; kernels reach 4
/// standard deviations and sum to 1.
void smooth_gaussian(Array2D& a, double sx_nodes, double sz_nodes, SmoothingEdges edges = SmoothingEdges::extend);
/// The same on an [nz][nx] row-major block.
void smooth_gaussian(double* a, int nz, int nx, double sx_nodes, double sz_nodes, SmoothingEdges edges);

}  // namespace gprfwi
