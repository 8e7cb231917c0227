#include "gprfwi/regularization.hpp"

#include <cmath>
#include <vector>

namespace gprfwi {

namespace {

/// The value and gradient of a term that is a sum over nodes of a function of
/// the node's two forward differences. `edge(iz, ix, fx, fz)` returns the
/// node's share of the value and sets fx, fz to what the node's right and
/// lower edges pass on: each edge adds +f to its far node and -f to the node
/// itself. Rows run in parallel: each node gathers what its left and upper
/// neighbours pass on (so no two threads write one node), and the value is
/// summed per row, then over rows in order, so the result does not depend on
/// the number of threads.
template <class Edge>
double edge_sum(const Array2D& q, Array2D& g, Edge edge) {
    const int nz = q.nz(), nx = q.nx();
    const std::size_t n = q.size();
    // the fluxes, kept from call to call (an inversion calls this every evaluation, and fresh
    // memory would be faulted in each time); every flux is written before it is read. The calling
    // thread's buffers, reached by the pointers below: a worker thread has buffers of its own.
    thread_local std::vector<double> fx_kept, fz_kept;
    fx_kept.resize(n);
    fz_kept.resize(n);
    double* const fx = fx_kept.data();
    double* const fz = fz_kept.data();
    auto at = [nx](int iz, int ix) { return static_cast<std::size_t>(iz) * static_cast<std::size_t>(nx) + static_cast<std::size_t>(ix); };
    std::vector<double> rows(static_cast<std::size_t>(nz), 0.0);
#pragma omp parallel for schedule(static)
    for (int iz = 0; iz < nz; ++iz) {
        double r = 0;
        for (int ix = 0; ix < nx; ++ix) r += edge(iz, ix, fx[at(iz, ix)], fz[at(iz, ix)]);
        rows[static_cast<std::size_t>(iz)] = r;
    }
#pragma omp parallel for schedule(static)
    for (int iz = 0; iz < nz; ++iz)
        for (int ix = 0; ix < nx; ++ix) {
            // in the order a serial sweep over the edges would add them
            double v = g(iz, ix);
            if (iz > 0) v += fz[at(iz - 1, ix)];
            if (ix > 0) v += fx[at(iz, ix - 1)];
            v -= fx[at(iz, ix)];
            v -= fz[at(iz, ix)];
            g(iz, ix) = v;
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
