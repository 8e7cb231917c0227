#include "gprfwi/versions.hpp"

#include <hdf5.h>
#include <mpi.h>

#include <fmt/format.h>

#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/inversion.hpp"

namespace gprfwi {

std::vector<std::pair<std::string, std::string>> library_versions() {
    std::vector<std::pair<std::string, std::string>> v;
    unsigned major = 0, minor = 0, release = 0;
    H5get_libversion(&major, &minor, &release);
    v.emplace_back("HDF5", fmt::format("{}.{}.{}", major, minor, release));
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(mpi, &length);  // allowed before MPI_Init
    std::string mpi_text(mpi, static_cast<std::size_t>(length));
    if (const auto nl = mpi_text.find_first_of(",\n"); nl != std::string::npos) mpi_text.resize(nl);
    v.emplace_back("MPI", mpi_text);
    v.emplace_back("fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100));
    v.emplace_back("PETSc", petsc_version());
    v.emplace_back("CUDA", cuda_runtime_version());
    return v;
}

}  // namespace gprfwi
