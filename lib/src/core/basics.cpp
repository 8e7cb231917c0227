// Small definitions: constants, stencil tables at run time, grid, model,
// survey and trace validation.

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>

#include "gprfwi/constants.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/grid.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

double speed_of_light() { return 1.0 / std::sqrt(kEps0 * kMu0); }

void check_stencil_order(int order) {
    if (order != 2 && order != 4 && order != 6 && order != 8)
        throw InvalidArgument(fmt::format("stencil order must be 2, 4, 6 or 8, got {}", order));
}

double stencil_coefficient(int order, int k) {
    check_stencil_order(order);
    if (k < 1 || k > order / 2)
        throw InvalidArgument(fmt::format("stencil of order {} has coefficients 1..{}, asked for {}",
                                          order, order / 2, k));
    switch (order) {
        case 2: return Stencil<2>::c(k);
        case 4: return Stencil<4>::c(k);
        case 6: return Stencil<6>::c(k);
        default: return Stencil<8>::c(k);
    }
}

double stencil_abs_sum(int order) {
    check_stencil_order(order);
    switch (order) {
        case 2: return Stencil<2>::abs_sum();
        case 4: return Stencil<4>::abs_sum();
        case 6: return Stencil<6>::abs_sum();
        default: return Stencil<8>::abs_sum();
    }
}

void Grid::validate() const {
    if (nx < 2 || nz < 2)
        throw InvalidArgument(fmt::format("grid needs at least 2 x 2 nodes, got nx = {}, nz = {}", nx, nz));
    if (!(dx > 0) || !(dz > 0) || !std::isfinite(dx) || !std::isfinite(dz))
        throw InvalidArgument(fmt::format("grid spacing must be positive and finite, got dx = {} m, dz = {} m", dx, dz));
    if (static_cast<double>(nx) * nz > 2.0e9)
        throw InvalidArgument(fmt::format("grid of {} x {} nodes is larger than 2e9 nodes", nx, nz));
}

PaddedGrid::PaddedGrid(const Grid& g, const PmlWidths& w) : model(g), pml(w) {
    g.validate();
    for (int v : {w.left, w.right, w.top, w.bottom})
        if (v < 0 || v > 1000)
            throw InvalidArgument(fmt::format("CPML width must be in [0, 1000] cells, got {}", v));
    nx = g.nx + w.left + w.right;
    nz = g.nz + w.top + w.bottom;
    // rows start 16-byte aligned, so GPU kernels load 4 floats or 2 doubles at once
    stride = (nx + 2 * kMaxHalo + 3) / 4 * 4;
}

Model Model::uniform(const Grid& g, double eps_r, double sigma, double mu_r) {
    Model m;
    m.grid = g;
    m.eps_r = Array2D(g.nz, g.nx, eps_r);
    m.sigma = Array2D(g.nz, g.nx, sigma);
    m.mu_r = Array2D(g.nz, g.nx, mu_r);
    return m;
}

namespace {
/// A model array's physical range: finite and above lo (or at it, where inclusive).
struct ValueRange {
    double lo;
    bool inclusive;
    /// (comparisons without branches, false for NaN, so that a loop over a model vectorises)
    constexpr bool contains(double v) const { return (inclusive ? v >= lo : v > lo) & (v < INFINITY); }
};
constexpr ValueRange kEpsRange{1.0, true}, kSigmaRange{0.0, true}, kMuRange{0.0, false};

void check_size(const Array2D& a, const Grid& g, const char* name) {
    if (a.nz() != g.nz || a.nx() != g.nx)
        throw SizeMismatch(fmt::format("model array {} is [{}][{}], grid is [nz={}][nx={}]", name,
                                       a.nz(), a.nx(), g.nz, g.nx));
}

/// Throws for the first node of `a` (in row order) outside `range`, if any.
void check_values(const Array2D& a, const Grid& g, const char* name, ValueRange range) {
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix)
            if (!range.contains(a(iz, ix)))
                throw InvalidArgument(fmt::format("model {} at node (iz={}, ix={}) is {}; it must be finite and {} {}",
                                                  name, iz, ix, a(iz, ix), range.inclusive ? ">=" : ">", range.lo));
}
}  // namespace

void Model::validate() const { (void)checked(); }

ModelCheck Model::checked() const {
    grid.validate();
    check_size(eps_r, grid, "eps_r");
    check_size(sigma, grid, "sigma");
    check_size(mu_r, grid, "mu_r");
    // the three arrays' ranges, the least eps_r mu_r and the bits' sum in one pass on all threads (a sum mod
    // 2^64, the same whatever the threads); the first bad node then found in order, for the message
    double v = INFINITY;
    std::uint64_t sum = 0, bad = 0;
    const double *e = eps_r.data(), *s = sigma.data(), *m = mu_r.data();
#pragma omp parallel for simd reduction(min : v) reduction(+ : sum, bad) schedule(static)
    for (std::size_t i = 0; i < eps_r.size(); ++i) {
        bad += !(kEpsRange.contains(e[i]) & kSigmaRange.contains(s[i]) & kMuRange.contains(m[i]));
        v = std::min(v, e[i] * m[i]);
        sum += std::bit_cast<std::uint64_t>(e[i]) ^ std::bit_cast<std::uint64_t>(s[i]) ^ std::bit_cast<std::uint64_t>(m[i]);
    }
    if (bad) {
        check_values(eps_r, grid, "eps_r", kEpsRange);
        check_values(sigma, grid, "sigma", kSigmaRange);
        check_values(mu_r, grid, "mu_r", kMuRange);
    }
    return {v, sum};
}

double Model::min_eps_mu() const {
    double v = INFINITY;
    const double *e = eps_r.data(), *m = mu_r.data();
#pragma omp parallel for reduction(min : v) schedule(static)
    for (std::size_t i = 0; i < eps_r.size(); ++i) v = std::min(v, e[i] * m[i]);
    return v;
}

double Model::max_eps_mu() const {
    double v = 0;
    const double *e = eps_r.data(), *m = mu_r.data();
#pragma omp parallel for reduction(max : v) schedule(static)
    for (std::size_t i = 0; i < eps_r.size(); ++i) v = std::max(v, e[i] * m[i]);
    return v;
}

void Survey::validate() const {
    if (!(dt > 0) || !std::isfinite(dt))
        throw InvalidArgument(fmt::format("time step dt must be positive and finite, got {} s", dt));
    if (nt < 1) throw InvalidArgument(fmt::format("nt must be at least 1, got {}", nt));
    if (shots.empty()) throw InvalidArgument("survey has no shots");
    for (std::size_t s = 0; s < shots.size(); ++s) {
        const Shot& shot = shots[s];
        if (shot.sources.empty()) throw InvalidArgument(fmt::format("shot {} has no sources", s));
        if (shot.wavelet.size() != static_cast<std::size_t>(nt))
            throw SizeMismatch(fmt::format("shot {} wavelet has {} samples, survey nt is {}", s,
                                           shot.wavelet.size(), nt));
        for (std::size_t n = 0; n < shot.wavelet.size(); ++n)
            if (!std::isfinite(shot.wavelet[n]))
                throw InvalidArgument(fmt::format("shot {} wavelet sample {} is {}", s, n, shot.wavelet[n]));
        for (std::size_t k = 0; k < shot.sources.size(); ++k)
            if (!std::isfinite(shot.sources[k].amplitude))
                throw InvalidArgument(fmt::format("shot {} source {} amplitude is {}", s, k,
                                                  shot.sources[k].amplitude));
    }
}

Traces make_traces(const Survey& survey) {
    Traces t;
    t.reserve(survey.shots.size());
    for (const Shot& shot : survey.shots) t.emplace_back(static_cast<int>(shot.receivers.size()), survey.nt);
    return t;
}

double trace_peak(const double* x, int nt) {
    double peak = 0;
    for (int n = 0; n < nt; ++n) peak = std::max(peak, std::abs(x[n]));
    return peak;
}

void check_traces_match(const Traces& traces, const Survey& survey, const char* what) {
    if (traces.size() != survey.shots.size())
        throw SizeMismatch(fmt::format("{} has {} shots, survey has {}", what, traces.size(), survey.shots.size()));
    for (std::size_t s = 0; s < traces.size(); ++s) {
        const auto nr = static_cast<int>(survey.shots[s].receivers.size());
        if (traces[s].n_receivers() != nr || traces[s].nt() != survey.nt)
            throw SizeMismatch(fmt::format("{} shot {} is [{} receivers][{} samples], survey expects [{}][{}]",
                                           what, s, traces[s].n_receivers(), traces[s].nt(), nr, survey.nt));
    }
}

}  // namespace gprfwi
