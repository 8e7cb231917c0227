#pragma once
// An inversion stage's change of variables (inversion.cpp's StageRun): TAO's
// vector x holds one block of n values per active parameter, in order (0:
// eps_r, 1: sigma), with
//   eps_r = s_eps w_i x_i,   ln(sigma / sigma_ref) = s_sig w_i x_i,
// w_i the node's weight (the antenna taper, the mask, the illumination
// preconditioning), which scales each node's step; masked nodes (w_i below
// kMaskedWeight) stay where they are and their x, gradient and Hessian terms
// are 0.

#include <cstddef>
#include <utility>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/model.hpp"

namespace gprfwi {

/// A node whose weight is below this is masked: the stage leaves it alone.
inline constexpr double kMaskedWeight = 1e-3;
/// Whether a node of this weight is free (the stage may change it).
inline bool is_free(double weight) { return weight >= kMaskedWeight; }

/// Each node's weight of the update before any preconditioning: 1, but 0 in
/// spec.mask's regions and at the model's edges (spec.edges, but for free), and
/// sin^2(pi d / 2 r) within the taper's radius r of every antenna
/// (spec.taper_points, d the node's distance), the least where several reach.
std::vector<double> update_weights(const InversionSpec& spec, const Grid& grid);

/// The nodes the antenna taper alone holds: masked by update_weights(spec),
/// free without the taper (neither in spec.mask nor a fixed edge).
std::vector<std::size_t> taper_held_nodes(const InversionSpec& spec, const Grid& grid);

/// Gives each of the `held` nodes the mean of its free (is_free of `weight`)
/// left, right, upper and lower neighbours: eps_r's arithmetic mean and
/// sigma's geometric one (sigma is inverted as its logarithm), each only
/// where `eps_r` / `sigma` says. A node without a free neighbour keeps its
/// value. Returns how many nodes it filled.
std::size_t fill_held_nodes(const std::vector<std::size_t>& held, const std::vector<double>& weight, bool eps_r,
                            bool sigma, Model& m);

/// The largest weighted |dJ/d eps_r| and |sigma dJ/d sigma| over the free
/// nodes of a gradient (ge, gs) at m, each times the node's weight squared
/// (a unit step in x moves the node by that): what the calibration reads.
struct GradientPeaks {
    double eps_r = 0, sigma = 0;
};
GradientPeaks gradient_peaks(const std::vector<double>& weight, const std::vector<char>& masked, const Array2D& ge,
                             const Array2D& gs, const Model& m);

/// The scales (s_eps, s_sig): spec.scale_eps_r and spec.scale_sigma where
/// set, else calibrated on the first gradient's peaks (of J, not f = J /
/// j0), so that a unit step along -df/dx changes eps_r by
/// spec.calibration_eps_r_step * eps_ref, and ln(sigma) by
/// spec.calibration_sigma_step, at the node where it changes most; without
/// a gradient, those steps.
std::pair<double, double> calibrated_scales(const InversionSpec& spec, const GradientPeaks& peaks, double j0,
                                            double eps_ref);

/// The data's sensitivity to ln sigma against eps_r / eps_ref, from the
/// same peaks: max|sigma dJ/d sigma| / (eps_ref max|dJ/d eps_r|); 0 where J
/// does not change with eps_r.
double sigma_sensitivity(const GradientPeaks& peaks, double eps_ref);

/// Illumination preconditioning: the factor p_i = sqrt((1 + a) / (I_i /
/// I_max + a)) on node i's weight (1 at masked nodes), so that a gradient
/// step moves it p_i^2 times as much: the diagonal of (pseudo-Hessian +
/// a I_max)^-1 up to a constant, the forward field energy I (the same for
/// eps_r and sigma) standing in for the pseudo-Hessian's diagonal; I_max
/// over the free nodes. Empty where the free nodes have no energy.
std::vector<double> illumination_factors(const Array2D& illumination, const std::vector<char>& masked,
                                         double stabilization);

/// Edge nodes that follow an inner node (InversionSpec::edges, follow):
/// pairs (edge, inner), the edge taking the inner node's value.
using EdgeLinks = std::vector<std::pair<std::size_t, std::size_t>>;

/// The links of spec.edges on grid g: with `follow`, each outermost node
/// outside spec.mask to its nearest node one row or column in (a corner to
/// the diagonal one); else none, as on a grid under 3 nodes across.
EdgeLinks edge_links(const InversionSpec& spec, const Grid& g);

/// a[edge] = a[inner] for each link: the model the links define.
void follow_edges(const EdgeLinks& links, double* a);

/// Both parameters of `m` made to follow the links: every model the
/// campaign evaluates is formed so (its start, the scan's, the flood's
/// candidates, the taper's fill), as the stage's change of variables forms
/// its iterates.
void follow_edges(const EdgeLinks& links, Model& m);

/// A view of the change of variables: the stage owns the arrays, which must
/// outlive it. With edge links, a linked edge node (masked) takes its inner
/// node's value, direction and so on, and the inner node's derivatives gather
/// the edge's: the maps stay the exact derivatives of model_from_x.
struct StageVariables {
    const std::vector<int>& params;
    const std::vector<double>& weight;
    const std::vector<char>& masked;
    double s_eps = 0, s_sig = 0, eps_ref = 0, sigma_ref = 0;
    /// The bounds a model from x is clamped to: a bound mapped to x and back
    /// may miss it by a rounding.
    double eps_r_min = 0, eps_r_max = 0, sigma_min = 0, sigma_max = 0;
    const EdgeLinks* links = nullptr;  // none: every masked node keeps its value

    std::size_t nodes() const { return weight.size(); }
    /// x of node i's eps_r e, and of its sigma s (unmasked nodes).
    double x_of_eps(double e, std::size_t i) const { return e / (s_eps * weight[i]); }
    double x_of_sigma(double s, std::size_t i) const;

    /// Entry j of x at model m, and its bounds (0 at masked nodes, which the
    /// map leaves alone): the starting point, clamped to the bounds.
    void entry_of(const Model& m, std::size_t j, double& x, double& lo, double& hi) const;

    /// The active parameters of m from x; their masked nodes keep m's values,
    /// or take base's where given, but for linked edges, which follow.
    void model_from_x(const double* x, Model& m, const Model* base = nullptr) const;

    /// The model's direction (d eps_r, d sigma) along x's direction v at m
    /// (ve and vs shaped like m; an inactive parameter's left as it is).
    void direction_to_model(const double* v, const Model& m, Array2D& ve, Array2D& vs) const;

    /// gx = dJ/dx / j0 from the model-space gradient (ge, gs) of J at m.
    void gradient_to_x(const Array2D& ge, const Array2D& gs, const Model& m, double j0, double* gx) const;

    /// out = d2J/dx2 v / j0 from the model-space Hessian product (he, hs) of J
    /// at m along direction_to_model(v); with `curvature`, plus the map's own
    /// second derivative (sigma's exponential: dJ/dsigma d2sigma/dx2 v, gs
    /// the model-space gradient), which Gauss-Newton leaves out.
    void hessian_to_x(const Array2D& he, const Array2D& hs, const Model& m, double j0, const double* v,
                      const Array2D* curvature, double* out) const;

    /// One parameter's block `out` of a derivative in x from its model-space
    /// terms, set (or, with `add`, added to): term(from, i) is what model node
    /// `from` gives free node i; masked nodes get nothing, and each linked
    /// edge's term goes to its inner node, whose value it takes (the transpose
    /// of following).
    template <typename Term>
    void collect(double* out, bool add, const Term& term) const {
        const std::size_t n = nodes();
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) {
            const double t = masked[i] ? 0.0 : term(i, i);
            out[i] = add ? out[i] + t : t;
        }
        if (links)
            for (const auto& [e, i] : *links)
                if (!masked[i]) out[i] += term(e, i);
    }
};

}  // namespace gprfwi
