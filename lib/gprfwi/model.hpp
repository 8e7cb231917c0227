#pragma once
// Material model on the grid nodes.

#include <cstdint>

#include "gprfwi/array2d.hpp"
#include "gprfwi/grid.hpp"

namespace gprfwi {

/// What one pass over a valid model's arrays finds (Model::checked).
struct ModelCheck {
    double min_eps_mu = 0;  // least eps_r*mu_r
    /// The sum (mod 2^64) over the nodes of their three values' bit patterns
    /// XORed: equal for models of the same bits, so a hint that a model came
    /// again, never a proof that it did.
    std::uint64_t bits_sum = 0;
};

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
    /// validate(), min_eps_mu() and ModelCheck::bits_sum in one pass over the arrays.
    ModelCheck checked() const;
    double max_eps_mu() const;  // max over nodes of eps_r*mu_r
};

}  // namespace gprfwi
