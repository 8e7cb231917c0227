#pragma once
// The updates' smoothing as the preconditioner of a Newton-type stage's
// conjugate gradients (inversion.cpp's StageRun; docs/inversion.md,
// "Methods"). TAO's bounded Newton line search (BNLS) runs its CG on the
// free variables only, so the preconditioner is z = P' S P r: the free
// entries r placed in the whole vector (zero elsewhere), smoothed by the
// stage's S, and read back. Symmetric positive semi-definite as S is, so a
// CG preconditioner; its steps are then as smooth as L-BFGS's.

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "inversion/stage_smoothing.hpp"

struct _p_Tao;  // PETSc's Tao and Vec (their headers stay out of this one)
struct _p_Vec;

namespace gprfwi {

class FreeVariableSmoothing {
public:
    /// `smoothing` must outlive this; `whole_size` is the length of TAO's
    /// vector; the time spent applying it is added to `seconds`; an error
    /// inside PETSc's callback is kept in `failure` (the stage rethrows it).
    FreeVariableSmoothing(const StageSmoothing& smoothing, std::size_t whole_size, std::string stage_name,
                          double& seconds, std::exception_ptr& failure)
        : smoothing_(smoothing), whole_size_(whole_size), stage_(std::move(stage_name)), seconds_(seconds),
          failure_(failure) {}

    /// Makes this the preconditioner of tao's CG (after TaoSetUp). Needs
    /// -tao_bnk_as_type none for the stage, so that TAO's free variables
    /// are those find_free_variables finds.
    void install(_p_Tao* tao);
    bool installed() const { return installed_; }

    /// The free variables at x, where TAO forms the Hessian: those that
    /// VecWhichInactive finds from the bounds, x and TAO's projected gradient
    /// (zero where a bound is active), as TAO's own active-set estimate
    /// without Bertsekas' trial step. Collective.
    void find_free_variables(_p_Tao* tao, _p_Vec* x);
    /// Sets them (whole-vector indices, ascending), as find_free_variables does.
    void set_free_variables(std::vector<std::size_t> free) { free_ = std::move(free); }

    /// z = P' S P r for r over the free variables; throws Error where r does
    /// not have their count (TAO estimated its active set otherwise). The
    /// whole vector it smooths is kept from product to product.
    void apply(const std::vector<double>& r, std::vector<double>& z) const;
    std::vector<double> apply(const std::vector<double>& r) const;

    /// PETSc's callback: z into `out` for r in `in` (collective); 0, or
    /// PETSc's user error with the exception kept.
    int apply_to(_p_Vec* in, _p_Vec* out);

private:
    const StageSmoothing& smoothing_;
    std::size_t whole_size_;
    std::string stage_;
    double& seconds_;
    std::exception_ptr& failure_;
    std::vector<std::size_t> free_;
    bool installed_ = false;
    mutable std::vector<double> whole_;  // P r on the whole vector, smoothed in place
    std::vector<double> r_, z_;          // the CG's vectors over the free variables, gathered
};

}  // namespace gprfwi
