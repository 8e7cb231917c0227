#pragma once
// What a backend implements for one batch: the forward time loop and the
// adjoint time loop at the internal rate. Everything around them (misfit,
// resampling, chain rule, folding onto the model) is shared, in
// EnginePropagator, so every backend computes the same function by
// construction and differs only in where its loops run.

#include <future>
#include <memory>
#include <optional>
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

/// A perturbation of the update coefficients at every padded node (halo 0),
/// shared by the shots: dca, dcb, and dcb/cb (0 where cb is 0), which the
/// Born step's scattering term reads (kernels::BornScatter).
struct CoefficientPerturbation {
    std::vector<double> dca, dcb, dcb_over_cb;
};

/// A Born run's traces: the background's and their derivative along the
/// coefficient perturbation.
struct BornTraces {
    InternalTraces forward, born;
};

/// The levels a Born run keeps: none; the background's Ey (as forward(true),
/// for adjoint()); or those and the perturbation's dEy (for
/// second_order_adjoint()).
enum class BornLevels { none, background, both };

/// The second-order adjoint's per-node sums (views as in AdjointResult): the
/// first-order ones, and their derivatives along the Born perturbation
///   dg_prev = sum w * (dlambda^{n+1} Ey^n + lambda^{n+1} dEy^n)
///   dg_next = sum w * (dlambda^{n+1} Ey^{n+1} + lambda^{n+1} dEy^{n+1}).
struct SecondOrderResult {
    std::span<const double> g_prev, g_next, dg_prev, dg_next;
};

/// What a backend's last call did beyond its timings, as data its time
/// loops fill in: the CUDA backend's step pairs and paired imaging; other
/// backends leave the defaults.
struct EngineNotes {
    /// Adjoint steps the imaging condition takes at once (2 where the kept
    /// levels allow the CUDA backend's pairs).
    int imaging_steps = 1;
    /// The share of the grid's nodes whose steps the last forward() took two
    /// a pass over the fields (the CUDA backend's step pairs).
    double forward_paired_share = 0;
};

/// A backend's time loops over one batch (or shot group) of shots. An engine
/// lives as long as its propagator's workspace and serves every call: it is
/// made once for a setup object that the workspace refills at each call, and
/// prepare() makes it ready for what that setup holds now.
class Engine {
public:
    virtual ~Engine() = default;
    /// Makes the engine ready for a call on its setup as it is now: loads the
    /// model's coefficients (unless it holds those of the same
    /// MaterialCoefficients::id), the CPML profiles, the sources, receivers and
    /// wavelets, and makes room for the call's fields (and kept levels when
    /// keep_levels). Memory of earlier calls is reused where it is large
    /// enough and grown where not; nothing read by the time loops depends on
    /// an earlier call.
    virtual void prepare(bool keep_levels) = 0;
    /// Gives back the engine's large memory (a later prepare() takes it again).
    virtual void release() = 0;
    /// Forward run from zero fields; keeps Ey levels for a later adjoint()
    /// when keep_levels is true (which the last prepare() must have had).
    virtual InternalTraces forward(bool keep_levels) = 0;
    /// Adjoint run driven by the internal-rate adjoint source; needs a
    /// preceding forward(true).
    virtual AdjointResult adjoint(const InternalTraces& adjoint_source) = 0;
    /// Born (tangent-linear) run from zero fields: the forward and, beside
    /// it, its derivative along a perturbation of the update coefficients.
    /// With levels kept, the last prepare() must have had keep_levels.
    /// Backends without it throw NotCompiled.
    /// With `from_levels` the background is not stepped: it is read from the
    /// levels that the last forward(true) or born() kept, which must be
    /// exact (levels_exact()) and stay as they are; `forward` is then empty.
    virtual BornTraces born(const CoefficientPerturbation& p, BornLevels keep, bool from_levels = false);
    /// Whether the levels the last forward(true) or born() kept are Ey itself
    /// at every step (uncompressed, every level, where born() can read them).
    virtual bool levels_exact() const { return false; }
    /// The second-order adjoint after born(..., BornLevels::both): the
    /// adjoint driven by `source` (the misfit's gradient) and its derivative
    /// along the Born perturbation, driven by `d_source` (the misfit's
    /// Hessian applied to the Born traces) and coupled to the first through
    /// the perturbation (kernels::BornCoupling).
    virtual SecondOrderResult second_order_adjoint(const InternalTraces& source, const InternalTraces& d_source);
    /// Where the kept levels of the last forward(true) live, in words.
    virtual std::string level_storage() const = 0;
    /// The bytes its arrays hold now (a GPU engine's on its device), which
    /// its backend's memory plan counts (memory_plan.hpp).
    virtual std::size_t bytes_held() const = 0;
    /// What the last forward() did beyond its timings (RunTimings copies it).
    const EngineNotes& notes() const { return notes_; }

protected:
    EngineNotes notes_;  // the backend's forward() fills it
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
///
/// The engines and their setups are the propagator's workspace: made at the
/// first call and kept, so that later calls (an inversion's evaluations, a
/// rank's batches) reuse their memory, streams and threads' state, and pay
/// only for what changed (docs/performance.md, "Whole calls").
class EnginePropagator : public Propagator {
public:
    ~EnginePropagator() override;
    Traces forward(const Model& model, const Survey& survey) override;
    GradientResult gradient(const Model& model, const Survey& survey, const Misfit& misfit) override;
    using Propagator::gradient;
    Traces born(const Model& model, const Survey& survey, const ModelDirection& dm) override;
    HessianResult hessian(const Model& model, const Survey& survey, const Misfit& misfit, const ModelDirection& v,
                          HessianKind kind) override;
    MemoryEstimate estimate_memory(const Model& model, const Survey& survey, bool gradient) const override;
    std::size_t workspace_bytes() const override;
    /// Binds the workspace to the batch as a call's start would (begin_call),
    /// and keeps a copy of the model, so that a call with it takes its
    /// coefficients as they are.
    void reserve(const Model& model, const Survey& survey, bool gradient) override;

protected:
    explicit EnginePropagator(const PropagatorOptions& options);
    /// An engine for shot groups of `setup` with these `options` (both
    /// outlive it, and are refilled before each prepare()).
    virtual std::unique_ptr<Engine> make_engine(const PropagationSetup& setup, const PropagatorOptions& options) = 0;
    /// The backend its engines are (whose memory plan estimate_memory reads).
    virtual BackendKind backend() const = 0;
    /// Destroys the workspace's engines: a backend whose engines refer to
    /// its own members calls it in its destructor, before those go.
    void drop_workspace();
    /// Whether the engines of a batch's shot groups run at once, each driven
    /// by a host thread of its own (their calls must then be safe to make
    /// from several threads at once); false: one after the other.
    virtual bool concurrent_groups() const { return false; }
    /// Whether the engines' time loops leave the host's cores free (their
    /// work is elsewhere), so that a call compares its model with the kept
    /// copy while they run (PropagatorOptions::model_comparison).
    virtual bool loops_leave_host_free() const { return false; }

private:
    class ShotGroups;
    /// Builds the call's batch and binds the workspace to it; returns it.
    /// (model_comes_again, kept: PropagationSetup::build's, for reserve()
    /// and for a call run again.) Where `comparison` is given and a sample
    /// of the model agrees with the workspace's copy, the batch takes the
    /// kept coefficients, and *comparison is the full comparison, running.
    const PropagationSetup& begin_call(const Model& model, const Survey& survey, bool keep_levels,
                                       bool model_comes_again = false, KeptModel kept = KeptModel::compare,
                                       std::future<bool>* comparison = nullptr);
    /// call(batch) for the batch of a call's model and survey, with the
    /// model's comparison during its loops where the options say so: where
    /// the model then differs from the copy the batch took for it, the call
    /// runs again, built from the model (what it threw the first time, too,
    /// is dropped).
    template <typename Call>
    auto run_call(const Model& model, const Survey& survey, bool keep_levels, Call&& call);
    bool compares_during_loops() const;
    /// The model and survey whose forward levels the workspace's engines hold
    /// exactly after a Hessian-vector product, with its traces: the next
    /// product at the same model and survey (an inner conjugate-gradient
    /// loop's) reads its background from them instead of stepping it. Every
    /// other call forgets it.
    struct KeptForward {
        Model model;
        Survey survey;
        Traces synthetic;
    };
    std::optional<KeptForward> kept_forward_;
    std::unique_ptr<ShotGroups> workspace_;
};

}  // namespace gprfwi
