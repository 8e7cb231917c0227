#include "inversion/stage_regularization.hpp"

#include <algorithm>
#include <cmath>

#include "gprfwi/regularization.hpp"
#include "parallel/parallel_arrays.hpp"

namespace gprfwi {

namespace {

/// The weighted sum of regulariser w's terms: term(t, part) fills the zeroed
/// `part` with term t's contribution (t 0: Tikhonov, 1: total variation) and
/// returns its value; `sum` (reshaped to nz x nx) gets the weighted sum of
/// the parts, the result that of the values. A lone term's part is `sum`
/// itself, scaled in place (the same values: 0 plus the weighted part).
template <class Term>
double weighted_terms(const RegularizationSpec& w, int nz, int nx, Array2D& sum, Array2D& part, Term term) {
    double r = 0;
    const bool both = w.tikhonov != 0 && w.tv != 0;
    reshape(sum, nz, nx);
    fill_parallel(sum, 0.0);
    if (both) reshape(part, nz, nx);
    Array2D& into = both ? part : sum;
    for (int t = 0; t < 2; ++t) {
        const double weight = t == 0 ? w.tikhonov : w.tv;  // (no structured binding: OpenMP captures it below)
        if (weight == 0) continue;
        if (both) fill_parallel(part, 0.0);
        r += weight * term(t, into);
        const double* p = into.data();
        double* out = sum.data();
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < sum.size(); ++i) out[i] = (both ? out[i] : 0.0) + weight * p[i];
    }
    return r;
}

}  // namespace

void StageRegularization::quantity(const Model& m, const StageVariables& v, std::size_t k, Array2D& q) const {
    reshape(q, m.grid.nz, m.grid.nx);
    const std::size_t n = q.size();
    const bool eps = v.params[k] == 0;
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i)
        q.data()[i] = eps ? m.eps_r.data()[i] / v.eps_ref : std::log(std::max(m.sigma.data()[i], spec_.sigma_min) / v.sigma_ref);
}

RegularizationSpec StageRegularization::weights(const StageVariables& v, std::size_t k) const {
    if (v.params[k] == 0) return spec_.regularize_eps_r;
    RegularizationSpec w = spec_.regularize_sigma;
    w.tv *= sigma_tv_share_;
    return w;
}

double StageRegularization::value(const Model& m, const StageVariables& v, double* gx) const {
    double r = 0;
    Scratch& s = scratch_;
    const Grid& g = m.grid;
    const std::size_t n = m.eps_r.size();
    for (std::size_t k = 0; k < v.params.size(); ++k) {
        const RegularizationSpec w = weights(v, k);
        if (w.tikhonov == 0 && w.tv == 0) continue;
        quantity(m, v, k, s.q);
        r += weighted_terms(w, g.nz, g.nx, s.sum, s.part, [&](int t, Array2D& part) {
            return t == 0 ? tikhonov(s.q, g.dx, g.dz, part) : total_variation(s.q, g.dx, g.dz, w.tv_beta, part);
        });
        if (gx) {
            const double dq_dx = v.params[k] == 0 ? v.s_eps / v.eps_ref : v.s_sig;
            const double* gq = s.sum.data();
            v.collect(gx + k * n, true, [&](std::size_t from, std::size_t i) { return gq[from] * dq_dx * v.weight[i]; });
        }
    }
    return r;
}

void StageRegularization::hessian(const Model& m, const StageVariables& v, const double* d, double* out) const {
    const Grid& g = m.grid;
    Scratch& s = scratch_;
    const std::size_t n = m.eps_r.size();
    for (std::size_t k = 0; k < v.params.size(); ++k) {
        const RegularizationSpec w = weights(v, k);
        if (w.tikhonov == 0 && w.tv == 0) continue;
        const double dq_dx = v.params[k] == 0 ? v.s_eps / v.eps_ref : v.s_sig;
        quantity(m, v, k, s.q);
        reshape(s.dq, g.nz, g.nx);
        double* dq = s.dq.data();
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) dq[i] = v.masked[i] ? 0.0 : dq_dx * v.weight[i] * d[k * n + i];
        if (v.links) follow_edges(*v.links, dq);
        weighted_terms(w, g.nz, g.nx, s.sum, s.part, [&](int t, Array2D& part) {
            if (t == 0) tikhonov_hessian(s.dq, g.dx, g.dz, part);
            else total_variation_hessian(s.q, s.dq, g.dx, g.dz, w.tv_beta, part);
            return 0.0;
        });
        const double* hq = s.sum.data();
        v.collect(out + k * n, true, [&](std::size_t from, std::size_t i) { return hq[from] * dq_dx * v.weight[i]; });
    }
}

}  // namespace gprfwi
