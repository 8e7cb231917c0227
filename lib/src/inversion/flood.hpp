#pragma once
// Flooding (docs/inversion.md, "Flooding"): the ground below each column's
// deepest reflector continued downward, for surveys that see the ground from
// above only.

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

/// `model` with the ground below each column's deepest reflector continued
/// downward: over the free nodes of a column (is_free of their `weight`),
/// the change of eps_r since `reference`; its deepest node of at least
/// kFloodBandShare of the column's largest, moved up to the extremum of its
/// band, gives its eps_r and sigma to every free node below it. Reflections
/// place a reflector's contrast in a band as thin as their wavelength and
/// leave the ground below it as the start had it, where no reflection returns
/// from: a null space the flood fills with the layer the band holds
/// (docs/inversion.md, "Flooding").
Model flood_below_deepest_change(const Model& model, const Model& reference, const std::vector<double>& weight);

/// Whether every source and receiver lies above the free nodes of `weight`
/// (a survey that sees the ground from above only): where `inversion.flood:
/// auto` floods.
bool survey_above_free_nodes(const std::vector<Position>& antennas, const std::vector<double>& weight,
                             const Grid& grid);

}  // namespace gprfwi
