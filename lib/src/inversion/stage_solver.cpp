#include "inversion/stage_solver.hpp"

#include <petsctao.h>

#include <utility>

#include <spdlog/spdlog.h>

#include "inversion/petsc_vectors.hpp"
#include "core/timing.hpp"

namespace gprfwi {

namespace {

/// The solver of a shell matrix or a shell preconditioner.
template <class Shell, class Get>
StageSolver& solver_of(Shell shell, Get get) {
    void* ctx = nullptr;
    get(shell, &ctx);
    return *static_cast<StageSolver*>(ctx);
}

PetscErrorCode form_function_gradient(Tao, Vec x, PetscReal* f, Vec g, void* ctx) {
    return static_cast<StageSolver*>(ctx)->evaluate(x, f, g);
}

PetscErrorCode form_hessian(Tao tao, Vec x, Mat, Mat, void* ctx) {
    return static_cast<StageSolver*>(ctx)->form_hessian(tao, x);
}

PetscErrorCode hessian_mult(Mat h, Vec in, Vec out) {
    return solver_of(h, MatShellGetContext).hessian_mult(in, out);
}

PetscErrorCode monitor(Tao tao, void* ctx) { return static_cast<StageSolver*>(ctx)->monitor(tao); }

PetscErrorCode apply_smoothing(PC pc, Vec in, Vec out) {
    return solver_of(pc, PCShellGetContext).apply_smoothing(in, out);
}

PetscErrorCode h0_mult(Mat h0, Vec in, Vec out) {
    // H0 = (gamma S)^-1 is never multiplied by L-BFGS's two-loop recursion;
    // should anything ask, 1/gamma is its scale on smooth vectors
    PetscCall(VecCopy(in, out));
    PetscCall(VecScale(out, 1.0 / solver_of(h0, MatShellGetContext).smoothing_gamma()));
    return 0;
}

/// TAO's types that keep to bounds (others leave the stage to clamp the model).
bool bounded_type(const std::string& t) {
    return t == TAOBLMVM || t == TAOBQNLS || t == TAOBQNKLS || t == TAOBQNKTR || t == TAOBQNKTL || t == TAOBNLS ||
           t == TAOBNTR || t == TAOBNTL || t == TAOTRON || t == TAOGPCG || t == TAOBNCG;
}

}  // namespace

StageSolver::StageSolver(const InversionSpec& spec, const StageSpec& stage, InversionMethod method,
                         StageSmoothing& smoothing, std::size_t whole_size, StageTimes& times,
                         std::exception_ptr& failure, StageProblem& problem,
                         std::chrono::steady_clock::time_point stage_start)
    : spec_(spec), stage_(stage), method_(method), smoothing_(smoothing), whole_size_(whole_size), times_(times),
      failure_(failure), problem_(problem), stage_start_(stage_start),
      newton_preconditioner_(smoothing, whole_size, stage.name, times.smoothing, failure) {}

StageSolver::~StageSolver() { release(); }

void StageSolver::release() {
    if (smoothing_h0_) MatDestroy(&smoothing_h0_);
    if (hessian_) MatDestroy(&hessian_);
    smoothing_on_ = false;
}

template <class Fn>
int StageSolver::guarded(Fn&& fn) {
    try {
        fn();
    } catch (...) {
        failure_ = std::current_exception();
        return PETSC_ERR_USER;
    }
    return 0;
}

int StageSolver::evaluate(Vec x, PetscReal* f, Vec g) {
    const ScopeTimer timer(times_.callbacks);
    const int rc = guarded([&] {
        gather_whole(x, x_whole_);
        g_whole_.resize(x_whole_.size());  // (the objective writes every entry)
        *f = problem_.objective(x_whole_, g_whole_);
        scatter_whole(g_whole_, g);
    });
    return rc != 0 || problem_.stopped() ? PETSC_ERR_USER : 0;
}

int StageSolver::form_hessian(Tao tao, Vec x) {
    return guarded([&] {
        gather_whole(x, hessian_x_);
        if (newton_preconditioner_.installed()) newton_preconditioner_.find_free_variables(tao, x);
    });
}

int StageSolver::hessian_mult(Vec in, Vec out) {
    const ScopeTimer timer(times_.callbacks);
    const int rc = guarded([&] {
        gather_whole(in, v_whole_);
        hv_whole_.assign(v_whole_.size(), 0.0);
        problem_.hessian_product(hessian_x_, v_whole_.data(), hv_whole_.data());
        scatter_whole(hv_whole_, out);
    });
    return rc != 0 || problem_.stopped() ? PETSC_ERR_USER : 0;
}

int StageSolver::monitor(Tao tao) {
    return guarded([&] {
        if (smoothing_on_) {
            const ScopeTimer timer(times_.smoothing);
            update_smoothing_scale(tao);
        }
        const ScopeTimer timer(times_.monitor);
        on_iteration(tao);
    });
}

int StageSolver::apply_smoothing(Vec in, Vec out) {
    const ScopeTimer timer(times_.smoothing);
    return guarded([&] {
        gather_whole(in, smooth_whole_);
        smoothing_.smooth(smooth_whole_);
        scatter_whole(smooth_whole_, out, smoothing_.gamma());
    });
}

void StageSolver::on_iteration(Tao tao) {
    PetscInt its = 0;
    PetscReal f = 0, gnorm = 0, cnorm = 0, xdiff = 0;
    TaoConvergedReason reason;
    GPRFWI_PETSC(TaoGetSolutionStatus(tao, &its, &f, &gnorm, &cnorm, &xdiff, &reason));
    if (its == 0) return;  // the starting point, which the stage recorded at its calibration
    TaoLineSearch ls;
    PetscReal step = 0;
    GPRFWI_PETSC(TaoGetLineSearch(tao, &ls));
    GPRFWI_PETSC(TaoLineSearchGetStepLength(ls, &step));
    Vec x;
    GPRFWI_PETSC(TaoGetSolution(tao, &x));
    gather_whole(x, x_whole_);
    const std::string why = problem_.accepted({static_cast<int>(its), f, gnorm, step, x_whole_});
    if (!why.empty()) {
        user_reason_ = why;
        GPRFWI_PETSC(TaoSetConvergedReason(tao, TAO_CONVERGED_USER));
    }
}

/// The smoothing's gamma from the latest accepted step.
void StageSolver::update_smoothing_scale(Tao tao) {
    Vec x, g;
    GPRFWI_PETSC(TaoGetSolution(tao, &x));
    GPRFWI_PETSC(TaoGetGradient(tao, &g, nullptr, nullptr));
    gather_whole(x, x_whole_);
    gather_whole(g, g_whole_);
    smoothing_.accept(x_whole_, g_whole_);
}

/// Newton-type methods: TAO's bounded Newton line search with the Hessian as
/// a shell, its inner CG truncated (inversion.newton) and preconditioned by
/// the updates' smoothing where the stage smooths and
/// inversion.newton.preconditioner asks for it (FreeVariableSmoothing), else
/// by TAO's own L-BFGS approximation.
void StageSolver::install_newton(Tao tao, Vec x) {
    GPRFWI_PETSC(TaoSetType(tao, TAOBNLS));
    PetscInt local = 0, global = 0;
    GPRFWI_PETSC(VecGetLocalSize(x, &local));
    GPRFWI_PETSC(VecGetSize(x, &global));
    GPRFWI_PETSC(MatCreateShell(PETSC_COMM_WORLD, local, local, global, global, this, &hessian_));
    GPRFWI_PETSC(MatShellSetOperation(hessian_, MATOP_MULT, reinterpret_cast<void (*)(void)>(&gprfwi::hessian_mult)));
    GPRFWI_PETSC(MatSetOption(hessian_, MAT_SYMMETRIC, PETSC_TRUE));
    GPRFWI_PETSC(TaoSetHessian(tao, hessian_, hessian_, &gprfwi::form_hessian, this));
    KSP ksp;
    GPRFWI_PETSC(TaoGetKSP(tao, &ksp));
    if (ksp) {
        GPRFWI_PETSC(KSPSetType(ksp, KSPSTCG));
        GPRFWI_PETSC(KSPSetTolerances(ksp, spec_.newton_cg_tolerance, PETSC_DEFAULT, PETSC_DEFAULT,
                                      spec_.newton_cg_iterations));
    }
    spdlog::info("stage {}: {} (TAO bnls), inner CG of at most {} Hessian-vector products to a relative residual of {}",
                 stage_.name, method_ == InversionMethod::newton ? "Newton" : "Gauss-Newton", spec_.newton_cg_iterations,
                 spec_.newton_cg_tolerance);
}

void StageSolver::install_smoothing(Tao tao, const std::string& type, Vec x) {
    if (type != TAOBLMVM && type != TAOLMVM) {
        spdlog::warn("stage {}: gradient smoothing needs TAO type blmvm or lmvm, not {}; not smoothing", stage_.name, type);
        return;
    }
    PetscInt local = 0, global = 0;
    GPRFWI_PETSC(VecGetLocalSize(x, &local));
    GPRFWI_PETSC(VecGetSize(x, &global));
    GPRFWI_PETSC(MatCreateShell(PETSC_COMM_WORLD, local, local, global, global, this, &smoothing_h0_));
    GPRFWI_PETSC(MatShellSetOperation(smoothing_h0_, MATOP_MULT, reinterpret_cast<void (*)(void)>(&gprfwi::h0_mult)));
    GPRFWI_PETSC(TaoLMVMSetH0(tao, smoothing_h0_));
    GPRFWI_PETSC(TaoSetUp(tao));  // gives the L-BFGS matrix its J0 and the KSP that applies J0^-1
    KSP ksp;
    PC pc;
    GPRFWI_PETSC(TaoLMVMGetH0KSP(tao, &ksp));
    GPRFWI_PETSC(KSPSetType(ksp, KSPPREONLY));
    GPRFWI_PETSC(KSPGetPC(ksp, &pc));
    GPRFWI_PETSC(PCSetType(pc, PCSHELL));
    GPRFWI_PETSC(PCShellSetContext(pc, this));
    GPRFWI_PETSC(PCShellSetApply(pc, &gprfwi::apply_smoothing));
    smoothing_on_ = true;
    smoothing_.restart();
    spdlog::info("stage {}: updates smoothed by Gaussians of {:.3g} m (eps_r) and {:.3g} m (sigma), L-BFGS's initial "
                 "inverse Hessian", stage_.name, smoothing_.length(0), smoothing_.length(1));
}

StageSolver::Configured StageSolver::set_options(Tao tao) {
    Configured c;
    // options of this TaoSetFromOptions alone, unless the PETSc options name them: L-BFGS's memory (BLMVM's
    // matrix is reached only through the options); in a Newton-type stage that smooths, TAO's active set
    // without Bertsekas' trial step (the free variables its CG runs on are then find_free_variables')
    std::vector<std::pair<std::string, std::string>> ours;
    if (spec_.lbfgs_history > 0) ours.emplace_back("-tao_blmvm_mat_lmvm_hist_size", std::to_string(spec_.lbfgs_history));
    const NewtonPreconditioner preconditioner = spec_.newton_preconditioner.value_or(
        method_ == InversionMethod::gauss_newton ? NewtonPreconditioner::smoothing : NewtonPreconditioner::lbfgs);
    c.newton_smooths = method_ != InversionMethod::lbfgs && smoothing_.wanted() &&
                       preconditioner == NewtonPreconditioner::smoothing;
    PetscBool as_type_given = PETSC_FALSE;
    GPRFWI_PETSC(PetscOptionsHasName(nullptr, nullptr, "-tao_bnk_as_type", &as_type_given));
    c.as_type_given = as_type_given == PETSC_TRUE;
    if (c.newton_smooths) ours.emplace_back("-tao_bnk_as_type", "none");
    std::vector<std::string> set;
    for (const auto& [name, value] : ours) {
        PetscBool given = PETSC_FALSE;
        GPRFWI_PETSC(PetscOptionsHasName(nullptr, nullptr, name.c_str(), &given));
        if (given) continue;
        GPRFWI_PETSC(PetscOptionsSetValue(nullptr, name.c_str(), value.c_str()));
        set.push_back(name);
    }
    const PetscErrorCode from_options = TaoSetFromOptions(tao);  // -tao_* from inversion.petsc_options and the command line
    for (const std::string& name : set) GPRFWI_PETSC(PetscOptionsClearValue(nullptr, name.c_str()));
    petsc_check(from_options, "TaoSetFromOptions(tao)");
    TaoType type = nullptr;
    GPRFWI_PETSC(TaoGetType(tao, &type));
    c.type = type ? type : "";
    spdlog::debug("stage {}: TAO type {}", stage_.name, type ? type : "?");
    const char* method_type = method_ == InversionMethod::lbfgs ? TAOBLMVM : TAOBNLS;
    if (type && c.type != method_type)
        spdlog::info("stage {}: TAO type {} (from the PETSc options){}", stage_.name, c.type,
                     bounded_type(c.type) ? "" : "; it ignores bounds, so the model is clamped to them instead");
    return c;
}

StageSolver::Outcome StageSolver::solve(const StageVariables& vars, const Model& model, int max_iterations) {
    const PetscInt n_total = static_cast<PetscInt>(whole_size_);
    Vec x, lo, hi;
    Tao tao;
    GPRFWI_PETSC(VecCreateMPI(PETSC_COMM_WORLD, PETSC_DECIDE, n_total, &x));
    GPRFWI_PETSC(VecDuplicate(x, &lo));
    GPRFWI_PETSC(VecDuplicate(x, &hi));
    // the starting point and the bounds, in the scaled variables: each rank its part
    {
        PetscInt first = 0, end = 0;
        GPRFWI_PETSC(VecGetOwnershipRange(x, &first, &end));
        PetscScalar *xa = nullptr, *la = nullptr, *ha = nullptr;
        GPRFWI_PETSC(VecGetArray(x, &xa));
        GPRFWI_PETSC(VecGetArray(lo, &la));
        GPRFWI_PETSC(VecGetArray(hi, &ha));
#pragma omp parallel for schedule(static)
        for (PetscInt j = first; j < end; ++j)
            vars.entry_of(model, static_cast<std::size_t>(j), xa[j - first], la[j - first], ha[j - first]);
        GPRFWI_PETSC(VecRestoreArray(x, &xa));
        GPRFWI_PETSC(VecRestoreArray(lo, &la));
        GPRFWI_PETSC(VecRestoreArray(hi, &ha));
    }
    GPRFWI_PETSC(TaoCreate(PETSC_COMM_WORLD, &tao));
    GPRFWI_PETSC(TaoSetType(tao, TAOBLMVM));
    if (method_ != InversionMethod::lbfgs) install_newton(tao, x);
    GPRFWI_PETSC(TaoSetSolution(tao, x));
    GPRFWI_PETSC(TaoSetVariableBounds(tao, lo, hi));
    GPRFWI_PETSC(TaoSetObjectiveAndGradient(tao, nullptr, &form_function_gradient, this));
    GPRFWI_PETSC(TaoSetMaximumIterations(tao, max_iterations));
    GPRFWI_PETSC(TaoSetMaximumFunctionEvaluations(
        tao, stage_.max_evaluations > 0 ? stage_.max_evaluations : 4 * max_iterations + 10));
    GPRFWI_PETSC(TaoSetTolerances(tao, 0.0, 0.0, stage_.gradient_tolerance));
    GPRFWI_PETSC(TaoSetMonitor(tao, &gprfwi::monitor, this, nullptr));
    const Configured c = set_options(tao);
    {  // (L-BFGS's memory allocated here or in install_smoothing, not in the first iteration: timed apart)
        const ScopeTimer timer(times_.optimiser_setup);
        if (smoothing_.wanted() && method_ == InversionMethod::lbfgs) install_smoothing(tao, c.type, x);
        GPRFWI_PETSC(TaoSetUp(tao));
        if (c.newton_smooths && c.type == TAOBNLS) {
            if (c.as_type_given)
                spdlog::warn("stage {}: -tao_bnk_as_type is given, so the updates' smoothing does not precondition "
                             "the Newton steps (it needs TAO's active set without a trial step)", stage_.name);
            else {
                newton_preconditioner_.install(tao);
                spdlog::info("stage {}: Newton steps preconditioned by Gaussians of {:.3g} m (eps_r) and {:.3g} m "
                             "(sigma), the updates' smoothing", stage_.name, smoothing_.length(0), smoothing_.length(1));
            }
        } else if (method_ != InversionMethod::lbfgs && smoothing_.wanted()) {
            spdlog::info("stage {}: the updates not smoothed: {} steps preconditioned by TAO's L-BFGS "
                         "(inversion.newton.preconditioner)", stage_.name, to_string(method_));
        }
    }
    times_.before_solve = seconds_since(stage_start_);
    times_.evaluations_before_solve = times_.evaluations;
    Outcome out;
    {
        const ScopeTimer timer(times_.solve);
        out.petsc_error = TaoSolve(tao);
    }
    TaoConvergedReason reason = TAO_CONTINUE_ITERATING;
    if (out.petsc_error == 0) TaoGetConvergedReason(tao, &reason);
    out.reason = reason == TAO_CONVERGED_USER ? user_reason_ : TaoConvergedReasons[reason];
    Vec xs;
    TaoGetSolution(tao, &xs);
    out.x = gather_whole(xs);
    TaoDestroy(&tao);
    release();
    VecDestroy(&lo);
    VecDestroy(&hi);
    VecDestroy(&x);
    return out;
}

}  // namespace gprfwi
