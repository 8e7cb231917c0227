#pragma once
// Everything a backend needs to propagate a batch of shots, computed once on
// the host in double precision: the padded grid, the internal time axis, the
// coefficient arrays of the model extended into the CPML, the CPML profiles,
// and the point weights and resampled wavelets of every shot. Backends copy
// these into their own arithmetic type and memory.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "gprfwi/cpml.hpp"
#include "gprfwi/grid.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/point_weights.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/resample.hpp"
#include "gprfwi/survey.hpp"

namespace gprfwi {

/// One shot's sparse source and receiver operators on the padded grid.
struct ShotOperators {
    /// Source term per internal step m: Ey[index] += weight * wavelet_internal[m],
    /// weight = -cb * w * amplitude / (dx*dz); all sources of the shot merged.
    std::vector<PointWeight> source;
    /// Receiver r samples sum_j weight_j * Ey[index_j].
    std::vector<std::vector<PointWeight>> receivers;
    std::vector<double> wavelet_internal;  // nt_internal samples, A
    bool operator==(const ShotOperators&) const = default;
};

/// The model's update coefficients at every padded node (halo zero): ca, cb
/// at E nodes, cq at H nodes. A batch's shot groups share one copy.
struct MaterialCoefficients {
    std::vector<double> ca, cb, cq;
    double cq_uniform = 0;  // cq of every node where all hold the same (a non-magnetic model), else 0
    /// Names these values in this process: a fill gets a new id, a reuse
    /// keeps it, so an engine that loaded the id's values has them still.
    std::uint64_t id = 0;
    /// What they were filled from: the model's check (its least eps_r mu_r
    /// and the sum of its bits), the padded grid, the internal time step;
    /// and, where a workspace's build saw the same model twice in a row,
    /// a copy of it, against which later calls' models are compared bit for
    /// bit (PropagationSetup::build).
    ModelCheck check;
    PaddedGrid grid;
    double dt_internal = 0;
    std::optional<Model> model;
};

/// What the caller of PropagationSetup::build knows of its model against the
/// copy of an earlier model that its `recycle` keeps.
enum class KeptModel {
    compare,  ///< nothing: build compares the two bit for bit
    same,     ///< the same, not compared yet: the caller compares them while the call runs and builds again where
              ///< they differ (EnginePropagator, PropagatorOptions::model_comparison)
    other,    ///< not the same: such a comparison found a difference
};

struct PropagationSetup {
    PaddedGrid grid;
    TimeStepping time;
    double alpha_max = 0;  // 1/s, CPML frequency shift actually used
    int snapshot_interval = 1;  // kept-level interval actually used (options' 0 resolved)
    int checkpoint_steps = 0;   // steps per checkpointed segment (0: every level kept)
    int binomial_slots = 0;     // saved states of binomial checkpointing (0: off)
    std::shared_ptr<const MaterialCoefficients> coefficients;
    CpmlAxisProfile cpml_x, cpml_z;
    ResampleOperator upsample;    // user wavelet -> internal
    ResampleOperator downsample;  // internal trace -> user
    std::vector<ShotOperators> shots;
    int first_shot = 0;  // the batch's index of shots[0] (a shot group's setup: its first shot), for messages

    /// Validates model, survey and options, and builds the setup. Throws the
    /// typed errors of error.hpp with the numbers at fault.
    ///
    /// `recycle` is a workspace's: the last call's coefficients (empty ones
    /// at its first call). Where the model's bits, the padded grid and the
    /// internal time step are those `recycle` was filled for and it keeps a
    /// copy of that model, the setup takes it as it is (same id; the model,
    /// which passed its checks then, is not checked or filled again); else
    /// the coefficients are filled into it where nothing else holds it (so
    /// that the calls reuse its memory). The copy of the model is made where
    /// the last call's model came again (by the sum of its bits, then
    /// compared bit for bit at the next call), or where `model_comes_again`
    /// (the caller knows the next call brings this model: Propagator::reserve),
    /// and dropped at the first call with another model: an inversion, whose
    /// every call has a model of its own, pays no copy and no comparison.
    /// `kept` says what the caller knows of the model against that copy.
    static PropagationSetup build(const Model& model, const Survey& survey, const PropagatorOptions& options,
                                  std::shared_ptr<MaterialCoefficients> recycle = nullptr,
                                  bool model_comes_again = false, KeptModel kept = KeptModel::compare);

    /// Shots [first, first + count) of this batch as a batch of their own
    /// (a shot group), sharing its coefficients.
    PropagationSetup shot_range(std::size_t first, std::size_t count) const;

    const std::vector<double>& ca() const { return coefficients->ca; }
    const std::vector<double>& cb() const { return coefficients->cb; }
    const std::vector<double>& cq() const { return coefficients->cq; }

    /// Model node whose values fill padded node (iz, ix): the model extended
    /// into the CPML by its edge values.
    int model_row(int iz) const;
    int model_col(int ix) const;
    /// The padded rows [first, last] whose model row is mz (the CPML's rows
    /// fold onto the edge rows).
    std::pair<int, int> padded_rows(int mz) const;
};

/// Steps per checkpointed segment for `option` (0 off, -1 automatic: sqrt(7 nt),
/// which balances nt/C states of 7 arrays against C levels).
int resolve_checkpoint_steps(int option, int nt_internal);

/// The kernels' view of the batch's grid, in the arithmetic type T.
template <typename T>
kernels::GridParams<T> grid_params(const PropagationSetup& s) {
    kernels::GridParams<T> g;
    g.nx = s.grid.nx;
    g.nz = s.grid.nz;
    g.stride = s.grid.stride;
    g.shot_stride = s.grid.storage_size();
    g.origin = s.grid.index(0, 0);
    g.n_shots = static_cast<int>(s.shots.size());
    g.inv_dx = static_cast<T>(1.0 / s.grid.model.dx);
    g.inv_dz = static_cast<T>(1.0 / s.grid.model.dz);
    return g;
}

/// Whether internal step `step` is one at which the wavefields are checked
/// for NaN/Inf: every `every` steps (0: never), and the first and last step.
inline bool blowup_check_due(const PropagationSetup& s, int every, int step) {
    return (every > 0 && (step + 1) % every == 0) || step + 1 == s.time.nt_internal || step == 0;
}

/// Reports time-loop progress through options.progress (see there).
inline void report_progress(const PropagatorOptions& options, const char* phase, int done, int total) {
    if (options.progress && (done % 256 == 0 || done == total)) options.progress(phase, done, total);
}

/// Throws NumericalBlowup for NaN/Inf in `what` of shot `shot` at internal `step`.
[[noreturn]] void throw_blowup(const PropagationSetup& setup, const char* what, int shot, int step);

/// Sum of a padded-grid gradient (per padded node) onto the model nodes: the
/// exact adjoint of extending the model into the CPML by its edge values.
Array2D fold_to_model(const PropagationSetup& setup, std::span<const double> padded);

}  // namespace gprfwi
