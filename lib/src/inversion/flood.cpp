#include "inversion/flood.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "inversion/stage_variables.hpp"

namespace gprfwi {

namespace {

/// One column's free rows from the top down, and their eps_r change since
/// the reference.
struct ColumnChange {
    std::vector<int> rows;
    std::vector<double> change;
    int row(int i) const { return rows[static_cast<std::size_t>(i)]; }
    /// node i's change; the reference's 0 above the column (i < 0)
    double value(int i) const { return i < 0 ? 0.0 : change[static_cast<std::size_t>(i)]; }
    /// whether node i - 1 is the row right above node i
    bool joined_above(int i) const { return i > 0 && row(i - 1) == row(i) - 1; }
    int size() const { return static_cast<int>(rows.size()); }
    /// the largest |change| (0 for a column without free nodes)
    double largest() const {
        double most = 0;
        for (double v : change) most = std::max(most, std::abs(v));
        return most;
    }
};

/// FloodBand::change's band of one column; `strength` set to its largest change.
FloodColumn deepest_change(const ColumnChange& c, double& strength) {
    strength = c.largest();
    if (!(strength > 0)) return {};
    int deepest = c.size() - 1;
    while (std::abs(c.value(deepest)) < kFloodBandShare * strength) --deepest;
    // up the band to its extremum: the layer's value, not its flank's
    const double sign = c.value(deepest) > 0 ? 1.0 : -1.0;
    while (c.joined_above(deepest) && sign * c.value(deepest - 1) > sign * c.value(deepest)) --deepest;
    int top = deepest;
    while (c.joined_above(top) && sign * c.value(top - 1) >= kFloodFlankShare * sign * c.value(deepest)) --top;
    return {c.row(deepest), c.row(top), c.joined_above(top) ? c.row(top - 1) : -1};
}

/// FloodBand::jump's band of one column; `strength` set to its largest jump.
FloodColumn deepest_jump(const ColumnChange& c, double& strength) {
    strength = 0;
    const double largest = c.largest();
    if (!(largest > 0)) return {};
    const double reversal = kFloodJumpReversalShare * largest;
    // the column's extrema, each confirmed by a reversal after it (the column's
    // end is none: its last nodes still move), after the reference's 0 above
    std::vector<int> extrema{-1};  // indices into the column's nodes; -1: the reference
    int current = -1;
    double direction = 0;
    for (int i = 0; i < c.size(); ++i) {
        const double v = c.value(i);
        if (direction == 0) {
            if (std::abs(v) >= reversal) direction = v > 0 ? 1.0 : -1.0, current = i;
        } else if (direction * (v - c.value(current)) > 0) {
            current = i;
        } else if (direction * (c.value(current) - v) >= reversal) {
            extrema.push_back(current);
            direction = -direction, current = i;
        }
    }
    for (std::size_t k = 1; k < extrema.size(); ++k)
        strength = std::max(strength, std::abs(c.value(extrema[k]) - c.value(extrema[k - 1])));
    for (std::size_t k = extrema.size() - 1; k >= 1; --k) {
        const double from = c.value(extrema[k - 1]), jump = c.value(extrema[k]) - from;
        if (std::abs(jump) < kFloodBandShare * strength) continue;
        // a jump that falls back short of the level before the jump above it is that band's
        // ringing (the side lobe below a reflector's band), not a reflector of its own
        if (k >= 2 && std::abs(jump) <= std::abs(from - c.value(extrema[k - 2]))) continue;
        const double sign = jump > 0 ? 1.0 : -1.0;
        // up the jump, over adjacent rows, to its middle
        int top = extrema[k];
        while (top - 1 > extrema[k - 1] && c.joined_above(top) &&
               sign * (c.value(top - 1) - from) >= kFloodFlankShare * std::abs(jump))
            --top;
        return {c.row(extrema[k]), c.row(top), extrema[k - 1] < 0 ? -1 : c.row(extrema[k - 1])};
    }
    return {};
}

/// The shallowest and deepest rows holding a free node of `weight` (nz and -1
/// where none is free).
std::pair<int, int> free_rows(const std::vector<double>& weight, const Grid& grid) {
    int top = grid.nz, bottom = -1;
    for (std::size_t i = 0; i < weight.size(); ++i)
        if (is_free(weight[i])) {
            const int iz = static_cast<int>(i / static_cast<std::size_t>(grid.nx));
            top = std::min(top, iz), bottom = std::max(bottom, iz);
        }
    return {top, bottom};
}

}  // namespace

std::vector<FloodColumn> flood_columns(const Model& model, const Model& reference, const std::vector<double>& weight,
                                       FloodBand band) {
    const Grid& g = model.grid;
    std::vector<FloodColumn> found(static_cast<std::size_t>(g.nx));
    std::vector<double> strength(found.size(), 0.0);
    for (int ix = 0; ix < g.nx; ++ix) {
        ColumnChange c;
        for (int iz = 0; iz < g.nz; ++iz)
            if (is_free(weight[static_cast<std::size_t>(iz) * g.nx + ix]))
                c.rows.push_back(iz), c.change.push_back(model.eps_r(iz, ix) - reference.eps_r(iz, ix));
        double& st = strength[static_cast<std::size_t>(ix)];
        found[static_cast<std::size_t>(ix)] = band == FloodBand::change ? deepest_change(c, st) : deepest_jump(c, st);
    }
    // the columns whose band is strong beside the others'
    const double largest = *std::max_element(strength.begin(), strength.end());
    std::vector<FloodColumn> columns(found.size());
    for (std::size_t ix = 0; ix < found.size(); ++ix)
        if (largest > 0 && strength[ix] >= kFloodColumnShare * largest) columns[ix] = found[ix];
    return columns;
}

Model flood_step(const Model& model, const Model& reference, const std::vector<FloodColumn>& columns,
                 const std::vector<double>& weight, double height, double eps_r_min, double eps_r_max,
                 int lateral_columns) {
    const Grid& g = model.grid;
    auto free = [&](int iz, int ix) { return is_free(weight[static_cast<std::size_t>(iz) * g.nx + ix]); };
    std::vector<double> eps_r(static_cast<std::size_t>(g.nx)), sigma(eps_r.size());
    for (int ix = 0; ix < g.nx; ++ix) {
        const FloodColumn& c = columns[static_cast<std::size_t>(ix)];
        if (c.extremum < 0) continue;
        const double above = c.above >= 0 ? model.eps_r(c.above, ix) : reference.eps_r(c.top, ix);
        eps_r[ix] = std::clamp(above + height * (model.eps_r(c.extremum, ix) - above), eps_r_min, eps_r_max);
        sigma[ix] = model.sigma(c.extremum, ix);
    }
    // each column's step the median of the flooded columns' within lateral_columns of it
    auto median = [&](const std::vector<double>& v, int ix) {
        std::vector<double> near;
        for (int j = std::max(ix - lateral_columns, 0); j <= std::min(ix + lateral_columns, g.nx - 1); ++j)
            if (columns[static_cast<std::size_t>(j)].extremum >= 0) near.push_back(v[j]);
        std::nth_element(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(near.size() / 2), near.end());
        return near[near.size() / 2];
    };
    Model out = model;
    for (int ix = 0; ix < g.nx; ++ix) {
        const FloodColumn& c = columns[static_cast<std::size_t>(ix)];
        if (c.extremum < 0) continue;
        const double e = median(eps_r, ix), sg = median(sigma, ix);
        for (int iz = c.top; iz < g.nz; ++iz)
            if (free(iz, ix)) {
                out.eps_r(iz, ix) = e;
                out.sigma(iz, ix) = sg;
            }
    }
    return out;
}

bool flood_fits(double flooded, double unflooded) { return flooded <= kFloodMisfitFactor * unflooded; }

bool survey_above_free_nodes(const std::vector<Position>& antennas, const std::vector<double>& weight,
                             const Grid& grid) {
    const int top = free_rows(weight, grid).first;
    if (antennas.empty() || top == grid.nz) return false;
    return std::all_of(antennas.begin(), antennas.end(), [&](const Position& p) { return p.z < top * grid.dz; });
}

double free_depth_m(const std::vector<double>& weight, const Grid& grid) {
    const auto [top, bottom] = free_rows(weight, grid);
    return bottom < top ? 0.0 : (bottom - top) * grid.dz;
}

}  // namespace gprfwi
