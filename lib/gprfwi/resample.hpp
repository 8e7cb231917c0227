#pragma once
// Band-limited resampling between the user's time axis (dt, nt samples) and the
// propagator's internal axis (dt/r, nt*r samples), with exact transposes.
//
// Time conventions (PHYSICS.md): source sample n is the current at
// (n + 1/2) dt; trace sample n is Ey at (n + 1) dt. Internally the same holds
// with dt/r. Hence
//   up:   internal source m  <- user samples around u = (m + 1/2)/r - 1/2
//   down: user trace n       <- internal samples around m = (n + 1) r - 1
// both with a Kaiser-windowed sinc whose cut-off is the user Nyquist frequency
// (the down-sampling weights carry 1/r so that a band-limited signal keeps its
// amplitude). With r = 1 both are the identity.

#include <vector>

namespace gprfwi {

/// A sparse linear map y = M x with x of size n_in and y of size n_out.
class ResampleOperator {
public:
    ResampleOperator() = default;

    /// Source up-sampling: nt user samples -> nt*ratio internal samples.
    static ResampleOperator upsample_sources(int nt, int ratio);
    /// Receiver down-sampling: nt*ratio internal samples -> nt user samples.
    static ResampleOperator downsample_receivers(int nt, int ratio);

    int n_in() const { return n_in_; }
    int n_out() const { return n_out_; }
    /// y = M x. x has n_in values, y gets n_out values.
    void apply(const double* x, double* y) const;
    /// x = M^T y. y has n_out values, x gets n_in values.
    void apply_transpose(const double* y, double* x) const;

private:
    int n_in_ = 0;
    int n_out_ = 0;
    std::vector<int> row_begin_;  // CSR over output samples
    std::vector<int> column_;
    std::vector<double> weight_;
};

/// Half-width, in user samples, of the resampling filter.
inline constexpr int kResampleRadius = 8;

}  // namespace gprfwi
