#include "gprfwi/model_builder.hpp"

#include <algorithm>
#include <cmath>

namespace gprfwi {

bool ModelRegion::contains(double x, double z) const {
    switch (kind) {
        case Kind::layer:
            return z >= top && z < bottom;
        case Kind::circle:
            return std::hypot(x - center.x, z - center.z) <= radius;
        case Kind::rectangle:
            return x >= std::min(from.x, to.x) && x <= std::max(from.x, to.x) && z >= std::min(from.z, to.z) &&
                   z <= std::max(from.z, to.z);
        case Kind::polygon: {
            bool inside = false;
            for (std::size_t i = 0, j = points.size() - 1; i < points.size(); j = i++) {
                const Position& a = points[i];
                const Position& b = points[j];
                if ((a.z > z) != (b.z > z) && x < (b.x - a.x) * (z - a.z) / (b.z - a.z) + a.x) inside = !inside;
            }
            return inside;
        }
    }
    return false;
}

void paint_regions(Model& model, const std::vector<ModelRegion>& regions) {
    const Grid& g = model.grid;
    for (const ModelRegion& r : regions)
        for (int iz = 0; iz < g.nz; ++iz)
            for (int ix = 0; ix < g.nx; ++ix) {
                if (!r.contains(ix * g.dx, iz * g.dz)) continue;
                if (r.eps_r) model.eps_r(iz, ix) = *r.eps_r;
                if (r.sigma) model.sigma(iz, ix) = *r.sigma;
                if (r.mu_r) model.mu_r(iz, ix) = *r.mu_r;
            }
}

std::vector<char> nodes_in_regions(const Grid& g, const std::vector<ModelRegion>& regions) {
    std::vector<char> inside(static_cast<std::size_t>(g.nz) * g.nx, 0);
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix)
            for (const ModelRegion& r : regions)
                if (r.contains(ix * g.dx, iz * g.dz)) inside[static_cast<std::size_t>(iz) * g.nx + ix] = 1;
    return inside;
}

namespace {

std::vector<double> gaussian_kernel(double s) {
    const int half = static_cast<int>(std::ceil(4 * s));
    std::vector<double> k(2 * half + 1);
    double sum = 0;
    for (int i = -half; i <= half; ++i) sum += k[i + half] = std::exp(-0.5 * i * i / (s * s));
    for (double& v : k) v /= sum;
    return k;
}

/// Convolves `n` values spaced `stride` apart. Only the kernel's part over
/// the line is summed term by term; with edges extended, the parts beyond
/// the ends weigh the end values by their sums (`tail`: prefix sums of k), so
/// that a kernel longer than the line costs no more than the line.
void convolve_line(double* v, int n, std::ptrdiff_t stride, const std::vector<double>& k, const std::vector<double>& tail,
                   SmoothingEdges edges, std::vector<double>& work) {
    const int half = static_cast<int>(k.size() / 2);
    work.resize(n);
    for (int i = 0; i < n; ++i) work[i] = v[i * stride];
    for (int i = 0; i < n; ++i) {
        const int lo = std::max(-half, -i), hi = std::min(half, n - 1 - i);
        double acc = 0;
        if (edges == SmoothingEdges::extend) acc += tail[lo + half] * work[0];  // k[0 .. lo + half) beyond the start
        for (int j = lo; j <= hi; ++j) acc += k[j + half] * work[i + j];
        if (edges == SmoothingEdges::extend) acc += (tail.back() - tail[hi + half + 1]) * work[n - 1];  // ... beyond the end
        v[i * stride] = acc;
    }
}

/// tail[m] = k[0] + ... + k[m - 1], m = 0 .. k.size().
std::vector<double> prefix_sums(const std::vector<double>& k) {
    std::vector<double> tail(k.size() + 1, 0.0);
    for (std::size_t m = 0; m < k.size(); ++m) tail[m + 1] = tail[m] + k[m];
    return tail;
}

}  // namespace

void smooth_gaussian(double* a, int nz, int nx, double sx_nodes, double sz_nodes, SmoothingEdges edges) {
    // lines are independent: they run in parallel, each thread with its own copy of the line
    if (sx_nodes > 0) {
        const auto k = gaussian_kernel(sx_nodes);
        const auto tail = prefix_sums(k);
#pragma omp parallel
        {
            std::vector<double> work;
#pragma omp for schedule(static)
            for (int iz = 0; iz < nz; ++iz) convolve_line(a + static_cast<std::ptrdiff_t>(iz) * nx, nx, 1, k, tail, edges, work);
        }
    }
    if (sz_nodes > 0) {
        const auto k = gaussian_kernel(sz_nodes);
        const auto tail = prefix_sums(k);
#pragma omp parallel
        {
            std::vector<double> work;
#pragma omp for schedule(static)
            for (int ix = 0; ix < nx; ++ix) convolve_line(a + ix, nz, nx, k, tail, edges, work);
        }
    }
}

void smooth_gaussian(Array2D& a, double sx_nodes, double sz_nodes, SmoothingEdges edges) {
    smooth_gaussian(a.data(), a.nz(), a.nx(), sx_nodes, sz_nodes, edges);
}

}  // namespace gprfwi
