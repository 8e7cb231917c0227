#include "inversion/flood.hpp"

#include <algorithm>
#include <cmath>

#include "inversion/stage_variables.hpp"

namespace gprfwi {

std::vector<FloodColumn> flood_columns(const Model& model, const Model& reference, const std::vector<double>& weight) {
    const Grid& g = model.grid;
    auto free = [&](int iz, int ix) { return is_free(weight[static_cast<std::size_t>(iz) * g.nx + ix]); };
    auto change = [&](int iz, int ix) { return model.eps_r(iz, ix) - reference.eps_r(iz, ix); };
    std::vector<double> peak(static_cast<std::size_t>(g.nx), 0.0);
    for (int ix = 0; ix < g.nx; ++ix)
        for (int iz = 0; iz < g.nz; ++iz)
            if (free(iz, ix)) peak[ix] = std::max(peak[ix], std::abs(change(iz, ix)));
    const double largest = *std::max_element(peak.begin(), peak.end());
    std::vector<FloodColumn> columns(static_cast<std::size_t>(g.nx));
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
        columns[static_cast<std::size_t>(ix)] = {deepest, top};
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
        const double above = c.top > 0 && free(c.top - 1, ix) ? model.eps_r(c.top - 1, ix) : reference.eps_r(c.top, ix);
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
