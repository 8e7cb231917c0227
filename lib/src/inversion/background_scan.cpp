#include "gprfwi/background_scan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gprfwi/model_builder.hpp"

namespace gprfwi {

namespace {

enum class Parameter { eps_r, sigma };

Array2D& values(Model& m, Parameter p) { return p == Parameter::eps_r ? m.eps_r : m.sigma; }

/// The median of the nodes outside the mask.
double median(const Array2D& a, const std::vector<char>& masked) {
    std::vector<double> v;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!masked[i]) v.push_back(a.data()[i]);
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
}

/// One parameter's scan over u = ln s, the factor applied to `base`.
class ParameterScan {
public:
    ParameterScan(const Model& base, const InversionSpec& spec, Parameter p, const std::vector<char>& masked,
                  const ScanMisfit& misfit, std::vector<ScanPoint>& points)
        : base_(base), p_(p), name_(p == Parameter::eps_r ? "eps_r" : "sigma"), masked_(masked), misfit_(misfit), points_(points), best_(base) {
        lower_ = p == Parameter::eps_r ? spec.eps_r_min : spec.sigma_min;
        upper_ = p == Parameter::eps_r ? spec.eps_r_max : spec.sigma_max;
        // the scan scales what the inversion would start from: the values within the bounds
        Array2D& v = values(base_, p);
        for (std::size_t i = 0; i < v.size(); ++i)
            if (!masked_[i]) v.data()[i] = std::clamp(v.data()[i], lower_, upper_);
        median_ = median(v, masked_);
    }

    /// The grid of step h (in ln s) over factors within `range` and the
    /// bounds, then golden sections between the best point's neighbours
    /// down to a width of ln(1 + tolerance).
    Model run(double h, double range, double tolerance) {
        if (!(median_ > 0)) return best_;
        const double lo = std::max(std::log(lower_ / median_), -std::log(range));
        const double hi = std::min(std::log(upper_ / median_), std::log(range));
        // integer multiples of h, so that the start itself (u = 0) is on the grid
        const int k0 = static_cast<int>(std::ceil(lo / h - 1e-9)), k1 = static_cast<int>(std::floor(hi / h + 1e-9));
        for (int k = k0; k <= k1; ++k) evaluate(k * h);
        double a = std::max(lo, best_u_ - h), b = std::min(hi, best_u_ + h);
        const double g = 0.5 * (std::sqrt(5.0) - 1.0);
        double c = b - g * (b - a), d = a + g * (b - a);
        double fc = evaluate(c), fd = evaluate(d);
        while (b - a > std::log1p(tolerance)) {
            if (fc <= fd) {
                b = d, d = c, fd = fc;
                c = b - g * (b - a), fc = evaluate(c);
            } else {
                a = c, c = d, fc = fd;
                d = a + g * (b - a), fd = evaluate(d);
            }
        }
        return best_;
    }

    double factor() const { return std::exp(best_u_); }

private:
    double evaluate(double u) {
        Model m = base_;
        Array2D& v = values(m, p_);
        const double s = std::exp(u);
        for (std::size_t i = 0; i < v.size(); ++i)
            if (!masked_[i]) v.data()[i] = std::clamp(s * v.data()[i], lower_, upper_);
        const double j = misfit_(m, name_);
        points_.push_back({name_, s, median(v, masked_), j});
        spdlog::debug("scan {}: factor {:.4g} (median {:.4g}): misfit {:.6g}", name_, s,
                      points_.back().median, j);
        if (!(j >= best_j_) && std::isfinite(j)) {  // NaN never wins
            best_j_ = j, best_u_ = u;
            best_ = std::move(m);
        }
        return std::isfinite(j) ? j : HUGE_VAL;
    }

    Model base_;
    Parameter p_;
    const char* name_;
    const std::vector<char>& masked_;
    const ScanMisfit& misfit_;
    std::vector<ScanPoint>& points_;
    double lower_ = 0, upper_ = 0, median_ = 0;
    Model best_;
    double best_u_ = 0, best_j_ = HUGE_VAL;
};

}  // namespace

ScanResult scan_background(const Model& start, const InversionSpec& spec, const ScanMisfit& misfit) {
    ScanResult result;
    result.model = start;
    const std::vector<char> masked = nodes_in_regions(start.grid, spec.mask);
    if (spec.scan.eps_r) {
        ParameterScan scan(result.model, spec, Parameter::eps_r, masked, misfit, result.points);
        result.model = scan.run(spec.scan.eps_r_step, kScanRangeEpsR, kScanToleranceEpsR);
        result.eps_r_factor = scan.factor();
    }
    if (spec.scan.sigma) {
        ParameterScan scan(result.model, spec, Parameter::sigma, masked, misfit, result.points);
        result.model = scan.run(std::log(kScanStepSigma), kScanRangeSigma, kScanToleranceSigma);
        result.sigma_factor = scan.factor();
    }
    return result;
}

std::string scan_csv(const ScanResult& result) {
    std::string s = "# gprfwi background scan: the starting model's parameter outside the mask times factor\n"
                    "parameter,factor,median,misfit\n";
    for (const ScanPoint& p : result.points)
        s += fmt::format("{},{:.9g},{:.9g},{:.17g}\n", p.parameter, p.factor, p.median, p.misfit);
    return s;
}

}  // namespace gprfwi
