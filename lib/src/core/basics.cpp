// Small definitions: constants, stencil tables at run time, grid, model,
// survey and trace validation.

#include <algorithm>
#include <cmath>
#include <utility>
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
void check_array(const Array2D& a, const Grid& g, const char* name, double lo, bool lo_inclusive) {
    if (a.nz() != g.nz || a.nx() != g.nx)
        throw SizeMismatch(fmt::format("model array {} is [{}][{}], grid is [nz={}][nx={}]", name,
                                       a.nz(), a.nx(), g.nz, g.nx));
    auto ok = [&](double v) { return std::isfinite(v) && (lo_inclusive ? v >= lo : v > lo); };
    bool all_ok = true;  // (scanned on all threads; the first bad node then found in order, for the message)
    const double* v = a.data();
#pragma omp parallel for reduction(&& : all_ok) schedule(static)
    for (std::size_t i = 0; i < a.size(); ++i) all_ok = all_ok && ok(v[i]);
    if (all_ok) return;
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix)
            if (!ok(a(iz, ix)))
                throw InvalidArgument(fmt::format("model {} at node (iz={}, ix={}) is {}; it must be finite and {} {}",
                                                  name, iz, ix, a(iz, ix), lo_inclusive ? ">=" : ">", lo));
}
}  // namespace

void Model::validate() const {
    grid.validate();
    check_array(eps_r, grid, "eps_r", 1.0, true);
    check_array(sigma, grid, "sigma", 0.0, true);
    check_array(mu_r, grid, "mu_r", 0.0, false);
}

double Model::checked_min_eps_mu() const {
    grid.validate();
    for (const auto& [a, name] : {std::pair{&eps_r, "eps_r"}, {&sigma, "sigma"}, {&mu_r, "mu_r"}})
        if (a->nz() != grid.nz || a->nx() != grid.nx)
            throw SizeMismatch(fmt::format("model array {} is [{}][{}], grid is [nz={}][nx={}]", name, a->nz(),
                                           a->nx(), grid.nz, grid.nx));
    // validate()'s checks and min_eps_mu() in one pass over the three arrays
    double v = INFINITY;
    bool all_ok = true;
    const double *e = eps_r.data(), *s = sigma.data(), *m = mu_r.data();
#pragma omp parallel for reduction(min : v) reduction(&& : all_ok) schedule(static)
    for (std::size_t i = 0; i < eps_r.size(); ++i) {
        all_ok = all_ok && std::isfinite(e[i]) && e[i] >= 1.0 && std::isfinite(s[i]) && s[i] >= 0.0 &&
                 std::isfinite(m[i]) && m[i] > 0.0;
        v = std::min(v, e[i] * m[i]);
    }
    if (!all_ok) validate();  // throws, naming the first node at fault
    return v;
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
