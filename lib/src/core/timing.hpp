#pragma once
// Wall-clock timing of the library's phases (RunTimings, the inversion's
// stage log, MPI communication).

#include <chrono>

namespace gprfwi {

/// Seconds from t0 to now.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Adds the seconds of its scope to a total.
class ScopeTimer {
public:
    explicit ScopeTimer(double& total) : total_(total) {}
    ~ScopeTimer() { total_ += seconds_since(t0_); }
    ScopeTimer(const ScopeTimer&) = delete;
    ScopeTimer& operator=(const ScopeTimer&) = delete;

private:
    double& total_;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace gprfwi
