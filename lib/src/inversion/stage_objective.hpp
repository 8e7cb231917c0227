#pragma once
// An inversion stage's data misfit at a model (inversion.cpp's StageRun):
// the objective's evaluations with a one-entry cache, since TAO asks for the
// same model again (its line search's accepted point, a Newton iteration's
// gradient beside its products), and the count of propagations on which
// methods compare.

#include "gprfwi/array2d.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/model.hpp"

namespace gprfwi {

class StageObjective {
public:
    /// `objective` and `stage` must outlive this; the time spent in the
    /// objective's calls is added to `seconds`.
    StageObjective(InversionObjective& objective, const StageSpec& stage, double& seconds)
        : objective_(objective), stage_(stage), seconds_(seconds) {}

    /// The data misfit J at m; its gradient (per eps_r and per S/m) is then
    /// grad_eps_r() and grad_sigma(). The model of the last evaluation is
    /// not evaluated again; with `illumination`, m is evaluated afresh and
    /// the forward field's energy filled in.
    double evaluate(const Model& m, Array2D* illumination = nullptr);

    /// Whether the last evaluation was of m (its misfit and gradient held).
    bool holds(const Model& m) const;
    double misfit() const { return j_; }
    const Array2D& grad_eps_r() const { return ge_; }
    const Array2D& grad_sigma() const { return gs_; }

    /// The misfit's Hessian (kind) at m along (v_eps_r, v_sigma), into hv_*.
    void hessian_vector(const Model& m, const Array2D& v_eps_r, const Array2D& v_sigma, HessianKind kind,
                        Array2D& hv_eps_r, Array2D& hv_sigma);

    /// Evaluations and propagations (forward, Born or adjoint runs) so far.
    int evaluations() const { return evaluations_; }
    int propagations() const { return propagations_; }

private:
    InversionObjective& objective_;
    const StageSpec& stage_;
    double& seconds_;
    bool valid_ = false;
    Array2D eps_r_, sigma_;  // the model of the held evaluation (all that changes within a stage)
    Array2D ge_, gs_;
    double j_ = 0;
    int evaluations_ = 0, propagations_ = 0;
};

}  // namespace gprfwi
