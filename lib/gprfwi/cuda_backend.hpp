#pragma once
// Entry points of the CUDA backend. In a build without CUDA they exist too:
// cuda_device_count() returns 0 and the others throw NotCompiled.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "gprfwi/propagator.hpp"

namespace gprfwi {

/// "13.0 (driver 13.0)", or "not compiled".
std::string cuda_runtime_version();

/// GPUs this process can use (0 without a driver, a GPU or CUDA support).
int cuda_device_count();

/// Names of those GPUs.
std::vector<std::string> cuda_device_names();

/// The device a process uses when options.device < 0: its MPI local rank
/// modulo the device count. The local rank is the rank's place among the
/// ranks of its node (MPI_Comm_split_type) in an MPI run of several ranks,
/// else from OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID or
/// MV2_COMM_WORLD_LOCAL_RANK (a launcher's environment), else 0.
int default_cuda_device();

std::unique_ptr<Propagator> make_cuda_propagator(const PropagatorOptions& options);

/// Bandwidth (bytes read + written per second) of a device-to-device copy of
/// `bytes` into another buffer of the same size, best of several repeats.
double cuda_copy_bandwidth(std::size_t bytes = std::size_t{2} << 30);

}  // namespace gprfwi
