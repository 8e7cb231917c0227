#include "support.hpp"

#include <cmath>
#include <random>

#include "gprfwi/constants.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/wavelet.hpp"

namespace gprfwi::test {

Model heterogeneous_model(const Grid& g, std::uint32_t seed) {
    Model m = Model::uniform(g, 6.0, 0.006);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int blob = 0; blob < 5; ++blob) {
        const double xc = u(rng) * g.nx, zc = u(rng) * g.nz;
        const double r = 2.0 + u(rng) * 0.25 * std::min(g.nx, g.nz);
        const double de = (u(rng) - 0.4) * 8.0, ds = (u(rng) - 0.4) * 0.02;
        for (int iz = 0; iz < g.nz; ++iz)
            for (int ix = 0; ix < g.nx; ++ix) {
                const double w = std::exp(-(std::pow(ix - xc, 2) + std::pow(iz - zc, 2)) / (r * r));
                m.eps_r(iz, ix) += de * w;
                m.sigma(iz, ix) += ds * w;
            }
    }
    for (std::size_t i = 0; i < m.eps_r.size(); ++i) {
        m.eps_r.data()[i] = std::max(m.eps_r.data()[i], 2.0);
        m.sigma.data()[i] = std::max(m.sigma.data()[i], 0.001);
    }
    return m;
}

double cfl_limit(const Grid& g, double eps_r_min, int order) {
    const double v = speed_of_light() / std::sqrt(eps_r_min);
    return 1.0 / (v * std::sqrt(1.0 / (g.dx * g.dx) + 1.0 / (g.dz * g.dz)) * stencil_abs_sum(order));
}

Survey random_survey(const Grid& g, int n_shots, int n_src, int n_rec, int nt, double f_hz, double dt,
                     std::uint32_t seed, double margin) {
    std::mt19937 rng(seed);
    auto pos = [&] {
        std::uniform_real_distribution<double> ux(margin * g.dx, (g.nx - 1 - margin) * g.dx);
        std::uniform_real_distribution<double> uz(margin * g.dz, (g.nz - 1 - margin) * g.dz);
        return Position{ux(rng), uz(rng)};
    };
    Survey s;
    s.dt = dt;
    s.nt = nt;
    for (int k = 0; k < n_shots; ++k) {
        Shot shot;
        for (int j = 0; j < n_src; ++j) shot.sources.push_back({pos(), 1.0 + 0.3 * j});
        for (int r = 0; r < n_rec; ++r) shot.receivers.push_back(pos());
        shot.wavelet = ricker(nt, dt, f_hz * (1.0 + 0.1 * k));
        s.shots.push_back(shot);
    }
    return s;
}

Traces random_traces(const Survey& s, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    Traces t = make_traces(s);
    for (auto& shot : t)
        for (double& v : shot.samples()) v = n(rng);
    return t;
}

Survey with_random_wavelets(Survey s, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    for (auto& shot : s.shots)
        for (double& v : shot.wavelet) v = n(rng);
    return s;
}

double dot(const Traces& a, const Traces& b) {
    double d = 0;
    for (std::size_t s = 0; s < a.size(); ++s)
        for (std::size_t i = 0; i < a[s].samples().size(); ++i) d += a[s].samples()[i] * b[s].samples()[i];
    return d;
}

double norm(const Traces& a) { return std::sqrt(dot(a, a)); }

double relative_difference(const Traces& a, const Traces& b) {
    double num = 0, den = 0;
    for (std::size_t s = 0; s < a.size(); ++s)
        for (std::size_t i = 0; i < a[s].samples().size(); ++i) {
            num += std::pow(a[s].samples()[i] - b[s].samples()[i], 2);
            den += std::pow(b[s].samples()[i], 2);
        }
    return std::sqrt(num / den);
}

PropagatorOptions double_options(int order, int pml) {
    PropagatorOptions o;
    o.backend = BackendKind::cpu;
    o.precision = Precision::double_precision;
    o.stencil_order = order;
    o.cpml.widths = PmlWidths::uniform(pml);
    return o;
}

}  // namespace gprfwi::test
