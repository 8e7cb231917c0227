#pragma once
// One rank's share of a survey: its shots (parallel::shots_of_rank), run in
// batches on its propagator, with misfit and gradient summed over all ranks.
// The same code runs with one rank and without MPI.

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "gprfwi/misfit.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

/// A misfit that is a sum of per-shot terms, as every misfit of gprfwi is:
/// what lets shots run on any rank and in any batch.
class ShotMisfit {
public:
    virtual ~ShotMisfit() = default;
    /// J_s of shot `shot` (index into the whole survey); writes dJ_s/d(synthetic)
    /// into `adjoint` (same shape as `synthetic`).
    virtual double evaluate(std::size_t shot, const ShotTraces& synthetic, ShotTraces& adjoint) const = 0;
    /// d^2 J_s / d(synthetic)^2 at `synthetic` applied to `direction`, into
    /// `out`; misfits without one throw InvalidArgument.
    virtual void apply_hessian(std::size_t shot, const ShotTraces& synthetic, const ShotTraces& direction,
                               ShotTraces& out) const;
};

/// The share of a node's physical memory the batches of its ranks may hold
/// on the CPU backend where shots_per_batch is 0; the rest is the run's
/// other arrays (observed traces, models, the optimiser's vectors), other
/// processes' and the system's.
inline constexpr double kHostMemoryShare = 0.5;

/// A rank's room for its batches on the CPU backend: kHostMemoryShare of
/// the node's physical memory, shared by the node's `ranks_on_node`.
double host_batch_room(int ranks_on_node);

/// How many of `shots` a batch holds within `room` bytes, `bytes(n)` the
/// memory plan of a batch of n of them: fixed arrays plus arrays per shot,
/// so the plans of 1 and 2 give both. At least one, at most `shots`.
std::size_t shots_that_fit(const std::function<double(std::size_t)>& bytes, double room, std::size_t shots);

/// The memory plan of a CPU rank's batch of the first `n` of its `shots`
/// (indices into `survey`): a gradient's (no `hessian`) or a Hessian-vector
/// product's of that kind.
double host_batch_bytes(const Model& model, const Survey& survey, const std::vector<std::size_t>& shots, std::size_t n,
                        const PropagatorOptions& options, std::optional<HessianKind> hessian);
/// How many of those shots a batch holds within `room` by that plan. The
/// runner and `gprfwi check` both size batches by it.
std::size_t fit_host_batch(const Model& model, const Survey& survey, const std::vector<std::size_t>& shots,
                           const PropagatorOptions& options, std::optional<HessianKind> hessian, double room);

class DistributedRunner {
public:
    /// `options` must already be fixed survey-wide (fix_survey_wide_options),
    /// so that each shot's traces do not depend on its rank or batch.
    /// shots_per_batch 0 runs all of this rank's shots in one batch, on the
    /// CPU backend as many of them as its share of the node's memory holds
    /// (kHostMemoryShare, shared by the node's ranks; the gradient's memory
    /// plan), so that a large survey runs in batches rather than being
    /// killed for want of memory.
    DistributedRunner(const Survey& survey, const PropagatorOptions& options, int shots_per_batch);

    /// This rank's shots (indices into the survey), in order.
    const std::vector<std::size_t>& shots() const { return shots_; }
    const Survey& survey() const { return survey_; }
    Propagator& propagator() { return *propagator_; }

    /// Propagator::reserve for this rank's first batch: makes ready what its
    /// first forward (gradient = false) or gradient call would make at its
    /// start. Not collective (no MPI), so that it can run on a thread of its
    /// own beside the caller's reading of the data; an error is left for the
    /// call to meet (and report collectively): reserve only logs it.
    void reserve(const Model& model, bool gradient) noexcept;

    /// Traces of this rank's shots (collective only in its failure check).
    Traces forward(const Model& model);

    /// The traces of every shot on the root rank (empty elsewhere), from each
    /// rank's forward() result.
    Traces gather(const Traces& local);

    /// Misfit and gradient with respect to eps_r and sigma summed over all
    /// ranks (identical on every rank); `synthetic` and `grad_wavelet` hold
    /// this rank's shots only. Collective.
    GradientResult gradient(const Model& model, const ShotMisfit& misfit);

    /// Born traces (the traces' derivative along dm) of this rank's shots.
    /// Collective only in its failure check.
    Traces born(const Model& model, const ModelDirection& dm);

    /// Misfit and Hessian-vector product summed over all ranks (identical on
    /// every rank); `synthetic` and `born` hold this rank's shots. Collective.
    HessianResult hessian(const Model& model, const ShotMisfit& misfit, const ModelDirection& v, HessianKind kind);

    /// Gives every shot this source wavelet (nt samples).
    void set_wavelet(const std::vector<double>& wavelet);

    /// Phases summed over the batches of the last call (this rank).
    const RunTimings& timings() const { return timings_; }
    /// Seconds spent in MPI reductions and gathers since construction (this rank).
    double communication_seconds() const { return communication_s_; }

private:
    /// The calls whose batches are fitted apart, for their memory differs: a
    /// forward or gradient call (sized by the gradient), a Born run or
    /// Gauss-Newton product, a full Hessian-vector product.
    enum class BatchCall { gradient, gauss_newton, full_hessian };
    /// Shots a batch of `call` holds: shots_per_batch, or all of this rank's
    /// (fewer where fit_batch fitted them).
    std::size_t batch_shots(BatchCall call) const;
    /// With shots_per_batch 0 on the CPU backend: fits the shots of a batch
    /// of `call` to this rank's share of the node's memory, once per call,
    /// grid and trace length (a survey's shots share both).
    void fit_batch(const Model& model, BatchCall call);
    /// f(first, batch) for this rank's shots, a batch at a time, in order;
    /// each batch logged as `what` where there are several.
    template <typename Fn>
    void each_batch(const Model& model, BatchCall call, const char* what, Fn&& f) {
        fit_batch(model, call);
        const std::size_t per = batch_shots(call);
        for (std::size_t first = 0; first < shots_.size(); first += per) {
            const std::size_t count = std::min(per, shots_.size() - first);
            f(first, batch_survey(first, count));
            log_batch(first, count, per, what);
        }
    }
    Survey batch_survey(std::size_t first, std::size_t count) const;
    void log_batch(std::size_t first, std::size_t count, std::size_t per, const char* what) const;

    Survey survey_;
    std::vector<std::size_t> shots_;
    int shots_per_batch_;
    bool host_batches_;            // CPU backend: batches fit host memory (a GPU's plan has its own check)
    struct Fit {
        std::size_t shots = 0;     // fit_batch's cap (0: none)
        std::array<int, 3> for_{};  // ... for this grid (nx, nz) and nt
    };
    std::array<Fit, 3> fits_;      // a BatchCall's
    std::unique_ptr<Propagator> propagator_;
    RunTimings timings_;
    double communication_s_ = 0;
};

}  // namespace gprfwi
