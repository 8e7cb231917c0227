#pragma once
// Material model on the grid nodes.

#include "gprfwi/array2d.hpp"
#include "gprfwi/grid.hpp"

namespace gprfwi {

struct Model {
    Grid grid;
    Array2D eps_r;  // relative permittivity, >= 1
    Array2D sigma;  // conductivity, S/m, >= 0
    Array2D mu_r;   // relative permeability, > 0

    /// A homogeneous model.
    static Model uniform(const Grid& g, double eps_r, double sigma, double mu_r = 1.0);

    /// Throws SizeMismatch or InvalidArgument (naming the node and value) for
    /// arrays that do not match the grid or values outside the physical range.
    void validate() const;

    double min_eps_mu() const;  // min over nodes of eps_r*mu_r
    /// validate() and min_eps_mu() in one pass over the arrays.
    double checked_min_eps_mu() const;
    double max_eps_mu() const;  // max over nodes of eps_r*mu_r
};

}  // namespace gprfwi
