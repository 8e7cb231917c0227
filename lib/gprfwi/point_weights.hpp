#pragma once
// Weights that place a point source on the grid and sample a receiver from it.
// Injection uses exactly the weights sampling uses, so one is the adjoint of the
// other. A point on a node reduces to that node for both methods.
//
//  - sinc: Kaiser-windowed sinc of radius 4 nodes in x and in z (Hicks 2002,
//          beta = 6.31), 8 x 8 nodes; nodes that fall outside the padded grid
//          are dropped (only possible with a CPML narrower than 4 cells).
//  - bilinear: the 4 surrounding nodes.

#include <cstddef>
#include <string>
#include <vector>

#include "gprfwi/grid.hpp"
#include "gprfwi/names.hpp"
#include "gprfwi/survey.hpp"

namespace gprfwi {

enum class PointInterpolation { sinc, bilinear };
inline constexpr NameTable<PointInterpolation, 2> kPointInterpolationNames{
    "point interpolation", {{{PointInterpolation::sinc, "sinc"}, {PointInterpolation::bilinear, "bilinear"}}}};

PointInterpolation parse_point_interpolation(const std::string& name);
const char* to_string(PointInterpolation p);

struct PointWeight {
    std::size_t index;  // storage index in the padded layout (PaddedGrid::index)
    double weight;
    bool operator==(const PointWeight&) const = default;
};

/// Weights of one point. Throws PositionOutsideModel (with the point, the
/// model extent and `what`, e.g. "shot 3 receiver 7") for a point outside
/// [0, (nx-1)dx] x [0, (nz-1)dz].
std::vector<PointWeight> point_weights(const PaddedGrid& grid, const Position& p,
                                       PointInterpolation method, const std::string& what);

/// 1D Kaiser-windowed sinc weight at offset u (in nodes) for radius r.
double windowed_sinc(double u, int radius, double beta);

}  // namespace gprfwi
