#pragma once
// Versions of the libraries this build uses, for `gprfwi info` and file headers.

#include <string>
#include <utility>
#include <vector>

namespace gprfwi {

/// (library, version) pairs: HDF5, MPI, fmt, PETSc, CUDA runtime (when compiled).
std::vector<std::pair<std::string, std::string>> library_versions();

}  // namespace gprfwi
