#include "gprfwi/model_builder.hpp"

#include <algorithm>
#include <cmath>

namespace gprfwi {

namespace {

/// Whether (x, z) lies on the segment a-b, to a billionth of its length (node positions are
/// products i * dx, vertices are decimals: neither is exact).
bool on_segment(const Position& a, const Position& b, double x, double z) {
    const double ux = b.x - a.x, uz = b.z - a.z, vx = x - a.x, vz = z - a.z;
    const double length = std::hypot(ux, uz);
    if (length == 0) return vx == 0 && vz == 0;
    const double tol = 1e-9 * length;
    const double along = (ux * vx + uz * vz) / length;   // distance along a-b
    const double across = (ux * vz - uz * vx) / length;  // distance from its line
    return std::abs(across) <= tol && along >= -tol && along <= length + tol;
}

}  // namespace

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
            // a node on an edge is inside, as for the other shapes: the even-odd test alone leaves out
            // the right and lower edges, so a layer drawn to the model's edge would miss its last
            // column and row (a seam the CPML then extends into a reflector)
            for (std::size_t i = 0, j = points.size() - 1; i < points.size(); j = i++)
                if (on_segment(points[j], points[i], x, z)) return true;
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

/// A Gaussian kernel of standard deviation `s` nodes reaching 4 s, summing
/// to 1, for a line of `n` values: only its part over the line (offsets
/// within n - 1) is stored, so that its memory follows the line whatever s.
/// tail[m] is the kernel's mass before k[m] (offsets below -half included),
/// m = 0 .. k.size(); the last entry, the whole kernel's sum.
struct LineKernel {
    std::vector<double> k;  // offsets -half .. half, half = min(ceil(4 s), n - 1)
    std::vector<double> tail;
};

/// Past this many terms the kernel's mass past the line is worked out in
/// closed form rather than term by term.
constexpr double kKernelTermsSummed = 1 << 20;

LineKernel gaussian_kernel(double s, int n) {
    const double reach = std::ceil(4 * s);
    const int half = static_cast<int>(std::min(reach, static_cast<double>(std::max(n - 1, 0))));
    const auto term = [s](double i) { return std::exp(-0.5 * i * i / (s * s)); };
    LineKernel g;
    g.k.resize(2 * static_cast<std::size_t>(half) + 1);
    g.tail.resize(g.k.size() + 2);
    if (reach <= kKernelTermsSummed) {
        // term by term, in order from -reach: the same sums as a kernel
        // stored whole, whose parts past the line weigh the end values
        const long r = static_cast<long>(reach);
        double sum = 0;
        for (long i = -r; i <= r; ++i) sum += term(static_cast<double>(i));
        double before = 0;
        for (long i = -r; i < -half; ++i) before += term(static_cast<double>(i)) / sum;
        g.tail[0] = before;
        for (int i = -half; i <= half; ++i) {
            g.k[i + half] = term(i) / sum;
            g.tail[i + half + 1] = g.tail[i + half] + g.k[i + half];
        }
        double total = g.tail[g.k.size()];
        for (long i = half + 1; i <= r; ++i) total += term(static_cast<double>(i)) / sum;
        g.tail.back() = total;
        return g;
    }
    // far longer than any line: the terms past the line as the integral of
    // the Gaussian over them (midpoint rule), exact to O(1 / s^2)
    const double root2s = std::sqrt(2.0) * s;
    const double past = s * std::sqrt(std::acos(-1.0) / 2) *
                        (std::erf((reach + 0.5) / root2s) - std::erf((half + 0.5) / root2s));
    double sum = 2 * past;
    for (int i = -half; i <= half; ++i) sum += g.k[i + half] = term(i);
    g.tail[0] = past / sum;
    for (std::size_t m = 0; m < g.k.size(); ++m) g.tail[m + 1] = g.tail[m] + (g.k[m] /= sum);
    g.tail.back() = g.tail[g.k.size()] + past / sum;
    return g;
}

/// Lines smoothed at once: adjacent lines are adjacent in memory along
/// the other axis, so a block of them is read whole cache lines at a time,
/// and the sum over the kernel runs over the block's lines in SIMD lanes.
constexpr int kLinesPerBlock = 32;

/// Convolves `lines` (at most kLinesPerBlock) lines of `n` values each:
/// value i of line b is v[i * along + b * across]. Only the kernel's part
/// over the line is summed term by term; with edges extended, the parts
/// beyond the ends weigh the end values by their masses (`tail`), so that a
/// kernel longer than the line costs no more than the line.
/// Each output is summed in the same order whatever the block.
void convolve_lines(double* v, int n, std::ptrdiff_t along, std::ptrdiff_t across, int lines,
                    const std::vector<double>& k, const std::vector<double>& tail, SmoothingEdges edges,
                    std::vector<double>& work) {
    constexpr int L = kLinesPerBlock;
    const int half = static_cast<int>(k.size() / 2);
    work.assign(static_cast<std::size_t>(n) * L, 0.0);
    for (int i = 0; i < n; ++i)
        for (int b = 0; b < lines; ++b) work[static_cast<std::size_t>(i) * L + b] = v[i * along + b * across];
    const double* first = work.data();
    const double* last = work.data() + static_cast<std::size_t>(n - 1) * L;
    for (int i = 0; i < n; ++i) {
        const int lo = std::max(-half, -i), hi = std::min(half, n - 1 - i);
        double acc[L] = {};
        if (edges == SmoothingEdges::extend) {  // the mass before k[lo + half], beyond the start
            const double t = tail[lo + half];
            for (int b = 0; b < L; ++b) acc[b] += t * first[b];
        }
        for (int j = lo; j <= hi; ++j) {
            const double kj = k[j + half];
            const double* w = work.data() + static_cast<std::size_t>(i + j) * L;
            for (int b = 0; b < L; ++b) acc[b] += kj * w[b];
        }
        if (edges == SmoothingEdges::extend) {  // ... beyond the end
            const double t = tail.back() - tail[hi + half + 1];
            for (int b = 0; b < L; ++b) acc[b] += t * last[b];
        }
        for (int b = 0; b < lines; ++b) v[i * along + b * across] = acc[b];
    }
}

}  // namespace

void smooth_gaussian(double* a, int nz, int nx, double sx_nodes, double sz_nodes, SmoothingEdges edges) {
    // blocks of lines are independent: they run in parallel, each thread with its own copy of its block
    auto pass = [&](double s, int n, std::ptrdiff_t along, std::ptrdiff_t across, int count) {
        const LineKernel g = gaussian_kernel(s, n);
        const int blocks = (count + kLinesPerBlock - 1) / kLinesPerBlock;
#pragma omp parallel
        {
            std::vector<double> work;
#pragma omp for schedule(static)
            for (int blk = 0; blk < blocks; ++blk) {
                const int b0 = blk * kLinesPerBlock;
                convolve_lines(a + b0 * across, n, along, across, std::min(kLinesPerBlock, count - b0), g.k, g.tail, edges, work);
            }
        }
    };
    if (sx_nodes > 0) pass(sx_nodes, nx, 1, nx, nz);  // rows
    if (sz_nodes > 0) pass(sz_nodes, nz, nx, 1, nx);  // columns
}

void smooth_gaussian(Array2D& a, double sx_nodes, double sz_nodes, SmoothingEdges edges) {
    smooth_gaussian(a.data(), a.nz(), a.nx(), sx_nodes, sz_nodes, edges);
}

}  // namespace gprfwi
