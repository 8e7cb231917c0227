#pragma once
// The updates' smoothing of an inversion stage (inversion.cpp's StageRun):
// L-BFGS's initial inverse Hessian gamma S, with S a Gaussian per active
// parameter (two passes of sd / sqrt 2 with zeros beyond the edges, so S =
// T T with T symmetric: positive semi-definite, as BFGS needs; block
// diagonal over the parameters) and gamma = s'y / y'Sy from the latest
// accepted step, the scaling standard L-BFGS gives its initial matrix.

#include <vector>

#include "gprfwi/grid.hpp"
#include "gprfwi/inversion.hpp"

namespace gprfwi {

class StageSmoothing {
public:
    /// The stage's lengths (a stage's own, else the campaign's) for its
    /// active parameters `params` (0: eps_r, 1: sigma; one block of nodes of
    /// `grid` each in the vectors below).
    /// (params must outlive this.)
    StageSmoothing(const InversionSpec& spec, const StageSpec& stage, const Grid& grid, const std::vector<int>& params);

    /// The standard deviation of parameter p's smoothing, m.
    double length(int p) const;
    /// Whether any active parameter is smoothed.
    bool wanted() const;

    /// x = S x (passes 2), or x = T x (passes 1), over the whole vector.
    void smooth(std::vector<double>& x, int passes = 2) const;

    /// From the next accepted iterate x and its gradient g (both spent:
    /// they become the last ones), gamma = s'y / y'Sy with s and y their
    /// changes from the last ones (kept when the step has no curvature).
    void accept(std::vector<double>& x, std::vector<double>& g);
    double gamma() const { return gamma_; }
    /// Forgets the iterates and sets gamma to 1 (a stage's start).
    void restart();

private:
    const InversionSpec& spec_;
    const StageSpec& stage_;
    Grid grid_;
    const std::vector<int>& params_;
    double gamma_ = 1.0;
    std::vector<double> last_x_, last_g_;
};

}  // namespace gprfwi
