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

/// A column's band the flood steps from: its extremum's row, its top's, and
/// the row whose eps_r the step rises from (-1: the reference's at the top),
/// or an extremum of -1 for a column the flood leaves.
struct FloodColumn {
    int extremum = -1, top = -1, above = -1;
    bool operator==(const FloodColumn&) const = default;
};

/// How a column's band is found (flood_columns).
enum class FloodBand {
    /// the deepest strong band of change since the start: a reflector's
    /// image where the ground above it kept the start's value
    change,
    /// the deepest strong jump between the change's successive extrema down
    /// the column: a reflector's image below a near-surface layer whose own
    /// change since the start is larger (a topsoil slower or faster than
    /// the start), where the band of change is that layer's
    jump,
};

/// A reversal of a column's change counts as an extremum (FloodBand::jump)
/// where it is at least this share of the column's largest change: smaller
/// wiggles do not split a jump, and a boundary's band below a much larger
/// topsoil change still counts (docs/inversion.md, "Flooding").
inline constexpr double kFloodJumpReversalShare = 0.05;

/// Each column's band to flood from, over the free nodes (is_free of their
/// `weight`), of eps_r's change since `reference`.
/// FloodBand::change: the deepest node of at least kFloodBandShare of the
/// column's largest change, moved up to the extremum of its band; the
/// band's top kFloodFlankShare up its upper flank; the step rises from the
/// node above the top. Columns whose largest change is under
/// kFloodColumnShare of the largest column's are left.
/// FloodBand::jump: the column's extrema of change (reversals of at least
/// kFloodJumpReversalShare of its largest change; the first measured from
/// the reference, a change of 0) and the jumps between successive ones; the
/// band is the deepest extremum reached by a jump of at least
/// kFloodBandShare of the column's largest that passes the level the jump
/// above it started from (one that falls back short of it is that band's
/// ringing), its top kFloodFlankShare up that jump, and the step rises from
/// the extremum before it. Columns
/// whose largest jump is under kFloodColumnShare of the largest column's
/// are left.
std::vector<FloodColumn> flood_columns(const Model& model, const Model& reference, const std::vector<double>& weight,
                                       FloodBand band = FloodBand::change);

/// `model` with each column's free nodes from its band's top down replaced
/// by a step: eps_r = a + height (e - a), e the band's extremum and a the
/// value the step rises from (FloodColumn::above; the reference's at the
/// top where that is -1),
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

/// The depth of the inverted ground (m): from the shallowest row holding a
/// free node of `weight` to the deepest (0 where none is free).
double free_depth_m(const std::vector<double>& weight, const Grid& grid);

/// Whether every source and receiver lies above the free nodes of `weight`
/// (a survey that sees the ground from above only): where `inversion.flood:
/// auto` floods.
bool survey_above_free_nodes(const std::vector<Position>& antennas, const std::vector<double>& weight,
                             const Grid& grid);

}  // namespace gprfwi
