#pragma once
// Recorded Ey traces of a batch of shots: per shot [n_receivers][nt].

#include <cstddef>
#include <string>
#include <vector>

#include "gprfwi/survey.hpp"

namespace gprfwi {

class ShotTraces {
public:
    ShotTraces() = default;
    ShotTraces(int n_receivers, int nt)
        : n_receivers_(n_receivers), nt_(nt), samples_(static_cast<std::size_t>(n_receivers) * nt, 0.0) {}

    int n_receivers() const { return n_receivers_; }
    int nt() const { return nt_; }
    double& operator()(int r, int n) { return samples_[static_cast<std::size_t>(r) * nt_ + n]; }
    double operator()(int r, int n) const { return samples_[static_cast<std::size_t>(r) * nt_ + n]; }
    double* receiver(int r) { return samples_.data() + static_cast<std::size_t>(r) * nt_; }
    const double* receiver(int r) const { return samples_.data() + static_cast<std::size_t>(r) * nt_; }
    std::vector<double>& samples() { return samples_; }
    const std::vector<double>& samples() const { return samples_; }

private:
    int n_receivers_ = 0;
    int nt_ = 0;
    std::vector<double> samples_;
};

using Traces = std::vector<ShotTraces>;

/// Traces with the geometry and time axis of a data file (HDF5 or SEG-Y).
struct TraceData {
    Survey survey;     // dt, nt (samples per trace), each shot's sources and receivers; no wavelets
    Traces traces;     // empty when only the geometry was read
    double t0 = 0.0;   // s, time of sample 0 (HDF5 traces of gprfwi: dt)
    std::string summary;  // what was read, for logs
};

/// Zero traces shaped like the survey's receivers.
Traces make_traces(const Survey& survey);

/// The largest |x[n]| of `nt` samples (0 for none).
double trace_peak(const double* x, int nt);

/// Throws SizeMismatch unless `traces` has the survey's shape.
void check_traces_match(const Traces& traces, const Survey& survey, const char* what);

}  // namespace gprfwi
