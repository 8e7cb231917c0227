#include "gprfwi/regularization.hpp"

#include <cmath>

namespace gprfwi {

double tikhonov(const Array2D& q, double dx, double dz, Array2D& g) {
    const double area = dx * dz;
    double r = 0;
    for (int iz = 0; iz < q.nz(); ++iz)
        for (int ix = 0; ix < q.nx(); ++ix) {
            if (ix + 1 < q.nx()) {
                const double d = (q(iz, ix + 1) - q(iz, ix)) / dx;
                r += 0.5 * d * d * area;
                g(iz, ix + 1) += d / dx * area;
                g(iz, ix) -= d / dx * area;
            }
            if (iz + 1 < q.nz()) {
                const double d = (q(iz + 1, ix) - q(iz, ix)) / dz;
                r += 0.5 * d * d * area;
                g(iz + 1, ix) += d / dz * area;
                g(iz, ix) -= d / dz * area;
            }
        }
    return r;
}

double total_variation(const Array2D& q, double dx, double dz, double beta, Array2D& g) {
    const double area = dx * dz;
    double r = 0;
    for (int iz = 0; iz < q.nz(); ++iz)
        for (int ix = 0; ix < q.nx(); ++ix) {
            const double ddx = ix + 1 < q.nx() ? (q(iz, ix + 1) - q(iz, ix)) / dx : 0.0;
            const double ddz = iz + 1 < q.nz() ? (q(iz + 1, ix) - q(iz, ix)) / dz : 0.0;
            const double n = std::sqrt(ddx * ddx + ddz * ddz + beta * beta);
            r += n * area;
            if (ix + 1 < q.nx()) {
                g(iz, ix + 1) += ddx / n / dx * area;
                g(iz, ix) -= ddx / n / dx * area;
            }
            if (iz + 1 < q.nz()) {
                g(iz + 1, ix) += ddz / n / dz * area;
                g(iz, ix) -= ddz / n / dz * area;
            }
        }
    return r;
}

}  // namespace gprfwi
