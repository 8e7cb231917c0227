#pragma once
// SEG-Y traces (docs/field-data.md), through segyio (Debian: libsegyio-dev).
//
// One SEG-Y trace per (shot, receiver); a shot is a run of consecutive traces
// with the same field record number (bytes 9-12), or, where those are all
// zero, with the same source position. Geometry, in metres:
//   x: source X (73-76) and group X (81-84), scaled by bytes 71-72;
//   z (down): source depth below surface (49-52) minus the source's surface
//      elevation (45-48); receivers: minus the receiver group elevation
//      (41-44); scaled by bytes 69-70.
// Feet (binary header 3255-3256 = 2) are converted to metres; geographic
// coordinate units (89-90 = 2 or 3) are refused.

#include <string>

#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

struct SegyReadOptions {
    /// > 0: the sample interval in s, whatever the file says.
    double sample_interval_s = 0.0;
    /// Unit of the 16-bit sample interval fields (3217-3218, 117-118): the
    /// standard's microsecond, or 1e-12 for GPR files that store picoseconds.
    /// Not used when the file is SEG-Y rev 2 with an extended sample interval.
    double interval_unit_s = 1e-6;
};

/// Reads a SEG-Y file (sample formats 1 IBM float, 2 int32, 3 int16, 5 IEEE
/// float, 8 int8; big- or little-endian; extended textual headers skipped).
/// With `samples` false only the geometry and time axis are read. Throws Error
/// naming the file and, where it applies, the trace and header bytes.
TraceData read_segy(const std::string& path, const SegyReadOptions& options = {}, bool samples = true);

/// Writes traces as SEG-Y rev 2.0, big-endian IEEE float (format 5), through a
/// temporary file and a rename. Sample k is Ey at t = k dt: sample 0 is the
/// field at t = 0 (zero: nothing has been emitted), samples 1..nt are gprfwi's
/// trace samples, so the file has nt + 1 samples per trace and no delay. The
/// sample interval is stored exactly as the rev 2 extended sample interval
/// (IEEE double, us, bytes 3273-3280) and in picoseconds in the 16-bit fields
/// (the usual GPR convention; the textual header says so). Coordinates and
/// depths in millimetres (scalars -1000). A shot with several sources records
/// the first. `description` goes into the textual header.
void write_segy(const std::string& path, const Survey& survey, const Traces& traces, const std::string& description);

}  // namespace gprfwi
