#pragma once
// Flooding (docs/inversion.md, "Flooding"): the ground below each column's
// deepest reflector replaced by a step the data size, for surveys that see
// the ground from above only.

#include <vector>

#include "gprfwi/model.hpp"
#include "gprfwi/survey.hpp"

namespace gprfwi {

/// A column's nodes whose eps_r change is at least this share of
/// the column's largest make its bands of change ...
inline constexpr double kFloodBandShare = 0.3;
/// ... in the columns whose largest change is at least this share of the
/// largest of all columns (the others hold no reflector).
inline constexpr double kFloodColumnShare = 0.1;
/// A band's top: the shallowest node above its extremum, contiguous with it,
/// whose change is at least this share of the extremum's (its upper flank's
/// middle, where the reflector it images lies).
inline constexpr double kFloodFlankShare = 0.5;
/// The step heights the data choose from, in units of the band's extremum
/// over the value above the band (0: no step, 1: the band's extremum); a
/// band-limited image of a step holds only part of its contrast
/// (docs/inversion.md, "Flooding").
inline constexpr double kFloodLeastHeight = 0.0, kFloodGreatestHeight = 3.0, kFloodHeightStep = 0.25;

/// The flood goes ahead only where its best step fits the data at most this
/// many times worse than the model it floods: it fills ground the data do
/// not see, which a flood from the deepest reflector changes only through
/// the step's top, while a flood from a band that is not the deepest
/// reflector (a side lobe of the other sign, on a survey whose low band is
/// long) overwrites ground the data do see (docs/inversion.md, "Flooding").
inline constexpr double kFloodMisfitFactor = 5.0;

/// Whether a flood whose best step's misfit is `flooded` goes ahead from a
/// model whose misfit is `unflooded` (not where either is NaN).
bool flood_fits(double flooded, double unflooded);

/// A column's deepest band of change: its extremum's row and its top's, or
/// -1 for a column the flood leaves.
struct FloodColumn {
    int extremum = -1, top = -1;
};

/// Each column's deepest band of eps_r change since `reference`, over the
/// free nodes (is_free of their `weight`): the deepest node of at least
/// kFloodBandShare of the column's largest change, moved up to the extremum
/// of its band; the band's top kFloodFlankShare up its upper flank. Columns
/// whose largest change is under kFloodColumnShare of the largest column's
/// are left.
std::vector<FloodColumn> flood_columns(const Model& model, const Model& reference, const std::vector<double>& weight);

/// `model` with each column's free nodes from its band's top down replaced
/// by a step: eps_r = a + height (e - a), e the band's extremum and a the
/// value just above the band (the reference's where that node is not free),
/// within [eps_r_min, eps_r_max]; sigma the extremum's; each column's step
/// then the median of the flooded columns' within `lateral_columns` of it,
/// so that a column whose band differs from its neighbours' (a side lobe, a
/// diffraction) leaves no streak below it. Reflections place a
/// reflector's contrast in a band as thin as their wavelength and leave the
/// ground below it as the start had it, where no reflection returns from: a
/// null space the flood fills with the layer the band images, and whose
/// step the data size (docs/inversion.md, "Flooding").
Model flood_step(const Model& model, const Model& reference, const std::vector<FloodColumn>& columns,
                 const std::vector<double>& weight, double height, double eps_r_min, double eps_r_max,
                 int lateral_columns);

/// Whether every source and receiver lies above the free nodes of `weight`
/// (a survey that sees the ground from above only): where `inversion.flood:
/// auto` floods.
bool survey_above_free_nodes(const std::vector<Position>& antennas, const std::vector<double>& weight,
                             const Grid& grid);

}  // namespace gprfwi
