#pragma once
// HDF5 files of gprfwi (docs/hdf5.md). Every write goes to a temporary name in
// the same folder and is renamed when complete, so a file is never half-written.

#include <string>

#include "gprfwi/array2d.hpp"
#include "gprfwi/grid.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

/// Writes Ey traces: /traces [n_shots][n_receivers][nt] (V/m, NaN-padded where a
/// shot has fewer receivers than the widest), /receiver_count [n_shots],
/// /source_positions [n_shots][n_sources][2] and /receiver_positions
/// [n_shots][n_receivers][2] (m, as x, z; NaN-padded), /source_count; root
/// attributes dt (s), time_convention, gprfwi_version, and `config` (the
/// resolved run file, may be empty).
void write_traces_h5(const std::string& path, const Survey& survey, const Traces& traces, const std::string& config);

/// Writes a gradient: /grad_eps_r and /grad_sigma [nz][nx] float64 (per unit
/// eps_r and per S/m), root attributes misfit, dx, dz (m), units,
/// gprfwi_version and config; and an XDMF sidecar (same name, .xdmf) so
/// ParaView opens it.
void write_gradient_h5(const std::string& path, const Grid& grid, double misfit, const Array2D& grad_eps_r,
                       const Array2D& grad_sigma, const std::string& config);

/// Reads traces written in that layout and checks them against the survey:
/// shot and receiver counts, nt and dt. Throws SizeMismatch / Error naming the file.
Traces read_traces_h5(const std::string& path, const Survey& survey);

}  // namespace gprfwi
