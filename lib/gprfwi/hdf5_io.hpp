#pragma once
// HDF5 files of gprfwi (docs/hdf5.md). Every write goes to a temporary name in
// the same folder and is renamed when complete, so a file is never half-written.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/files.hpp"  // write_text_atomically, for the callers of this header
#include "gprfwi/grid.hpp"
#include "gprfwi/model.hpp"
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

/// The bytes of the datasets and attributes of a synthetic.h5 of this survey,
/// and of a file of `arrays` [nz, nx] float64 arrays (a model: 3, a gradient:
/// 2), each with the run file it records: the room their writers ask for
/// (check_room), and commands before they compute.
std::uint64_t traces_file_bytes(const Survey& survey, const std::string& config);
std::uint64_t grid_file_bytes(const Grid& grid, int arrays, const std::string& config);

/// Writes a gradient: /grad_eps_r and /grad_sigma [nz][nx] float64 (per unit
/// eps_r and per S/m), root attributes misfit, dx, dz (m), units,
/// gprfwi_version and config; and an XDMF sidecar (same name, .xdmf) so
/// ParaView opens it.
void write_gradient_h5(const std::string& path, const Grid& grid, double misfit, const Array2D& grad_eps_r,
                       const Array2D& grad_sigma, const std::string& config);

/// Writes a Hessian-vector product: /hv_eps_r and /hv_sigma [nz][nx] float64,
/// root attributes misfit, hessian ("full" or "gauss-newton"), dx, dz (m),
/// units, gprfwi_version and config; and its XDMF sidecar.
void write_hessian_h5(const std::string& path, const Grid& grid, double misfit, const Array2D& hv_eps_r,
                      const Array2D& hv_sigma, const std::string& kind, const std::string& config);

/// Reads traces written in that layout and checks them against the survey:
/// shot and receiver counts, nt and dt. Throws SizeMismatch / Error naming the file.
Traces read_traces_h5(const std::string& path, const Survey& survey);

/// The same for the listed shots only (global indices into survey.shots, in
/// the order wanted): an MPI rank reads just its own. Also checks each read
/// shot's receiver positions against the file's (1 um) and that samples are finite.
Traces read_traces_h5(const std::string& path, const Survey& survey, const std::vector<std::size_t>& shots);

/// Reads a whole traces file with its own geometry and time axis (t0 = dt),
/// whatever survey it was written for.
TraceData read_trace_data_h5(const std::string& path);

/// What a model file may carry beside the model (a checkpoint's state):
/// root attributes and extra datasets.
struct ModelFileExtras {
    std::map<std::string, double> numbers;
    std::map<std::string, std::string> texts;
    /// Numbers that may be absent when read (they keep their value).
    std::set<std::string> optional;
    /// Extra [nz][nx] float64 datasets beside the model's, written only
    /// (read_model_array_h5 reads them back).
    std::map<std::string, Array2D> arrays;
};

/// Writes a model: /eps_r, /sigma, /mu_r [nz][nx] float64, attributes dx, dz
/// (m), units, gprfwi_version, config; and its XDMF sidecar.
void write_model_h5(const std::string& path, const Model& model, const std::string& config);
void write_model_h5(const std::string& path, const Model& model, const std::string& config, const ModelFileExtras& extra);

/// Reads a model file (mu_r 1 where absent), checked against the grid; fills
/// the attributes named in `attributes` (each must exist).
Model read_model_h5(const std::string& path, const Grid& grid, ModelFileExtras* attributes = nullptr);

/// One [nz][nx] dataset of a model file (float32/float64/integer), checked
/// against the grid's shape and, where the file has them, its dx and dz attributes.
Array2D read_model_array_h5(const std::string& path, const std::string& dataset, const Grid& grid);

/// A 1D dataset (a wavelet); when the dataset has a `dt` attribute it must equal dt.
std::vector<double> read_vector_h5(const std::string& path, const std::string& dataset, double dt);

/// Writes a 1D dataset with a `dt` attribute (s) on it, units, version and config.
void write_vector_h5(const std::string& path, const std::string& dataset, const std::vector<double>& values, double dt,
                     const std::string& units, const std::string& config);


/// Whether the file holds that dataset (throws if the file cannot be opened).
bool h5_has_dataset(const std::string& path, const std::string& dataset);

}  // namespace gprfwi
