#include "support.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
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

ModelDirection smooth_direction(const Grid& g, double eps_scale, double sigma_scale, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    ModelDirection v{Array2D(g.nz, g.nx, 0.0), Array2D(g.nz, g.nx, 0.0)};
    const double kx1 = 1 + 3 * u(rng), kz1 = 1 + 3 * u(rng), kx2 = 1 + 3 * u(rng), kz2 = 1 + 3 * u(rng);
    const double ph1 = 6 * u(rng), ph2 = 6 * u(rng);
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            const double x = static_cast<double>(ix) / g.nx, z = static_cast<double>(iz) / g.nz;
            v.eps_r(iz, ix) = eps_scale * (0.6 + std::sin(kPi * (kx1 * x + kz1 * z) + ph1));
            v.sigma(iz, ix) = sigma_scale * (0.6 + std::cos(kPi * (kx2 * x - kz2 * z) + ph2));
        }
    return v;
}

Model perturbed(const Model& m, const ModelDirection& v, double h) {
    Model out = m;
    for (std::size_t i = 0; i < m.eps_r.size(); ++i) {
        out.eps_r.data()[i] += h * v.eps_r.data()[i];
        out.sigma.data()[i] += h * v.sigma.data()[i];
    }
    return out;
}

double dot(const ModelDirection& v, const Array2D& eps_r, const Array2D& sigma) {
    double d = 0;
    for (std::size_t i = 0; i < eps_r.size(); ++i) d += v.eps_r.data()[i] * eps_r.data()[i] + v.sigma.data()[i] * sigma.data()[i];
    return d;
}

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

std::vector<Call> changing_calls(int order, int steps_divisor) {
    const Grid g{60, 48, 0.02, 0.025}, other{72, 41, 0.02, 0.025};
    const Model a = heterogeneous_model(g, 5), b = heterogeneous_model(g, 6), c = heterogeneous_model(other, 7);
    const double dt = 0.9 * cfl_limit(g, 2.0, order);  // (2: the models' least eps_r)
    const int d = std::max(steps_divisor, 1);
    const Survey four = random_survey(g, 4, 1, 3, 160 / d, 3e8, dt, 11);
    const Survey two = random_survey(g, 2, 2, 5, 160 / d, 4e8, dt, 12);
    const Survey six_longer = random_survey(g, 6, 1, 2, 200 / d, 3e8, dt, 13);
    const Survey three_other_grid = random_survey(other, 3, 1, 4, 180 / d, 3e8, dt, 14);
    std::vector<Call> calls;
    auto add = [&](std::string what, const Model& m, const Survey& s, bool gradient, bool illumination = false) {
        calls.push_back({std::move(what), m, s, random_traces(s, static_cast<std::uint32_t>(calls.size())), gradient,
                         illumination});
    };
    add("gradient, model a, 4 shots", a, four, true);
    add("gradient, model b", b, four, true);
    add("forward, model b", b, four, false);
    Model b_one_node = b;  // (the coefficients of the call before must not be taken for it)
    b_one_node.sigma(g.nz - 3, g.nx - 2) *= 1.5;
    add("forward, model b with one node's sigma raised", b_one_node, four, false);
    Survey four_finer = four;  // the same model at another time step: its coefficients filled anew
    four_finer.dt *= 0.8;
    add("forward, the same model, a finer time step", b_one_node, four_finer, false);
    add("gradient, the same again (its coefficients kept as they are)", b_one_node, four_finer, true);
    Model magnetic = b;  // (the steps then read cq per node, which the uniform models' calls hold as one value)
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) magnetic.mu_r(iz, ix) = 1.0 + 0.3 * std::exp(-0.01 * ((ix - 25) * (ix - 25) + (iz - 20) * (iz - 20)));
    add("gradient, model b, magnetic", magnetic, four, true);
    add("gradient, 2 shots, other receivers and wavelets", a, two, true);
    add("gradient, 6 shots, 200 steps, illumination", b, six_longer, true, true);
    add("forward, 2 shots", b, two, false);
    add("gradient, another grid", c, three_other_grid, true);
    add("gradient, the first grid again", a, four, true);
    return calls;
}

std::vector<double> flat(const Traces& t) {
    std::vector<double> v;
    for (const auto& s : t) v.insert(v.end(), s.samples().begin(), s.samples().end());
    return v;
}

CallResult run_call(Propagator& p, const Call& c) {
    CallResult r;
    p.set_illumination(c.illumination);
    if (!c.gradient) {
        r.traces = flat(p.forward(c.model, c.survey));
        return r;
    }
    const GradientResult g = p.gradient(c.model, c.survey, c.observed);
    r.traces = flat(g.synthetic);
    r.grad_eps_r = g.grad_eps_r.values();
    r.grad_sigma = g.grad_sigma.values();
    for (const auto& w : g.grad_wavelet) r.grad_wavelet.insert(r.grad_wavelet.end(), w.begin(), w.end());
    r.illumination = g.illumination.values();
    r.misfit = g.misfit;
    return r;
}

void expect_bitwise_equal(const CallResult& a, const CallResult& b, const std::string& what) {
    EXPECT_EQ(a.traces, b.traces) << what;
    EXPECT_EQ(a.misfit, b.misfit) << what;
    EXPECT_EQ(a.grad_eps_r, b.grad_eps_r) << what;
    EXPECT_EQ(a.grad_sigma, b.grad_sigma) << what;
    EXPECT_EQ(a.grad_wavelet, b.grad_wavelet) << what;
    EXPECT_EQ(a.illumination, b.illumination) << what;
}

std::size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

namespace {

struct ProcessScratch {
    pid_t owner = ::getpid();
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gprfwi-tests-" + std::to_string(owner));
    ProcessScratch() {
        std::filesystem::remove_all(dir);  // a folder left by an earlier process of this pid
        std::filesystem::create_directories(dir);
    }
    ProcessScratch(const ProcessScratch&) = delete;
    ProcessScratch& operator=(const ProcessScratch&) = delete;
    ~ProcessScratch() {
        if (::getpid() != owner) return;  // a forked child leaves its parent's folder alone
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
};

}  // namespace

std::filesystem::path scratch_path(const std::string& name) {
    static const ProcessScratch scratch;
    return scratch.dir / name;
}

}  // namespace gprfwi::test
