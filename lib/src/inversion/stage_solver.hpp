#pragma once
// An inversion stage's TAO solve (inversion.cpp's StageRun): TAO's vectors,
// its type and options (L-BFGS's memory; for the Newton-type methods a shell
// Hessian and a truncated CG), the updates' smoothing as L-BFGS's initial
// inverse Hessian or as the Newton CG's preconditioner, and PETSc's
// callbacks, which ask the stage (a StageProblem) for what only it knows: the
// objective, Hessian-vector products, what an accepted iteration does. The
// stage sees whole std::vectors; PETSc's headers stay out of this one.

#include <chrono>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "gprfwi/inversion.hpp"
#include "inversion/stage_newton.hpp"
#include "inversion/stage_smoothing.hpp"
#include "inversion/stage_variables.hpp"

struct _p_Tao;  // PETSc's Tao, Vec and Mat
struct _p_Vec;
struct _p_Mat;

namespace gprfwi {

/// Where a stage's wall time went.
struct StageTimes {
    double evaluations = 0;      // s in the objective
    double writing = 0;          // s rank 0 spent handing files to the writer (or waiting for it)
    double optimiser_setup = 0;  // s in TaoSetUp (L-BFGS's vectors)
    double before_solve = 0;     // s from the stage's start to TaoSolve (calibration included)
    double evaluations_before_solve = 0;
    double callbacks = 0;        // s in TAO's calls of the objective and the Hessian (evaluations included)
    double smoothing = 0;        // s applying the smoothing preconditioner and updating its scale
    double monitor = 0;          // s in the iteration monitor (writing included)
    double solve = 0;            // s in TaoSolve
};

/// An accepted iteration, as TAO reports it.
struct AcceptedIteration {
    int iteration = 0;  // within this solve, from 1
    double f = 0, gradient_norm = 0, step = 0;
    const std::vector<double>& x;  // the whole vector
};

/// What the solver asks of its stage. Each call is collective.
class StageProblem {
public:
    virtual ~StageProblem() = default;
    /// f at x (the whole vector); its gradient into g (as long as x).
    virtual double objective(const std::vector<double>& x, std::vector<double>& g) = 0;
    /// out = (d2f/dx2 at `at`) v, out zeroed and as long as v.
    virtual void hessian_product(const std::vector<double>& at, const double* v, double* out) = 0;
    /// An accepted iteration; returns why the stage stops there ("" to go on).
    virtual std::string accepted(const AcceptedIteration& it) = 0;
    /// A signal stopped the stage: TAO's callbacks fail, so that TaoSolve returns.
    virtual bool stopped() const = 0;
};

class StageSolver {
public:
    /// `smoothing`, `times`, `failure` and `problem` must outlive this; an
    /// error inside a PETSc callback is kept in `failure` for the stage to
    /// rethrow; `stage_start` is when the stage began (times.before_solve).
    StageSolver(const InversionSpec& spec, const StageSpec& stage, InversionMethod method, StageSmoothing& smoothing,
                std::size_t whole_size, StageTimes& times, std::exception_ptr& failure, StageProblem& problem,
                std::chrono::steady_clock::time_point stage_start);
    StageSolver(const StageSolver&) = delete;
    StageSolver& operator=(const StageSolver&) = delete;
    ~StageSolver();

    struct Outcome {
        int petsc_error = 0;     // TaoSolve's code (0: it returned normally)
        std::string reason;      // why TAO stopped: the stage's reason, or TAO's
        std::vector<double> x;   // the solution, whole
    };
    /// Runs TAO for up to `max_iterations` from the variables of `model`
    /// within their bounds (vars maps them), collectively.
    Outcome solve(const StageVariables& vars, const Model& model, int max_iterations);

    // PETSc's callbacks (public for the C functions that forward to them)
    int evaluate(_p_Vec* x, double* f, _p_Vec* g);
    int form_hessian(_p_Tao* tao, _p_Vec* x);
    int hessian_mult(_p_Vec* in, _p_Vec* out);
    int monitor(_p_Tao* tao);
    int apply_smoothing(_p_Vec* in, _p_Vec* out);
    double smoothing_gamma() const { return smoothing_.gamma(); }

private:
    void install_newton(_p_Tao* tao, _p_Vec* x);
    void install_smoothing(_p_Tao* tao, const std::string& type, _p_Vec* x);
    /// What the options made of TAO.
    struct Configured {
        std::string type;            // TAO's type after the options
        bool newton_smooths = false; // the smoothing is to precondition the Newton CG
        bool as_type_given = false;  // -tao_bnk_as_type among the PETSc options
    };
    /// TAO's options of this stage, from inversion.petsc_options and ours
    /// (L-BFGS's memory; TAO's active set without a trial step where the
    /// smoothing preconditions the Newton CG).
    Configured set_options(_p_Tao* tao);
    void on_iteration(_p_Tao* tao);
    void update_smoothing_scale(_p_Tao* tao);
    void release();
    /// fn's error kept in failure_ for the stage: PETSc's user error, else 0.
    template <class Fn>
    int guarded(Fn&& fn);

    const InversionSpec& spec_;
    const StageSpec& stage_;
    InversionMethod method_;
    StageSmoothing& smoothing_;
    std::size_t whole_size_;
    StageTimes& times_;
    std::exception_ptr& failure_;
    StageProblem& problem_;
    std::chrono::steady_clock::time_point stage_start_;
    bool smoothing_on_ = false;         // L-BFGS's initial inverse Hessian is the smoothing
    std::string user_reason_;           // the stage's reason to stop
    _p_Mat* smoothing_h0_ = nullptr;    // L-BFGS's initial Hessian (a shell), while TAO runs
    _p_Mat* hessian_ = nullptr;         // the Newton-type methods' Hessian (a shell), while TAO runs
    std::vector<double> hessian_x_;     // the point TAO last asked the Hessian at
    // whole vectors, their memory reused by every call
    std::vector<double> x_whole_, g_whole_, smooth_whole_, v_whole_, hv_whole_;
    FreeVariableSmoothing newton_preconditioner_;
};

}  // namespace gprfwi
