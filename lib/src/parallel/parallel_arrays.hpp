#pragma once
// Whole-array passes spread over the threads: the inversion driver copies
// and compares models and gradients of millions of nodes per evaluation,
// and one thread's memory bandwidth would make them cost more than a
// propagation's set-up (docs/performance.md, "Whole calls").

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/model.hpp"

namespace gprfwi {

/// to[0..n) = from[0..n).
inline void copy_parallel(const double* from, std::size_t n, double* to) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
}

/// a reshaped to nz x nx; its values are kept only where the shape matches
/// (a buffer reused from call to call, every node written by its user).
inline void reshape(Array2D& a, int nz, int nx) {
    if (a.nz() != nz || a.nx() != nx) a = Array2D(nz, nx);
}

/// to = from (to reshaped, its memory kept where the size matches).
inline void copy_parallel(const Array2D& from, Array2D& to) {
    reshape(to, from.nz(), from.nx());
    copy_parallel(from.data(), from.size(), to.data());
}

inline void copy_parallel(const Model& from, Model& to) {
    to.grid = from.grid;
    copy_parallel(from.eps_r, to.eps_r);
    copy_parallel(from.sigma, to.sigma);
    copy_parallel(from.mu_r, to.mu_r);
}

/// Whether a and b hold the same values (bitwise as doubles compare: a NaN
/// equals nothing).
inline bool equal_parallel(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    bool same = true;
    const double* pa = a.data();
    const double* pb = b.data();
#pragma omp parallel for schedule(static) reduction(&& : same)
    for (std::size_t i = 0; i < a.size(); ++i) same = same && pa[i] == pb[i];
    return same;
}

inline bool equal_parallel(const Array2D& a, const Array2D& b) {
    return a.nz() == b.nz() && a.nx() == b.nx() && equal_parallel(a.values(), b.values());
}

/// Models a's and b's arrays side by side (eps_r, sigma, mu_r), where their
/// grids and every array's shape agree; else none.
inline std::optional<std::array<std::pair<const Array2D*, const Array2D*>, 3>> array_pairs(const Model& a,
                                                                                          const Model& b) {
    if (!(a.grid == b.grid)) return std::nullopt;
    const std::array<std::pair<const Array2D*, const Array2D*>, 3> arrays{
        {{&a.eps_r, &b.eps_r}, {&a.sigma, &b.sigma}, {&a.mu_r, &b.mu_r}}};
    for (const auto& [x, y] : arrays)
        if (x->nz() != y->nz() || x->nx() != y->nx()) return std::nullopt;
    return arrays;
}

/// Whether models a and b hold the same grid and the same values, bit for
/// bit. The threads compare their blocks of the three arrays together, and a
/// thread stops reading at its first difference: models that differ almost
/// everywhere (an inversion's steps) are told apart at once.
inline bool same_bits_parallel(const Model& a, const Model& b) {
    const auto pairs = array_pairs(a, b);
    if (!pairs) return false;
    const auto& arrays = *pairs;
    constexpr std::size_t kBlock = 4096;
    const std::size_t n = a.eps_r.size(), blocks = (n + kBlock - 1) / kBlock;
    bool same = true;
#pragma omp parallel for schedule(static) reduction(&& : same)
    for (std::size_t blk = 0; blk < blocks; ++blk) {
        if (!same) continue;  // (this thread's copy: it found a difference)
        const std::size_t first = blk * kBlock, bytes = std::min(kBlock, n - first) * sizeof(double);
        for (const auto& [x, y] : arrays) same = same && std::memcmp(x->data() + first, y->data() + first, bytes) == 0;
    }
    return same;
}

/// Whether models a and b hold the same grid, and the same bits in runs of
/// 8 nodes at `runs` places spread evenly over each array (the first and
/// the last included): a model that differs in a region of some size, or
/// everywhere, is told apart here, in microseconds. A yes says only that the
/// sample agrees (same_bits_parallel says the rest).
inline bool same_bits_sampled(const Model& a, const Model& b, std::size_t runs = 1024) {
    const auto pairs = array_pairs(a, b);
    if (!pairs) return false;
    constexpr std::size_t kRun = 8;
    for (const auto& [x, y] : *pairs) {
        const std::size_t n = x->size();
        if (n == 0) continue;
        const std::size_t last = n > kRun ? n - kRun : 0, len = std::min(kRun, n) * sizeof(double);
        for (std::size_t r = 0; r < runs; ++r) {
            const std::size_t first = runs > 1 ? last * r / (runs - 1) : 0;
            if (std::memcmp(x->data() + first, y->data() + first, len) != 0) return false;
        }
    }
    return true;
}

/// The sum of term(i) over i in [0, n), the same whatever the number of
/// threads: blocks of a fixed size are summed in parallel, then the blocks'
/// sums in order.
template <class Term>
double sum_parallel(std::size_t n, Term term) {
    constexpr std::size_t kBlock = 4096;
    const std::size_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<double> partial(blocks, 0.0);
#pragma omp parallel for schedule(static)
    for (std::size_t b = 0; b < blocks; ++b) {
        double s = 0;
        const std::size_t end = std::min(n, (b + 1) * kBlock);
        for (std::size_t i = b * kBlock; i < end; ++i) s += term(i);
        partial[b] = s;
    }
    double total = 0;
    for (double p : partial) total += p;
    return total;
}

/// Every value of a = v.
inline void fill_parallel(Array2D& a, double v) {
    double* p = a.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < a.size(); ++i) p[i] = v;
}

}  // namespace gprfwi
