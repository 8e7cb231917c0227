#include "gprfwi/regularization.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace gprfwi {

namespace {

/// The value and gradient of a term that is a sum over nodes of a function of
/// the node's two forward differences. `edge(iz, ix, fx, fz)` returns the
/// node's share of the value and sets fx, fz to what the node's right and
/// lower edges pass on: each edge adds +f to its far node and -f to the node
/// itself. Blocks of rows run in parallel, each in one sweep: a row's fluxes,
/// then its nodes, which gather what their left and upper neighbours pass on
/// (so no two threads write one node; a block works out the fluxes of the
/// row above it again, `edge` being a function of the node alone). The value
/// is summed per row, then over rows in order, so the result does not depend
/// on the number of threads.
template <class Edge>
double edge_sum(const Array2D& q, Array2D& g, Edge edge) {
    constexpr int kRows = 32;  // per block: the row above each block is worked out twice
    const int nz = q.nz(), nx = q.nx();
    const int blocks = (nz + kRows - 1) / kRows;
    std::vector<double> rows(static_cast<std::size_t>(nz), 0.0);
#pragma omp parallel
    {
        // a row's fluxes (fx, fz) and the fluxes of the row above (up), of this thread
        std::vector<double> fx(static_cast<std::size_t>(nx)), fz(fx.size()), up(fx.size());
#pragma omp for schedule(static)
        for (int b = 0; b < blocks; ++b) {
            const int z0 = b * kRows, z1 = std::min(nz, z0 + kRows);
            if (z0 > 0) {
                double unused = 0;
                for (int ix = 0; ix < nx; ++ix) edge(z0 - 1, ix, unused, up[static_cast<std::size_t>(ix)]);
            }
            for (int iz = z0; iz < z1; ++iz) {
                double r = 0;
                for (int ix = 0; ix < nx; ++ix)
                    r += edge(iz, ix, fx[static_cast<std::size_t>(ix)], fz[static_cast<std::size_t>(ix)]);
                rows[static_cast<std::size_t>(iz)] = r;
                for (int ix = 0; ix < nx; ++ix) {
                    // in the order a serial sweep over the edges would add them
                    const auto k = static_cast<std::size_t>(ix);
                    double v = g(iz, ix);
                    if (iz > 0) v += up[k];
                    if (ix > 0) v += fx[k - 1];
                    v -= fx[k];
                    v -= fz[k];
                    g(iz, ix) = v;
                }
                std::swap(up, fz);
            }
        }
    }
    double r = 0;
    for (double row : rows) r += row;
    return r;
}

/// A node's two forward differences, per metre; 0 where it has no right or
/// lower neighbour (the model's last column or row).
struct ForwardDifferences {
    bool right, below;
    double x, z;
};
ForwardDifferences forward_differences(const Array2D& q, int iz, int ix, double dx, double dz) {
    const bool right = ix + 1 < q.nx(), below = iz + 1 < q.nz();
    return {right, below, right ? (q(iz, ix + 1) - q(iz, ix)) / dx : 0.0, below ? (q(iz + 1, ix) - q(iz, ix)) / dz : 0.0};
}

}  // namespace

double tikhonov(const Array2D& q, double dx, double dz, Array2D& g) {
    const double area = dx * dz;
    return edge_sum(q, g, [&](int iz, int ix, double& fx, double& fz) {
        const ForwardDifferences a = forward_differences(q, iz, ix, dx, dz);
        double r = 0;
        fx = fz = 0;
        if (a.right) {
            r += 0.5 * a.x * a.x * area;
            fx = a.x / dx * area;
        }
        if (a.below) {
            r += 0.5 * a.z * a.z * area;
            fz = a.z / dz * area;
        }
        return r;
    });
}

double total_variation(const Array2D& q, double dx, double dz, double beta, Array2D& g) {
    const double area = dx * dz;
    return edge_sum(q, g, [&](int iz, int ix, double& fx, double& fz) {
        const ForwardDifferences a = forward_differences(q, iz, ix, dx, dz);
        const double n = std::sqrt(a.x * a.x + a.z * a.z + beta * beta);
        fx = a.right ? a.x / n / dx * area : 0.0;
        fz = a.below ? a.z / n / dz * area : 0.0;
        return n * area;
    });
}

void tikhonov_hessian(const Array2D& dq, double dx, double dz, Array2D& hv) {
    tikhonov(dq, dx, dz, hv);
}

void total_variation_hessian(const Array2D& q, const Array2D& dq, double dx, double dz, double beta, Array2D& hv) {
    const double area = dx * dz;
    edge_sum(q, hv, [&](int iz, int ix, double& fx, double& fz) {
        const ForwardDifferences a = forward_differences(q, iz, ix, dx, dz), b = forward_differences(dq, iz, ix, dx, dz);
        const double n = std::sqrt(a.x * a.x + a.z * a.z + beta * beta);
        const double c = (a.x * b.x + a.z * b.z) / (n * n * n);
        // the change of the gradient's fluxes a / n along dq
        fx = a.right ? (b.x / n - a.x * c) / dx * area : 0.0;
        fz = a.below ? (b.z / n - a.z * c) / dz * area : 0.0;
        return 0.0;
    });
}

}  // namespace gprfwi
