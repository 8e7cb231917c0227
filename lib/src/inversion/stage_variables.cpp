#include "inversion/stage_variables.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "gprfwi/model_builder.hpp"

namespace gprfwi {

namespace {

bool is_edge(const Grid& g, int ix, int iz) { return ix == 0 || iz == 0 || ix == g.nx - 1 || iz == g.nz - 1; }

}  // namespace

std::vector<double> update_weights(const InversionSpec& spec, const Grid& g) {
    std::vector<double> weight(static_cast<std::size_t>(g.nx) * g.nz);
    const std::vector<char> in_mask = nodes_in_regions(g, spec.mask);
    // every antenna once (shots share them), and each only over the nodes within its radius
    std::vector<Position> tapered = spec.taper_radius_m > 0 ? spec.taper_points : std::vector<Position>{};
    std::sort(tapered.begin(), tapered.end(),
              [](const Position& a, const Position& b) { return std::tie(a.x, a.z) < std::tie(b.x, b.z); });
    tapered.erase(std::unique(tapered.begin(), tapered.end()), tapered.end());
    const double radius = spec.taper_radius_m;
#pragma omp parallel for schedule(static)
    for (int iz = 0; iz < g.nz; ++iz) {
        for (int ix = 0; ix < g.nx; ++ix) {
            double& w = weight[static_cast<std::size_t>(iz) * g.nx + ix];
            w = 1;
            // an edge node also sets the CPML strip beyond it (the model is extended into the
            // CPML), so its own gradient is that of the whole strip: not a variable of its own
            // unless edges are free (with follow it moves with its inner node: edge_links)
            if (spec.edges != EdgeRule::free && is_edge(g, ix, iz)) w = 0;
            if (in_mask[static_cast<std::size_t>(iz) * g.nx + ix]) w = 0;
        }
        for (const Position& p : tapered) {
            if (std::abs(iz * g.dz - p.z) >= radius) continue;
            // (clamped before the conversion: a radius far beyond the model, as a run file may give, is no int)
            const int from = static_cast<int>(std::clamp(std::floor((p.x - radius) / g.dx), 0.0, g.nx - 1.0));
            const int to = static_cast<int>(std::clamp(std::ceil((p.x + radius) / g.dx), 0.0, g.nx - 1.0));
            for (int ix = from; ix <= to; ++ix) {
                const double d = std::hypot(ix * g.dx - p.x, iz * g.dz - p.z);
                double& w = weight[static_cast<std::size_t>(iz) * g.nx + ix];
                if (d < radius) w = std::min(w, std::pow(std::sin(0.5 * M_PI * d / radius), 2));
            }
        }
    }
    return weight;
}

EdgeLinks edge_links(const InversionSpec& spec, const Grid& g) {
    EdgeLinks links;
    if (spec.edges != EdgeRule::follow || g.nx < 3 || g.nz < 3) return links;
    const std::vector<char> in_mask = nodes_in_regions(g, spec.mask);
    const auto node = [&](int ix, int iz) { return static_cast<std::size_t>(iz) * g.nx + ix; };
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            if (!is_edge(g, ix, iz)) continue;
            if (in_mask[node(ix, iz)]) continue;  // the mask's values stand
            links.emplace_back(node(ix, iz), node(std::clamp(ix, 1, g.nx - 2), std::clamp(iz, 1, g.nz - 2)));
        }
    return links;
}

void follow_edges(const EdgeLinks& links, double* a) {
    for (const auto& [edge, inner] : links) a[edge] = a[inner];
}

void follow_edges(const EdgeLinks& links, Model& m) {
    follow_edges(links, m.eps_r.data());
    follow_edges(links, m.sigma.data());
}

std::vector<std::size_t> taper_held_nodes(const InversionSpec& spec, const Grid& g) {
    if (!(spec.taper_radius_m > 0) || spec.taper_points.empty()) return {};
    InversionSpec untapered = spec;
    untapered.taper_radius_m = 0;
    const std::vector<double> with = update_weights(spec, g), without = update_weights(untapered, g);
    std::vector<std::size_t> held;
    for (std::size_t i = 0; i < with.size(); ++i)
        if (!is_free(with[i]) && is_free(without[i])) held.push_back(i);
    return held;
}

std::size_t fill_held_nodes(const std::vector<std::size_t>& held, const std::vector<double>& weight, bool eps_r,
                            bool sigma, Model& m) {
    const Grid& g = m.grid;
    std::size_t filled = 0;
    // a node is filled from free neighbours only, which no fill writes: held nodes side by side do not feed
    // each other, in whatever order they come
    for (const std::size_t i : held) {
        const int ix = static_cast<int>(i % g.nx), iz = static_cast<int>(i / g.nx);
        double e = 0, ln_s = 0;
        int n = 0;
        for (const auto& [dx, dz] : {std::pair{-1, 0}, std::pair{1, 0}, std::pair{0, -1}, std::pair{0, 1}}) {
            const int jx = ix + dx, jz = iz + dz;
            if (jx < 0 || jz < 0 || jx >= g.nx || jz >= g.nz) continue;
            const std::size_t j = static_cast<std::size_t>(jz) * g.nx + jx;
            if (!is_free(weight[j])) continue;
            e += m.eps_r.data()[j];
            ln_s += std::log(m.sigma.data()[j]);
            ++n;
        }
        if (n == 0) continue;
        if (eps_r) m.eps_r.data()[i] = e / n;
        if (sigma) m.sigma.data()[i] = std::exp(ln_s / n);
        ++filled;
    }
    return filled;
}

GradientPeaks gradient_peaks(const std::vector<double>& weight, const std::vector<char>& masked, const Array2D& ge,
                             const Array2D& gs, const Model& m) {
    double ge_max = 0, gs_max = 0;
    const std::size_t n = weight.size();
#pragma omp parallel for schedule(static) reduction(max : ge_max, gs_max)
    for (std::size_t i = 0; i < n; ++i) {
        if (masked[i]) continue;
        const double w2 = weight[i] * weight[i];
        ge_max = std::max(ge_max, w2 * std::abs(ge.data()[i]));
        gs_max = std::max(gs_max, w2 * std::abs(gs.data()[i] * m.sigma.data()[i]));
    }
    return {ge_max, gs_max};
}

std::pair<double, double> calibrated_scales(const InversionSpec& spec, const GradientPeaks& peaks, double j0,
                                            double eps_ref) {
    const double ge_max = peaks.eps_r / j0, gs_max = peaks.sigma / j0;
    // a unit step along the gradient changes eps_r by s^2 |df/d eps_r|, ln(sigma) by s^2 |sigma df/d sigma|
    const double s_eps = spec.scale_eps_r > 0 ? spec.scale_eps_r
                         : ge_max > 0         ? std::sqrt(spec.calibration_eps_r_step * eps_ref / ge_max)
                                              : spec.calibration_eps_r_step * eps_ref;
    const double s_sig = spec.scale_sigma > 0 ? spec.scale_sigma
                         : gs_max > 0         ? std::sqrt(spec.calibration_sigma_step / gs_max)
                                              : spec.calibration_sigma_step;
    return {s_eps, s_sig};
}

double sigma_sensitivity(const GradientPeaks& peaks, double eps_ref) {
    return peaks.eps_r > 0 && eps_ref > 0 ? peaks.sigma / (eps_ref * peaks.eps_r) : 0.0;
}

std::vector<double> illumination_factors(const Array2D& illumination, const std::vector<char>& masked,
                                         double stabilization) {
    const std::size_t n = masked.size();
    double peak = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (!masked[i]) peak = std::max(peak, illumination.data()[i]);
    if (!(peak > 0)) return {};
    const double a = stabilization;
    std::vector<double> p(n, 1.0);
    for (std::size_t i = 0; i < n; ++i)
        if (!masked[i]) p[i] = std::sqrt((1 + a) / (std::max(illumination.data()[i], 0.0) / peak + a));
    return p;
}

double StageVariables::x_of_sigma(double s, std::size_t i) const {
    return std::log(s / sigma_ref) / (s_sig * weight[i]);
}

void StageVariables::entry_of(const Model& m, std::size_t j, double& x, double& lo, double& hi) const {
    const std::size_t k = j / nodes(), i = j % nodes();
    double x0 = 0, l0 = 0, h0 = 0;
    if (masked[i]) {
    } else if (params[k] == 0) {
        x0 = x_of_eps(m.eps_r.data()[i], i);
        l0 = x_of_eps(eps_r_min, i);
        h0 = x_of_eps(eps_r_max, i);
    } else {
        x0 = x_of_sigma(m.sigma.data()[i], i);
        l0 = x_of_sigma(sigma_min, i);
        h0 = x_of_sigma(sigma_max, i);
    }
    x = std::clamp(x0, l0, h0);
    lo = l0;
    hi = h0;
}

void StageVariables::model_from_x(const double* x, Model& m, const Model* base) const {
    const std::size_t n = nodes();
    for (std::size_t k = 0; k < params.size(); ++k) {
        const double* xp = x + k * n;
        const bool eps = params[k] == 0;
        Array2D& to = eps ? m.eps_r : m.sigma;
        const double* from = base ? (eps ? base->eps_r : base->sigma).data() : nullptr;
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) {
            if (masked[i]) {
                if (from) to.data()[i] = from[i];
                continue;
            }
            if (eps)
                to.data()[i] = std::clamp(s_eps * weight[i] * xp[i], eps_r_min, eps_r_max);
            else
                to.data()[i] = std::clamp(sigma_ref * std::exp(s_sig * weight[i] * xp[i]), sigma_min, sigma_max);
        }
        if (links) follow_edges(*links, to.data());
    }
}

void StageVariables::direction_to_model(const double* v, const Model& m, Array2D& ve, Array2D& vs) const {
    const std::size_t n = nodes();
    for (std::size_t k = 0; k < params.size(); ++k) {
        const bool eps = params[k] == 0;
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) {
            if (masked[i]) continue;
            if (eps) ve.data()[i] = s_eps * weight[i] * v[k * n + i];
            else vs.data()[i] = m.sigma.data()[i] * s_sig * weight[i] * v[k * n + i];
        }
        if (links) follow_edges(*links, eps ? ve.data() : vs.data());
    }
}

void StageVariables::gradient_to_x(const Array2D& ge, const Array2D& gs, const Model& m, double j0, double* gx) const {
    const std::size_t n = nodes();
    for (std::size_t k = 0; k < params.size(); ++k) {
        const bool eps = params[k] == 0;
        collect(gx + k * n, false, [&](std::size_t from, std::size_t i) {
            return weight[i] * (eps ? ge.data()[from] / j0 * s_eps : gs.data()[from] * m.sigma.data()[from] / j0 * s_sig);
        });
    }
}

void StageVariables::hessian_to_x(const Array2D& he, const Array2D& hs, const Model& m, double j0, const double* v,
                                  const Array2D* curvature, double* out) const {
    const std::size_t n = nodes();
    for (std::size_t k = 0; k < params.size(); ++k) {
        const bool eps = params[k] == 0;
        const double* vk = v + k * n;
        collect(out + k * n, false, [&](std::size_t from, std::size_t i) {
            if (eps) return weight[i] * s_eps * he.data()[from] / j0;
            const double ds_dx = m.sigma.data()[from] * s_sig * weight[i];
            double o = ds_dx * hs.data()[from] / j0;
            if (curvature) o += curvature->data()[from] * ds_dx * s_sig * weight[i] * vk[i] / j0;
            return o;
        });
    }
}

}  // namespace gprfwi
