// The README's "Using the library" example, compiled against an installed
// gprfwi: a forward run, a gradient, Born traces and a Gauss-Newton
// Hessian-vector product of a small crosshole batch.
#include <cmath>
#include <cstdio>

#include "gprfwi/propagator.hpp"
#include "gprfwi/wavelet.hpp"

int main() {
    const gprfwi::Grid grid{60, 50, 0.02, 0.02};
    gprfwi::Model model = gprfwi::Model::uniform(grid, 6.0, 0.002);
    gprfwi::Model truth = model;
    truth.eps_r(25, 30) = 9.0;
    gprfwi::Survey survey;
    survey.dt = 4e-11;
    survey.nt = 400;
    for (int s = 0; s < 2; ++s) {
        gprfwi::Shot shot;
        shot.sources.push_back({{0.2, 0.3 + 0.4 * s}, 1.0});
        for (int r = 0; r < 5; ++r) shot.receivers.push_back({1.0, 0.1 + 0.2 * r});
        shot.wavelet = gprfwi::ricker(survey.nt, survey.dt, 3e8);
        survey.shots.push_back(shot);
    }

    gprfwi::PropagatorOptions opt;               // backend auto, single precision, stencil 4, CPML 20
    opt.snapshots.checkpoint_steps = -1;         // exact gradient in bounded memory
    auto prop = gprfwi::make_propagator(opt);
    const gprfwi::Traces observed = prop->forward(truth, survey);  // Ey [shot][receiver][sample]
    const gprfwi::Traces data = prop->forward(model, survey);
    gprfwi::GradientResult g = prop->gradient(model, survey, observed);
    const gprfwi::Array2D v_eps_r(grid.nz, grid.nx, 0.1), v_sigma(grid.nz, grid.nx, 1e-4);
    gprfwi::Traces jv = prop->born(model, survey, {v_eps_r, v_sigma});  // J v, exact
    gprfwi::HessianResult h = prop->hessian(model, survey, gprfwi::L2Misfit(observed), {v_eps_r, v_sigma},
                                            gprfwi::HessianKind::gauss_newton);

    double norm = 0, vhv = 0, jv2 = 0;
    for (double x : g.grad_eps_r.values()) norm += x * x;
    for (std::size_t i = 0; i < h.hv_eps_r.size(); ++i)
        vhv += v_eps_r.data()[i] * h.hv_eps_r.data()[i] + v_sigma.data()[i] * h.hv_sigma.data()[i];
    for (const auto& shot : jv)
        for (double x : shot.samples()) jv2 += x * x;
    std::printf("consumer: %s, %zu shots, %d samples; misfit %.6g, |grad eps_r| %.6g; <v, H_GN v> %.6g, |J v|^2 %.6g\n",
                prop->name().c_str(), data.size(), data[0].nt(), g.misfit, std::sqrt(norm), vhv, jv2);
    const bool second_order = jv2 > 0 && std::abs(vhv - jv2) <= 1e-3 * jv2;  // (single precision)
    return g.misfit > 0 && std::isfinite(norm) && norm > 0 && second_order ? 0 : 1;
}
