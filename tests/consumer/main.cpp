// The README's "Using the library" example, compiled against an installed
// gprfwi: a forward run and a gradient of a small crosshole batch.
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

    double norm = 0;
    for (double v : g.grad_eps_r.values()) norm += v * v;
    std::printf("consumer: %s, %zu shots, %d samples; misfit %.6g, |grad eps_r| %.6g\n", prop->name().c_str(),
                data.size(), data[0].nt(), g.misfit, std::sqrt(norm));
    return g.misfit > 0 && std::isfinite(norm) && norm > 0 ? 0 : 1;
}
