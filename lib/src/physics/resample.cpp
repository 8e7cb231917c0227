#include "gprfwi/resample.hpp"

#include <cmath>

#include "gprfwi/point_weights.hpp"

namespace gprfwi {

namespace {
constexpr double kBeta = 8.0;  // Kaiser window of the resampling filter

double filter(double u) {
    const double nearest = std::round(u);
    if (std::abs(u - nearest) < 1e-12) return nearest == 0.0 ? 1.0 : 0.0;  // exact sinc zeros
    return windowed_sinc(u, kResampleRadius, kBeta);
}
}  // namespace

ResampleOperator ResampleOperator::upsample_sources(int nt, int ratio) {
    ResampleOperator op;
    op.n_in_ = nt;
    op.n_out_ = nt * ratio;
    op.row_begin_.push_back(0);
    for (int m = 0; m < op.n_out_; ++m) {
        // internal sample m is the current at (m + 1/2) dt/ratio: user index u
        const double u = (m + 0.5) / ratio - 0.5;
        const int lo = std::max(0, static_cast<int>(std::ceil(u - kResampleRadius)));
        const int hi = std::min(nt - 1, static_cast<int>(std::floor(u + kResampleRadius)));
        for (int n = lo; n <= hi; ++n) {
            const double w = filter(u - n);
            if (w != 0.0) {
                op.column_.push_back(n);
                op.weight_.push_back(w);
            }
        }
        op.row_begin_.push_back(static_cast<int>(op.column_.size()));
    }
    return op;
}

ResampleOperator ResampleOperator::downsample_receivers(int nt, int ratio) {
    ResampleOperator op;
    op.n_in_ = nt * ratio;
    op.n_out_ = nt;
    op.row_begin_.push_back(0);
    for (int n = 0; n < nt; ++n) {
        // user trace n is Ey at (n + 1) dt: internal sample (n + 1) ratio - 1
        const int centre = (n + 1) * ratio - 1;
        const int reach = kResampleRadius * ratio;
        for (int m = std::max(0, centre - reach); m <= std::min(op.n_in_ - 1, centre + reach); ++m) {
            const double w = filter(static_cast<double>(m - centre) / ratio) / ratio;
            if (w != 0.0) {
                op.column_.push_back(m);
                op.weight_.push_back(w);
            }
        }
        op.row_begin_.push_back(static_cast<int>(op.column_.size()));
    }
    return op;
}

void ResampleOperator::apply(const double* x, double* y) const {
    for (int o = 0; o < n_out_; ++o) {
        double acc = 0.0;
        for (int j = row_begin_[o]; j < row_begin_[o + 1]; ++j) acc += weight_[j] * x[column_[j]];
        y[o] = acc;
    }
}

void ResampleOperator::apply_transpose(const double* y, double* x) const {
    for (int i = 0; i < n_in_; ++i) x[i] = 0.0;
    for (int o = 0; o < n_out_; ++o)
        for (int j = row_begin_[o]; j < row_begin_[o + 1]; ++j) x[column_[j]] += weight_[j] * y[o];
}

}  // namespace gprfwi
