#pragma once
// The regularisation of an inversion stage's active parameters, in the
// stage's optimisation variables x (inversion.cpp's StageRun): each
// parameter's regulariser measures q = eps_r / eps_ref or ln(sigma /
// sigma_ref), which is linear in x where x moves the model (dq/dx = s_eps w /
// eps_ref or s_sig w, w the node's weight; 0 where the node is masked).

#include <cstddef>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/model.hpp"
#include "inversion/stage_variables.hpp"

namespace gprfwi {

class StageRegularization {
public:
    /// The weights and sigma's floor come from `spec` (regularize_eps_r,
    /// regularize_sigma, sigma_min), which must outlive this.
    explicit StageRegularization(const InversionSpec& spec) : spec_(spec) {}

    /// sigma's total variation at this share of spec's weight (1 until set).
    void set_sigma_tv_share(double share) { sigma_tv_share_ = share; }

    /// The regularisation at model m; adds its gradient in x into gx (when
    /// non-null).
    double value(const Model& m, const StageVariables& v, double* gx) const;

    /// out += its Hessian in x along direction d (analytic: each term's
    /// Hessian in q along dq, mapped back as the gradient is).
    void hessian(const Model& m, const StageVariables& v, const double* d, double* out) const;

private:
    /// What parameter k's regulariser measures at m, into q (sigma may be 0
    /// in masked nodes, air: the logarithm starts at the lower bound).
    void quantity(const Model& m, const StageVariables& v, std::size_t k, Array2D& q) const;
    /// Parameter k's regulariser, sigma's total variation at its share.
    RegularizationSpec weights(const StageVariables& v, std::size_t k) const;

    const InversionSpec& spec_;
    double sigma_tv_share_ = 1;
    /// Arrays of the model's shape reused from one call to the next (fresh
    /// ones would be zeroed on one thread).
    struct Scratch {
        Array2D q, dq, sum, part;
    };
    mutable Scratch scratch_;
};

}  // namespace gprfwi
