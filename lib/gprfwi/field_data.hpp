#pragma once
// Measured data into the simulation's terms (docs/field-data.md): observed
// traces from HDF5 or SEG-Y, moved to model coordinates, corrected from a
// point source (3D) to gprfwi's line source (2D), shifted to the source's
// time zero and resampled onto the run's time axis.

#include <cstddef>
#include <string>
#include <vector>

#include "gprfwi/segy.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

enum class DataFormat { hdf5, segy };

/// HDF5 for .h5/.hdf5, SEG-Y for .sgy/.segy (any case); throws InvalidArgument otherwise.
DataFormat data_format_of(const std::string& path);

enum class LineSource {
    none,
    to_2d,  // measured (point source) -> 2D line source: x sqrt(2 pi r v / w) e^{-i pi/4}, a half-integration
    to_3d,  // the inverse, e.g. to show 2D synthetics beside measured data
};

/// Where observed data come from and what is done to them (`data.observed`).
struct ObservedSpec {
    std::string file;  // resolved path; empty: none
    DataFormat format = DataFormat::hdf5;
    SegyReadOptions segy;
    /// File time at which the source fires: trace(t) becomes trace(t + t0).
    /// Empty: 0; one value: every shot; else one per shot of the file.
    std::vector<double> time_zero_s;
    LineSource line_source = LineSource::none;
    double line_source_velocity = 0.0;  // m/s, of the medium between source and receiver
    Position origin;                    // model position = file position - origin

    /// An HDF5 file with nothing to do: read shot by shot as stored (and
    /// then its dt and nt must be the run's).
    bool as_is() const {
        return format == DataFormat::hdf5 && time_zero_s.empty() && line_source == LineSource::none && origin.x == 0 &&
               origin.z == 0;
    }
    /// One line for logs.
    std::string describe() const;
};

/// The file's traces (or only its geometry) with the origin applied.
TraceData read_trace_file(const ObservedSpec& spec, bool samples = true);

/// The line-source correction of one trace of n samples, dt apart, recorded
/// `distance` m from its source in a medium of wave speed `velocity` (m/s);
/// done with FFTs over 2n samples or more (zero padding against wrap-around);
/// the zero-frequency bin is dropped. The far-field ratio of the 2D and 3D
/// Green's functions (docs/field-data.md) for kr >> 1.
void line_source_correction(double* trace, int n, double dt, double distance, double velocity, LineSource direction);

/// Band-limited resampling: out[m] = x(t_out0 + m dt_out) for m < n_out, where
/// x(t) is the signal whose samples x[k] are at t_in0 + k dt_in (zero outside
/// them). A Kaiser-windowed sinc with its cut-off at the lower of the two
/// Nyquist frequencies; the identity when the axes coincide.
std::vector<double> resample_trace(const double* x, int n_in, double dt_in, double t_in0, int n_out, double dt_out,
                                   double t_out0);

/// Applies the spec to every trace of `data` (line-source correction on the
/// file's axis, then the time-zero shift and resampling onto dt with nt
/// samples at (n + 1) dt, gprfwi's trace axis). Throws naming the file, shot
/// and receiver where the correction has no distance.
TraceData prepare_traces(const TraceData& data, const ObservedSpec& spec, double dt, int nt);

/// The observed traces of the listed shots of `survey`, on its time axis: an
/// as-is HDF5 file is read shot by shot (positions checked to 1 um); otherwise
/// the whole file is read, its shots and receivers checked against the
/// survey's (1 mm) and prepared. Throws Error naming the file, shot, receiver.
Traces read_observed(const ObservedSpec& spec, const Survey& survey, const std::vector<std::size_t>& shots);

}  // namespace gprfwi
