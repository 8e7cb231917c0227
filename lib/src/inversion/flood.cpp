#include "inversion/flood.hpp"

#include <algorithm>
#include <cmath>

#include "inversion/stage_variables.hpp"

namespace gprfwi {

namespace {

/// FloodBand::jump's band of one column: `rows` its free rows from the top
/// down, `change` their eps_r change; `strength` set to its largest jump.
FloodColumn deepest_jump(const std::vector<int>& rows, const std::vector<double>& change, double& strength) {
    strength = 0;
    double largest = 0;
    for (double c : change) largest = std::max(largest, std::abs(c));
    if (!(largest > 0)) return {};
    const double reversal = kFloodJumpReversalShare * largest;
    // the column's extrema, each confirmed by a reversal after it (the column's
    // end is none: its last nodes still move), after the reference's 0 above
    std::vector<int> extrema{-1};  // indices into rows; -1: the reference
    auto value = [&](int i) { return i < 0 ? 0.0 : change[static_cast<std::size_t>(i)]; };
    int current = -1;
    double direction = 0;
    for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
        const double c = change[static_cast<std::size_t>(i)];
        if (direction == 0) {
            if (std::abs(c) >= reversal) direction = c > 0 ? 1.0 : -1.0, current = i;
        } else if (direction * (c - value(current)) > 0) {
            current = i;
        } else if (direction * (value(current) - c) >= reversal) {
            extrema.push_back(current);
            direction = -direction, current = i;
        }
    }
    for (std::size_t k = 1; k < extrema.size(); ++k)
        strength = std::max(strength, std::abs(value(extrema[k]) - value(extrema[k - 1])));
    FloodColumn column;
    for (std::size_t k = extrema.size() - 1; k >= 1 && column.extremum < 0; --k) {
        const double from = value(extrema[k - 1]), jump = value(extrema[k]) - from;
        if (std::abs(jump) < kFloodBandShare * strength) continue;
        // a jump that falls back short of the level before the jump above it is that band's
        // ringing (the side lobe below a reflector's band), not a reflector of its own
        if (k >= 2 && std::abs(jump) <= std::abs(from - value(extrema[k - 2]))) continue;
        const double sign = jump > 0 ? 1.0 : -1.0;
        // up the jump, over adjacent rows, to its middle
        auto row = [&](int i) { return rows[static_cast<std::size_t>(i)]; };
        int top = extrema[k];
        while (top - 1 > extrema[k - 1] && row(top - 1) == row(top) - 1 &&
               sign * (value(top - 1) - from) >= kFloodFlankShare * std::abs(jump))
            --top;
        column.extremum = row(extrema[k]);
        column.top = row(top);
        column.above = extrema[k - 1] < 0 ? -1 : row(extrema[k - 1]);
    }
    return column;
}

}  // namespace

std::vector<FloodColumn> flood_columns(const Model& model, const Model& reference, const std::vector<double>& weight,
                                       FloodBand band) {
    const Grid& g = model.grid;
    auto free = [&](int iz, int ix) { return is_free(weight[static_cast<std::size_t>(iz) * g.nx + ix]); };
    auto change = [&](int iz, int ix) { return model.eps_r(iz, ix) - reference.eps_r(iz, ix); };
    std::vector<FloodColumn> columns(static_cast<std::size_t>(g.nx));
    std::vector<double> peak(static_cast<std::size_t>(g.nx), 0.0);
    if (band == FloodBand::jump) {
        std::vector<FloodColumn> found(columns.size());
        for (int ix = 0; ix < g.nx; ++ix) {
            std::vector<int> rows;
            std::vector<double> changes;
            for (int iz = 0; iz < g.nz; ++iz)
                if (free(iz, ix)) rows.push_back(iz), changes.push_back(change(iz, ix));
            found[static_cast<std::size_t>(ix)] = deepest_jump(rows, changes, peak[static_cast<std::size_t>(ix)]);
        }
        const double largest = *std::max_element(peak.begin(), peak.end());
        for (int ix = 0; ix < g.nx; ++ix)
            if (largest > 0 && peak[static_cast<std::size_t>(ix)] >= kFloodColumnShare * largest)
                columns[static_cast<std::size_t>(ix)] = found[static_cast<std::size_t>(ix)];
        return columns;
    }
    for (int ix = 0; ix < g.nx; ++ix)
        for (int iz = 0; iz < g.nz; ++iz)
            if (free(iz, ix)) peak[ix] = std::max(peak[ix], std::abs(change(iz, ix)));
    const double largest = *std::max_element(peak.begin(), peak.end());
    if (!(largest > 0)) return columns;
    for (int ix = 0; ix < g.nx; ++ix) {
        if (peak[ix] < kFloodColumnShare * largest) continue;
        int deepest = -1;
        for (int iz = g.nz - 1; iz >= 0 && deepest < 0; --iz)
            if (free(iz, ix) && std::abs(change(iz, ix)) >= kFloodBandShare * peak[ix]) deepest = iz;
        // up the band to its extremum: the layer's value, not its flank's
        const double sign = change(deepest, ix) > 0 ? 1.0 : -1.0;
        while (deepest > 0 && free(deepest - 1, ix) && sign * change(deepest - 1, ix) > sign * change(deepest, ix))
            --deepest;
        int top = deepest;
        while (top > 0 && free(top - 1, ix) &&
               sign * change(top - 1, ix) >= kFloodFlankShare * sign * change(deepest, ix))
            --top;
        columns[static_cast<std::size_t>(ix)] = {deepest, top, top > 0 && free(top - 1, ix) ? top - 1 : -1};
    }
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
    int top = grid.nz;  // the shallowest row holding a free node
    for (std::size_t i = 0; i < weight.size() && top == grid.nz; ++i)
        if (is_free(weight[i])) top = static_cast<int>(i / static_cast<std::size_t>(grid.nx));
    if (antennas.empty() || top == grid.nz) return false;
    return std::all_of(antennas.begin(), antennas.end(), [&](const Position& p) { return p.z < top * grid.dz; });
}

}  // namespace gprfwi
