#include "gprfwi/distributed.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

#include <fmt/format.h>
#include <mpi.h>
#include <spdlog/spdlog.h>

#include "gprfwi/error.hpp"
#include "gprfwi/files.hpp"
#include "gprfwi/memory_plan.hpp"
#include "gprfwi/parallel.hpp"
#include "core/timing.hpp"

namespace gprfwi {

namespace {

/// The batch's view of a ShotMisfit: local shot i is survey shot first + i... of the rank's list.
class BatchMisfit final : public Misfit {
public:
    BatchMisfit(const ShotMisfit& m, const std::size_t* shots) : m_(m), shots_(shots) {}
    double evaluate(const Traces& synthetic, Traces& adjoint) const override {
        adjoint.resize(synthetic.size());
        double j = 0;
        for (std::size_t i = 0; i < synthetic.size(); ++i) j += m_.evaluate(shots_[i], synthetic[i], adjoint[i]);
        return j;
    }
    void apply_hessian(const Traces& synthetic, const Traces& direction, Traces& out) const override {
        out.resize(synthetic.size());
        for (std::size_t i = 0; i < synthetic.size(); ++i) m_.apply_hessian(shots_[i], synthetic[i], direction.at(i), out[i]);
    }

private:
    const ShotMisfit& m_;
    const std::size_t* shots_;
};

void add_timings(RunTimings& into, const RunTimings& t) {
    into.setup_s += t.setup_s;
    into.build_s += t.build_s;
    into.forward_s += t.forward_s;
    into.adjoint_s += t.adjoint_s;
    into.other_s += t.other_s;
    into.level_storage = t.level_storage;
    into.imaging_steps = t.imaging_steps;
    into.forward_paired_share = t.forward_paired_share;
    into.background_kept = t.background_kept;  // (the last batch's)
}

/// total += part over a rank's batches: the first batch's array is taken as
/// it is, later ones added.
void accumulate(Array2D& total, Array2D&& part) {
    if (total.size() == 0) {
        total = std::move(part);
        return;
    }
    double* t = total.data();
    const double* p = part.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < total.size(); ++i) t[i] += p[i];
}

/// a summed over the ranks in place; a rank without shots brings zeros.
void sum_over_ranks(Array2D& a, const Grid& g) {
    if (a.size() == 0) a = Array2D(g.nz, g.nx);
    parallel::sum(a.data(), a.size());
}

}  // namespace

void ShotMisfit::apply_hessian(std::size_t, const ShotTraces&, const ShotTraces&, ShotTraces&) const {
    throw InvalidArgument("this misfit has no Hessian: Hessian-vector products need one (l2 and relative have)");
}

DistributedRunner::DistributedRunner(const Survey& survey, const PropagatorOptions& options, int shots_per_batch)
    : survey_(survey),
      shots_(parallel::shots_of_rank(survey.shots.size(), parallel::place().size, parallel::place().rank)),
      shots_per_batch_(shots_per_batch),
      host_batches_(resolve_backend(options.backend) == BackendKind::cpu) {
    parallel::collectively([&] { propagator_ = make_propagator(options); });
}

Survey DistributedRunner::batch_survey(std::size_t first, std::size_t count) const {
    Survey b;
    b.dt = survey_.dt;
    b.nt = survey_.nt;
    for (std::size_t i = first; i < first + count; ++i) b.shots.push_back(survey_.shots[shots_[i]]);
    return b;
}

void DistributedRunner::reserve(const Model& model, bool gradient) noexcept {
    if (shots_.empty()) return;
    try {
        fit_batch(model, BatchCall::gradient);
        propagator_->reserve(model, batch_survey(0, std::min(batch_shots(BatchCall::gradient), shots_.size())), gradient);
    } catch (const std::exception& e) {
        spdlog::debug("making the propagator's workspace ahead of the first call failed ({}); the call makes it", e.what());
    }
}

Traces DistributedRunner::forward(const Model& model) {
    Traces out;
    timings_ = {};
    parallel::collectively([&] {
        each_batch(model, BatchCall::gradient, "forward", [&](std::size_t, const Survey& b) {
            Traces t = propagator_->forward(model, b);
            add_timings(timings_, propagator_->last_timings());
            for (auto& s : t) out.push_back(std::move(s));
        });
    });
    return out;
}

GradientResult DistributedRunner::gradient(const Model& model, const ShotMisfit& misfit) {
    GradientResult total;
    const bool illumination = propagator_->options().illumination;
    timings_ = {};
    parallel::collectively([&] {
        each_batch(model, BatchCall::gradient, "gradient", [&](std::size_t first, const Survey& b) {
            const BatchMisfit m(misfit, shots_.data() + first);
            GradientResult g = propagator_->gradient(model, b, m);
            add_timings(timings_, propagator_->last_timings());
            total.misfit += g.misfit;
            accumulate(total.grad_eps_r, std::move(g.grad_eps_r));
            accumulate(total.grad_sigma, std::move(g.grad_sigma));
            if (illumination) accumulate(total.illumination, std::move(g.illumination));
            for (auto& s : g.synthetic) total.synthetic.push_back(std::move(s));
            for (auto& w : g.grad_wavelet) total.grad_wavelet.push_back(std::move(w));
        });
    });
    const auto t0 = std::chrono::steady_clock::now();
    sum_over_ranks(total.grad_eps_r, model.grid);
    sum_over_ranks(total.grad_sigma, model.grid);
    if (illumination) sum_over_ranks(total.illumination, model.grid);
    total.misfit = parallel::sum(total.misfit);
    communication_s_ += seconds_since(t0);
    return total;
}

Traces DistributedRunner::born(const Model& model, const ModelDirection& dm) {
    Traces out;
    timings_ = {};
    parallel::collectively([&] {
        each_batch(model, BatchCall::gauss_newton, "Born", [&](std::size_t, const Survey& b) {
            Traces t = propagator_->born(model, b, dm);
            add_timings(timings_, propagator_->last_timings());
            for (auto& s : t) out.push_back(std::move(s));
        });
    });
    return out;
}

HessianResult DistributedRunner::hessian(const Model& model, const ShotMisfit& misfit, const ModelDirection& v,
                                         HessianKind kind) {
    HessianResult total;
    timings_ = {};
    parallel::collectively([&] {
        const BatchCall call = kind == HessianKind::full ? BatchCall::full_hessian : BatchCall::gauss_newton;
        each_batch(model, call, "Hessian-vector product", [&](std::size_t first, const Survey& b) {
            const BatchMisfit m(misfit, shots_.data() + first);
            HessianResult h = propagator_->hessian(model, b, m, v, kind);
            add_timings(timings_, propagator_->last_timings());
            total.misfit += h.misfit;
            accumulate(total.hv_eps_r, std::move(h.hv_eps_r));
            accumulate(total.hv_sigma, std::move(h.hv_sigma));
            for (auto& s : h.synthetic) total.synthetic.push_back(std::move(s));
            for (auto& s : h.born) total.born.push_back(std::move(s));
        });
    });
    const auto t0 = std::chrono::steady_clock::now();
    sum_over_ranks(total.hv_eps_r, model.grid);
    sum_over_ranks(total.hv_sigma, model.grid);
    total.misfit = parallel::sum(total.misfit);
    communication_s_ += seconds_since(t0);
    return total;
}

void DistributedRunner::set_wavelet(const std::vector<double>& wavelet) {
    if (wavelet.size() != static_cast<std::size_t>(survey_.nt))
        throw SizeMismatch(fmt::format("set_wavelet: {} samples, the survey has nt = {}", wavelet.size(), survey_.nt));
    for (Shot& s : survey_.shots) s.wavelet = wavelet;
}

double host_batch_room(int ranks_on_node) {
    return kHostMemoryShare * static_cast<double>(physical_memory_bytes()) / std::max(ranks_on_node, 1);
}

std::size_t shots_that_fit(const std::function<double(std::size_t)>& bytes, double room, std::size_t shots) {
    if (shots <= 1) return 1;
    const double one = bytes(1), per_shot = bytes(2) - one;
    if (!(per_shot > 0)) return shots;
    const double n = std::floor((room - (one - per_shot)) / per_shot);
    return n < 1 ? 1 : n >= static_cast<double>(shots) ? shots : static_cast<std::size_t>(n);
}

double host_batch_bytes(const Model& model, const Survey& survey, const std::vector<std::size_t>& shots, std::size_t n,
                        const PropagatorOptions& options, std::optional<HessianKind> hessian) {
    Survey first;
    first.dt = survey.dt;
    first.nt = survey.nt;
    for (std::size_t i = 0; i < n; ++i) first.shots.push_back(survey.shots[shots[i]]);
    const PropagationSetup setup = PropagationSetup::build(model, first, options);
    return static_cast<double>(hessian ? cpu_hessian_memory_plan(setup, options, *hessian).total()
                                       : cpu_memory_plan(setup, options, true).total());
}

std::size_t fit_host_batch(const Model& model, const Survey& survey, const std::vector<std::size_t>& shots,
                           const PropagatorOptions& options, std::optional<HessianKind> hessian, double room) {
    const auto bytes = [&](std::size_t n) { return host_batch_bytes(model, survey, shots, n, options, hessian); };
    return shots_that_fit(bytes, room, shots.size());
}

std::size_t DistributedRunner::batch_shots(BatchCall call) const {
    if (shots_per_batch_ > 0) return static_cast<std::size_t>(shots_per_batch_);
    const std::size_t fitted = fits_[static_cast<std::size_t>(call)].shots;
    return fitted > 0 ? fitted : std::max<std::size_t>(shots_.size(), 1);
}

void DistributedRunner::fit_batch(const Model& model, BatchCall call) {
    if (shots_per_batch_ > 0 || shots_.size() < 2 || !host_batches_) return;
    Fit& fit = fits_[static_cast<std::size_t>(call)];
    const std::array<int, 3> key{model.grid.nx, model.grid.nz, survey_.nt};
    if (fit.shots > 0 && key == fit.for_) return;
    const std::optional<HessianKind> hessian = call == BatchCall::gradient ? std::nullopt
                                               : call == BatchCall::full_hessian
                                                   ? std::optional(HessianKind::full)
                                                   : std::optional(HessianKind::gauss_newton);
    const double room = host_batch_room(parallel::place().local_size);
    fit.shots = fit_host_batch(model, survey_, shots_, propagator_->options(), hessian, room);
    fit.for_ = key;
    static constexpr const char* kCalls[] = {"gradient", "Born run or Gauss-Newton product", "full Hessian product"};
    if (fit.shots < shots_.size())
        spdlog::info("this rank's {} shots run in batches of {}: a batch's {} needs about {:.3g} GiB of this "
                     "rank's share of the node's memory, {:.3g} GiB (propagator.shots_per_batch sets the batch)",
                     shots_.size(), fit.shots, kCalls[static_cast<std::size_t>(call)], host_batch_bytes(model, survey_, shots_, fit.shots, propagator_->options(), hessian) / 1073741824.0,
                     room / 1073741824.0);
}

void DistributedRunner::log_batch(std::size_t first, std::size_t count, std::size_t per, const char* what) const {
    const std::size_t batches = (shots_.size() + per - 1) / per;
    if (batches < 2) return;  // one batch: the command's own lines say it all
    spdlog::info("{} batch {}/{} (shots {}..{} of this rank) done; {:.1f} s so far", what, first / per + 1, batches,
                 shots_[first], shots_[first + count - 1],
                 timings_.setup_s + timings_.forward_s + timings_.adjoint_s + timings_.other_s);
}

Traces DistributedRunner::gather(const Traces& local) {
    const parallel::Place& p = parallel::place();
    if (p.size == 1) return local;
    const auto t0 = std::chrono::steady_clock::now();
    // each rank's shots are a contiguous block, so rank order is shot order
    std::vector<double> mine;
    for (const auto& t : local) mine.insert(mine.end(), t.samples().begin(), t.samples().end());
    // checked on every rank, so that no rank waits in a gather the root left
    if (parallel::sum(static_cast<double>(mine.size())) > INT_MAX)
        throw Error("gather: the survey's traces exceed 2^31 samples, too many for one MPI gather");
    int n = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<std::size_t>(p.size)), offsets(static_cast<std::size_t>(p.size));
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<double> all;
    if (p.rank == 0) {
        long long total = 0;
        for (int r = 0; r < p.size; ++r) {
            offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
            total += counts[static_cast<std::size_t>(r)];
        }
        all.resize(static_cast<std::size_t>(total));
    }
    const int rc = MPI_Gatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
                               MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) throw Error("gather: MPI_Gatherv failed");
    communication_s_ += seconds_since(t0);
    if (p.rank != 0) return {};
    Traces out = make_traces(survey_);
    std::size_t at = 0;
    for (auto& t : out) {
        std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(at), t.samples().size(), t.samples().begin());
        at += t.samples().size();
    }
    return out;
}

}  // namespace gprfwi
