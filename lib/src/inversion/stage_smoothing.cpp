#include "inversion/stage_smoothing.hpp"

#include <cmath>
#include <utility>

#include "gprfwi/model_builder.hpp"
#include "parallel/parallel_arrays.hpp"

namespace gprfwi {

StageSmoothing::StageSmoothing(const InversionSpec& spec, const StageSpec& stage, const Grid& grid,
                               const std::vector<int>& params)
    : spec_(spec), stage_(stage), grid_(grid), params_(params) {}

double smoothing_length(const InversionSpec& spec, const StageSpec& stage, int p) {
    const double own = p == 0 ? stage.smoothing_m : stage.smoothing_sigma_m;
    return own >= 0 ? own : p == 0 ? spec.smoothing_m : spec.smoothing_sigma_m;
}

double StageSmoothing::length(int p) const { return smoothing_length(spec_, stage_, p); }

bool StageSmoothing::wanted() const {
    for (int p : params_)
        if (length(p) > 0) return true;
    return false;
}

void StageSmoothing::smooth(std::vector<double>& x, int passes) const {
    const std::size_t n = static_cast<std::size_t>(grid_.nx) * static_cast<std::size_t>(grid_.nz);
    for (std::size_t k = 0; k < params_.size(); ++k) {
        const double sd = length(params_[k]) / std::sqrt(2.0);
        if (sd <= 0) continue;
        for (int pass = 0; pass < passes; ++pass)
            smooth_gaussian(x.data() + k * n, grid_.nz, grid_.nx, sd / grid_.dx, sd / grid_.dz, SmoothingEdges::zero);
    }
}

void StageSmoothing::accept(std::vector<double>& x, std::vector<double>& g) {
    const std::size_t n = x.size();
    if (last_x_.size() == n) {
        // y = g - g_last in g_last's place (not needed past here), then T y there:
        // y'Sy = |T y|^2, S = T T with T symmetric, one of the two passes
        std::vector<double>& y = last_g_;
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) y[i] = g[i] - y[i];
        const double s_y = sum_parallel(n, [&](std::size_t i) { return (x[i] - last_x_[i]) * y[i]; });
        smooth(y, 1);
        const double y_sy = sum_parallel(n, [&](std::size_t i) { return y[i] * y[i]; });
        if (s_y > 0 && y_sy > 0) gamma_ = s_y / y_sy;
    }
    // x and g become the last ones (the caller's buffers are refilled before their next use)
    std::swap(last_x_, x);
    std::swap(last_g_, g);
}

void StageSmoothing::restart() {
    gamma_ = 1.0;
    last_x_.clear();
    last_g_.clear();
}

}  // namespace gprfwi
