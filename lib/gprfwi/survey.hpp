#pragma once
// Acquisition: shots, each with its sources, receivers and wavelet.

#include <string>
#include <vector>

namespace gprfwi {

/// A position in metres from the top-left model node: x to the right, z down.
struct Position {
    double x = 0.0;  // m
    double z = 0.0;  // m
    bool operator==(const Position&) const = default;
};

/// A line current along y. Its current is amplitude * shot wavelet (A).
struct Source {
    Position position;
    double amplitude = 1.0;  // dimensionless scale of the shot wavelet
    bool operator==(const Source&) const = default;
};

struct Shot {
    std::vector<Source> sources;
    std::vector<Position> receivers;
    /// Source current I[n] in amperes, nt samples. Sample n is the current at
    /// t = (n + 1/2) * dt: it drives the update from Ey^n to Ey^{n+1}.
    std::vector<double> wavelet;
    bool operator==(const Shot&) const = default;
};

/// Time axis of the data and the shots that share it.
/// Trace sample n is Ey at t = (n + 1) * dt.
struct Survey {
    double dt = 0.0;  // s, sampling interval of wavelets and traces
    int nt = 0;       // samples per wavelet and trace
    std::vector<Shot> shots;

    /// Throws InvalidArgument / SizeMismatch with the shot and index at fault.
    void validate() const;
    bool operator==(const Survey&) const = default;
};

}  // namespace gprfwi
