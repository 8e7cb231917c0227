#pragma once
// PETSc's large blocks (the optimiser's vectors) straight from the kernel.

namespace gprfwi {

/// Makes PETSc take blocks of kPetscLargeBlock bytes or more from
/// petsc_large_block (below) and everything smaller from its own allocator.
/// Must run before PetscInitialize (PetscMallocSet); PetscFinalize undoes it.
void install_petsc_allocator();

/// The smallest block taken from the kernel: vectors of 4 MiB and more
/// (half a million unknowns) are the optimiser's; everything PETSc
/// allocates besides them is far smaller.
inline constexpr unsigned long kPetscLargeBlock = 4ul << 20;

}  // namespace gprfwi
