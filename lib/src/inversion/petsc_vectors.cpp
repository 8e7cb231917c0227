#include "inversion/petsc_vectors.hpp"

#include <mpi.h>

#include <fmt/format.h>

#include "gprfwi/error.hpp"
#include "gprfwi/parallel.hpp"
#include "parallel/parallel_arrays.hpp"

namespace gprfwi {

void petsc_check(PetscErrorCode code, const char* what) {
    if (code != 0) throw Error(fmt::format("PETSc: {} failed (error code {})", what, static_cast<int>(code)));
}

void gather_whole(Vec x, std::vector<double>& out) {
    PetscInt n = 0, lo = 0, hi = 0;
    GPRFWI_PETSC(VecGetSize(x, &n));
    GPRFWI_PETSC(VecGetOwnershipRange(x, &lo, &hi));
    const PetscInt* ranges = nullptr;
    GPRFWI_PETSC(VecGetOwnershipRanges(x, &ranges));
    const PetscScalar* a = nullptr;
    GPRFWI_PETSC(VecGetArrayRead(x, &a));
    const int ranks = parallel::place().size;
    out.resize(static_cast<std::size_t>(n));
    if (ranks == 1) {
        copy_parallel(a, out.size(), out.data());
    } else {
        std::vector<int> counts(static_cast<std::size_t>(ranks)), offsets(static_cast<std::size_t>(ranks));
        for (int r = 0; r < ranks; ++r) {
            offsets[static_cast<std::size_t>(r)] = static_cast<int>(ranges[r]);
            counts[static_cast<std::size_t>(r)] = static_cast<int>(ranges[r + 1] - ranges[r]);
        }
        const int rc = MPI_Allgatherv(a, static_cast<int>(hi - lo), MPI_DOUBLE, out.data(), counts.data(),
                                      offsets.data(), MPI_DOUBLE, PETSC_COMM_WORLD);
        if (rc != MPI_SUCCESS) throw Error("inversion: MPI_Allgatherv of the optimisation vector failed");
    }
    GPRFWI_PETSC(VecRestoreArrayRead(x, &a));
}

std::vector<double> gather_whole(Vec x) {
    std::vector<double> out;
    gather_whole(x, out);
    return out;
}

void scatter_whole(const std::vector<double>& v, Vec out, double scale) {
    PetscInt lo = 0, hi = 0;
    GPRFWI_PETSC(VecGetOwnershipRange(out, &lo, &hi));
    PetscScalar* a = nullptr;
    GPRFWI_PETSC(VecGetArray(out, &a));
#pragma omp parallel for schedule(static)
    for (PetscInt i = lo; i < hi; ++i) a[i - lo] = scale * v[static_cast<std::size_t>(i)];
    GPRFWI_PETSC(VecRestoreArray(out, &a));
}

}  // namespace gprfwi
