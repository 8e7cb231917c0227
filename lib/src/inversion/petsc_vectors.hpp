#pragma once
// TAO's vectors as whole std::vectors on every rank (inversion.cpp's stages
// and their preconditioners), and PETSc's error codes as exceptions.

#include <petscvec.h>

#include <vector>

namespace gprfwi {

/// Throws Error naming `what` where a PETSc call returned a non-zero code.
void petsc_check(PetscErrorCode code, const char* what);
#define GPRFWI_PETSC(call) ::gprfwi::petsc_check((call), #call)

/// The whole vector on every rank, into out (its memory reused): each
/// rank's part, gathered with one MPI_Allgatherv (with one rank, a copy).
/// Collective.
void gather_whole(Vec x, std::vector<double>& out);
std::vector<double> gather_whole(Vec x);

/// This rank's part of `v` (the whole vector) into out, times `scale`.
void scatter_whole(const std::vector<double>& v, Vec out, double scale = 1.0);

}  // namespace gprfwi
