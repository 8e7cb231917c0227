#pragma once
// What a backend implements for one batch: the forward time loop and the
// adjoint time loop at the internal rate. Everything around them (misfit,
// resampling, chain rule, folding onto the model) is shared, in
// EnginePropagator, so every backend computes the same function by
// construction and differs only in where its loops run.

#include <memory>
#include <span>
#include <vector>

#include "gprfwi/propagator.hpp"
#include "gprfwi/setup.hpp"

namespace gprfwi {

/// Traces at the internal rate: [shot][receiver][nt_internal].
using InternalTraces = std::vector<std::vector<std::vector<double>>>;

InternalTraces make_internal_traces(const PropagationSetup& setup);

/// The per-node sums are views of the engine's own host memory (the CUDA
/// engine's is page-locked, so that they reach the host at the link's full
/// speed), valid until the engine's next call or its end.
struct AdjointResult {
    /// sum over shots and kept levels of w * lambda^{n+1} Ey^n and of
    /// w * lambda^{n+1} Ey^{n+1}, per padded node (PaddedGrid layout).
    std::span<const double> g_prev, g_next;
    /// sum over shots and kept levels of w * (Ey^{n+1})^2 per padded node,
    /// when the options ask for illumination; else empty.
    std::span<const double> illumination;
    /// dJ / d wavelet_internal [shot][nt_internal].
    std::vector<std::vector<double>> grad_wavelet_internal;
};

class Engine {
public:
    virtual ~Engine() = default;
    /// Forward run from zero fields; keeps Ey levels for a later adjoint()
    /// when keep_levels is true.
    virtual InternalTraces forward(bool keep_levels) = 0;
    /// Adjoint run driven by the internal-rate adjoint source; needs a
    /// preceding forward(true).
    virtual AdjointResult adjoint(const InternalTraces& adjoint_source) = 0;
    /// Where the kept levels of the last forward(true) live, in words.
    virtual std::string level_storage() const = 0;
    /// How many adjoint steps the imaging condition takes at once (the
    /// CUDA backend's pairs, where its levels allow them; else 1).
    virtual int imaging_steps() const { return 1; }
    /// The share of the grid's nodes whose steps the last forward() took two
    /// a pass over the fields (the CUDA backend's step pairs, without kept
    /// levels, on large grids; else 0).
    virtual double forward_paired_share() const { return 0; }
};

/// How many shot groups a batch of `shots` shots on `grid` runs as: the
/// options' shot_groups, at most one a shot, or where that is 0 the automatic
/// choice: 2 for single-precision batches of at least 4 shots on grids of at
/// most 2^22 padded nodes whose levels are not kept in host memory or on
/// disk, else 1 (docs/gpu.md, "Shot groups"). The same on every backend, so
/// that each adds the shots' imaging terms in the same order.
int resolve_shot_groups(const PropagatorOptions& options, std::size_t shots, const PaddedGrid& grid);

/// The first shot of group `group` of `groups` over `shots` shots: the groups
/// are runs of neighbouring shots whose sizes differ by one at most (group
/// == groups gives `shots`).
std::size_t shot_group_begin(std::size_t shots, int groups, int group);

/// A Propagator built on an Engine: one orchestration for every backend.
/// A batch runs as shot groups (resolve_shot_groups) whose imaging terms are
/// summed per group, the groups' sums then added in group order. Where the
/// backend runs engines beside each other (a GPU: each engine has a stream
/// of its own, so that one group's latency-bound launches and the tails of
/// its launches overlap the other's work) each group has an engine and their
/// time loops run at once; else one engine runs the batch and keeps a sum
/// per group itself (the CPU: its passes over the fields are cheapest over
/// all shots at once).
class EnginePropagator : public Propagator {
public:
    Traces forward(const Model& model, const Survey& survey) override;
    GradientResult gradient(const Model& model, const Survey& survey, const Misfit& misfit) override;
    using Propagator::gradient;
    MemoryEstimate estimate_memory(const Model& model, const Survey& survey, bool gradient) const override;

protected:
    using Propagator::Propagator;
    /// An engine for this batch (or shot group) with these options (both
    /// outlive it); keep_levels says whether a gradient (and so kept levels)
    /// will be asked of it, so it can allocate everything up front.
    virtual std::unique_ptr<Engine> make_engine(const PropagationSetup& setup, const PropagatorOptions& options,
                                                bool keep_levels) = 0;
    /// Whether the engines of a batch's shot groups run at once, each driven
    /// by a host thread of its own (their calls must then be safe to make
    /// from several threads at once); false: one after the other.
    virtual bool concurrent_groups() const { return false; }

private:
    class ShotGroups;
};

}  // namespace gprfwi
