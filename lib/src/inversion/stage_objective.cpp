#include "inversion/stage_objective.hpp"

#include "parallel/parallel_arrays.hpp"
#include "core/timing.hpp"

namespace gprfwi {

bool StageObjective::holds(const Model& m) const {
    return valid_ && equal_parallel(m.eps_r, eps_r_) && equal_parallel(m.sigma, sigma_);
}

double StageObjective::evaluate(const Model& m, Array2D* illumination) {
    if (!illumination && holds(m)) return j_;
    valid_ = false;
    reshape(ge_, m.grid.nz, m.grid.nx);  // (the objective writes every node)
    reshape(gs_, m.grid.nz, m.grid.nx);
    {
        const ScopeTimer timer(seconds_);
        j_ = illumination ? objective_.evaluate_with_illumination(m, stage_, ge_, gs_, *illumination)
                          : objective_.evaluate(m, stage_, ge_, gs_);
    }
    ++evaluations_;
    propagations_ += objective_.evaluation_propagations(stage_);
    copy_parallel(m.eps_r, eps_r_);
    copy_parallel(m.sigma, sigma_);
    valid_ = true;
    return j_;
}

void StageObjective::hessian_vector(const Model& m, const Array2D& v_eps_r, const Array2D& v_sigma, HessianKind kind,
                                    Array2D& hv_eps_r, Array2D& hv_sigma) {
    const ScopeTimer timer(seconds_);
    propagations_ += objective_.hessian_vector(m, stage_, v_eps_r, v_sigma, kind, hv_eps_r, hv_sigma);
}

}  // namespace gprfwi
