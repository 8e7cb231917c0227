#include "gprfwi/example.hpp"

#include <cmath>

#include "gprfwi/wavelet.hpp"

namespace gprfwi {

namespace {
const Grid kExampleGrid{200, 120, 0.02, 0.02};

void add_disc(Model& m, double xc, double zc, double radius, double eps_r, double sigma) {
    for (int iz = 0; iz < m.grid.nz; ++iz)
        for (int ix = 0; ix < m.grid.nx; ++ix)
            if (std::hypot(ix * m.grid.dx - xc, iz * m.grid.dz - zc) <= radius) {
                m.eps_r(iz, ix) = eps_r;
                m.sigma(iz, ix) = sigma;
            }
}
}  // namespace

Model example_starting_model() { return Model::uniform(kExampleGrid, 6.0, 0.002); }

Model example_model() {
    Model m = example_starting_model();
    add_disc(m, 1.6, 0.9, 0.30, 12.0, 0.010);  // wet, conductive
    add_disc(m, 2.6, 1.6, 0.25, 4.0, 0.001);   // dry
    for (int iz = 0; iz < m.grid.nz; ++iz)     // clay layer
        for (int ix = 0; ix < m.grid.nx; ++ix)
            if (iz * m.grid.dz >= 2.0 && iz * m.grid.dz < 2.2) {
                m.eps_r(iz, ix) = 9.0;
                m.sigma(iz, ix) = 0.020;
            }
    return m;
}

Survey example_survey() {
    Survey s;
    s.dt = 4.0e-11;
    s.nt = 1200;
    const auto wavelet = ricker(s.nt, s.dt, 2.0e8, 7.5e-9, 1.0);
    for (int k = 0; k < 6; ++k) {
        Shot shot;
        shot.sources.push_back({{0.4, 0.2 + 0.4 * k}, 1.0});
        for (int r = 0; r < 12; ++r) shot.receivers.push_back({3.6, 0.1 + 0.2 * r});
        shot.wavelet = wavelet;
        s.shots.push_back(shot);
    }
    return s;
}

}  // namespace gprfwi
