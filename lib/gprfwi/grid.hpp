#pragma once
// The model grid, the CPML padding around it, and the memory layout shared by
// every field array.

#include <array>
#include <cstddef>

namespace gprfwi {

/// Model grid: nx columns (x, fast index) by nz rows (z, depth); spacing in metres.
struct Grid {
    int nx = 0;
    int nz = 0;
    double dx = 0.0;  // m
    double dz = 0.0;  // m

    /// Throws InvalidArgument for non-positive sizes or spacings.
    void validate() const;
    double width_m() const { return (nx - 1) * dx; }
    double depth_m() const { return (nz - 1) * dz; }
    bool operator==(const Grid&) const = default;
};

/// CPML width in cells on each side of the model.
struct PmlWidths {
    int left = 20;
    int right = 20;
    int top = 20;
    int bottom = 20;

    static PmlWidths uniform(int w) { return {w, w, w, w}; }
    bool operator==(const PmlWidths&) const = default;
};

/// Largest halo any stencil needs (order 8 reads 4 nodes each side).
inline constexpr int kMaxHalo = 4;

/// The model grid with its CPML padding, and the array layout used by every
/// field, memory variable and coefficient array: rows of `stride` values with
/// a zero halo of kMaxHalo nodes on every side, so stencils never test bounds.
struct PaddedGrid {
    Grid model;
    PmlWidths pml;
    int nx = 0;      // padded nodes in x (model + left + right)
    int nz = 0;      // padded nodes in z
    int stride = 0;  // values per stored row (nx + 2*kMaxHalo, rounded up to a multiple of 4)

    PaddedGrid() = default;
    PaddedGrid(const Grid& g, const PmlWidths& w);

    /// Values per stored array, halo included.
    std::size_t storage_size() const { return static_cast<std::size_t>(stride) * (nz + 2 * kMaxHalo); }
    /// Storage index of padded node (iz, ix); iz in [0, nz), ix in [0, nx).
    std::size_t index(int iz, int ix) const {
        return static_cast<std::size_t>(iz + kMaxHalo) * stride + (ix + kMaxHalo);
    }
    /// Padded-node count (cells that are updated per step).
    std::size_t cells() const { return static_cast<std::size_t>(nx) * nz; }
    bool operator==(const PaddedGrid&) const = default;
};

}  // namespace gprfwi
