#include "inversion/stage_newton.hpp"

#include <petsctao.h>

#include <fmt/format.h>

#include "gprfwi/error.hpp"
#include "inversion/petsc_vectors.hpp"
#include "core/timing.hpp"

namespace gprfwi {

namespace {

PetscErrorCode apply_shell(PC pc, Vec in, Vec out) {
    void* ctx = nullptr;
    PetscCall(PCShellGetContext(pc, &ctx));
    return static_cast<FreeVariableSmoothing*>(ctx)->apply_to(in, out);
}

}  // namespace

void FreeVariableSmoothing::install(Tao tao) {
    KSP ksp = nullptr;
    GPRFWI_PETSC(TaoGetKSP(tao, &ksp));
    if (!ksp) return;
    PC pc = nullptr;
    GPRFWI_PETSC(KSPGetPC(ksp, &pc));
    GPRFWI_PETSC(PCSetType(pc, PCSHELL));
    GPRFWI_PETSC(PCShellSetContext(pc, this));
    GPRFWI_PETSC(PCShellSetApply(pc, &apply_shell));
    GPRFWI_PETSC(PCShellSetName(pc, "gprfwi: the updates' smoothing on the free variables"));
    installed_ = true;
}

void FreeVariableSmoothing::find_free_variables(Tao tao, Vec x) {
    Vec lo = nullptr, hi = nullptr, g = nullptr;
    GPRFWI_PETSC(TaoGetVariableBounds(tao, &lo, &hi));
    GPRFWI_PETSC(TaoGetGradient(tao, &g, nullptr, nullptr));
    IS free = nullptr, all = nullptr;
    GPRFWI_PETSC(VecWhichInactive(lo, x, g, hi, PETSC_TRUE, &free));
    GPRFWI_PETSC(ISAllGather(free, &all));
    PetscInt n = 0;
    const PetscInt* idx = nullptr;
    GPRFWI_PETSC(ISGetSize(all, &n));
    GPRFWI_PETSC(ISGetIndices(all, &idx));
    free_.assign(idx, idx + n);  // (non-negative indices)
    GPRFWI_PETSC(ISRestoreIndices(all, &idx));
    ISDestroy(&all);
    ISDestroy(&free);
}

void FreeVariableSmoothing::apply(const std::vector<double>& r, std::vector<double>& z) const {
    if (r.size() != free_.size())
        throw Error(fmt::format("stage {}: the Newton CG runs on {} variables where {} are free (TAO estimated its "
                                "active set otherwise than expected)", stage_, r.size(), free_.size()));
    whole_.assign(whole_size_, 0.0);
    for (std::size_t k = 0; k < r.size(); ++k) whole_[free_[k]] = r[k];
    smoothing_.smooth(whole_);
    z.resize(r.size());
    for (std::size_t k = 0; k < r.size(); ++k) z[k] = whole_[free_[k]];
}

std::vector<double> FreeVariableSmoothing::apply(const std::vector<double>& r) const {
    std::vector<double> z;
    apply(r, z);
    return z;
}

int FreeVariableSmoothing::apply_to(Vec in, Vec out) {
    const ScopeTimer timer(seconds_);
    try {
        gather_whole(in, r_);
        apply(r_, z_);
        scatter_whole(z_, out);
    } catch (...) {
        failure_ = std::current_exception();
        return PETSC_ERR_USER;
    }
    return 0;
}

}  // namespace gprfwi
