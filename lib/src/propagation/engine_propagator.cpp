// The orchestration shared by every backend:
//   forward:  traces = D (engine forward)
//   gradient: J, r = misfit(traces); lambda source = D^T r;
//             (g_prev, g_next, dJ/dw_internal) = engine adjoint;
//             dJ/dca = g_prev, dJ/dcb = (g_next - ca g_prev)/cb at every padded
//             node; chain rule to (eps_r, sigma); fold onto the model;
//             dJ/dwavelet = U^T dJ/dw_internal.
//   born:     (dca, dcb) = the model perturbation through ca, cb, extended
//             into the CPML; traces' derivative = D (engine Born run).
//   hessian:  Born run keeping levels; r = misfit gradient, dr = misfit
//             Hessian (Born traces); Gauss-Newton: the gradient's chain rule
//             on the adjoint driven by dr; full: the derivative of the
//             gradient's chain rule along v from the second-order adjoint.

#include "gprfwi/engine.hpp"

#include <chrono>
#include <exception>
#include <future>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "gprfwi/error.hpp"
#include "gprfwi/material.hpp"
#include "gprfwi/memory_plan.hpp"
#include "parallel/parallel_arrays.hpp"
#include "core/timing.hpp"

namespace gprfwi {

InternalTraces make_internal_traces(const PropagationSetup& s) {
    InternalTraces t(s.shots.size());
    for (std::size_t i = 0; i < s.shots.size(); ++i)
        t[i].assign(s.shots[i].receivers.size(), std::vector<double>(s.time.nt_internal, 0.0));
    return t;
}

namespace {

Traces to_user(const PropagationSetup& s, const InternalTraces& internal, int nt) {
    Traces out;
    for (std::size_t si = 0; si < internal.size(); ++si) {
        out.emplace_back(static_cast<int>(internal[si].size()), nt);
        for (std::size_t r = 0; r < internal[si].size(); ++r)
            s.downsample.apply(internal[si][r].data(), out[si].receiver(static_cast<int>(r)));
    }
    return out;
}

InternalTraces to_internal_adjoint(const PropagationSetup& s, const Traces& adjoint_source) {
    InternalTraces r = make_internal_traces(s);
    for (std::size_t si = 0; si < s.shots.size(); ++si)
        for (std::size_t k = 0; k < r[si].size(); ++k)
            s.downsample.apply_transpose(adjoint_source[si].receiver(static_cast<int>(k)), r[si][k].data());
    return r;
}

/// ca, cb as the engine used them (rounded to the arithmetic type).
double as_used(double v, Precision p) { return p == Precision::single ? static_cast<double>(static_cast<float>(v)) : v; }

/// Calls term(i, mz, mx) for every padded node i, which returns its terms
/// {d/d eps_r, d/d sigma} of the model node (mz, mx) it extends, and adds
/// them onto that node, in fold_to_model's order.
template <typename Term>
void fold_terms(const PropagationSetup& s, Array2D& eps_r, Array2D& sigma, Term&& term) {
    const Grid& model = s.grid.model;
    eps_r = Array2D(model.nz, model.nx, 0.0);
    sigma = Array2D(model.nz, model.nx, 0.0);
#pragma omp parallel for schedule(static)
    for (int mz = 0; mz < model.nz; ++mz) {
        const auto [first, last] = s.padded_rows(mz);
        for (int iz = first; iz <= last; ++iz)
            for (int ix = 0; ix < s.grid.nx; ++ix) {
                const int mx = s.model_col(ix);
                const auto [e, g] = term(s.grid.index(iz, ix), mz, mx);
                eps_r(mz, mx) += e;
                sigma(mz, mx) += g;
            }
    }
}

/// The perturbation of ca and cb at every padded node by dm, extended into
/// the CPML as the model is.
CoefficientPerturbation perturb_coefficients(const PropagationSetup& s, const Model& model, const ModelDirection& dm) {
    if (dm.eps_r.nz() != model.grid.nz || dm.eps_r.nx() != model.grid.nx || dm.sigma.nz() != model.grid.nz ||
        dm.sigma.nx() != model.grid.nx)
        throw SizeMismatch(fmt::format("model perturbation of [{}][{}] (eps_r) and [{}][{}] (sigma) on a model of "
                                       "[{}][{}] nodes",
                                       dm.eps_r.nz(), dm.eps_r.nx(), dm.sigma.nz(), dm.sigma.nx(), model.grid.nz,
                                       model.grid.nx));
    const std::size_t n = s.grid.storage_size();
    CoefficientPerturbation p{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
#pragma omp parallel for schedule(static)
    for (int iz = 0; iz < s.grid.nz; ++iz) {
        const int mz = s.model_row(iz);
        for (int ix = 0; ix < s.grid.nx; ++ix) {
            const int mx = s.model_col(ix);
            const auto d = lossy_coefficient_derivatives(model.eps_r(mz, mx), model.sigma(mz, mx), s.time.dt_internal);
            const double de = dm.eps_r(mz, mx), ds = dm.sigma(mz, mx);
            const std::size_t i = s.grid.index(iz, ix);
            p.dca[i] = d.dca_deps_r * de + d.dca_dsigma * ds;
            p.dcb[i] = d.dcb_deps_r * de + d.dcb_dsigma * ds;
            p.dcb_over_cb[i] = p.dcb[i] / s.cb()[i];
        }
    }
    return p;
}

/// Node i's value of the per-node sum `sum` of the shot groups' results,
/// added in group order.
template <typename Result>
double summed(const std::vector<Result>& parts, std::span<const double> Result::* sum, std::size_t i) {
    double v = (parts[0].*sum)[i];
    for (std::size_t g = 1; g < parts.size(); ++g) v += (parts[g].*sum)[i];
    return v;
}

/// The gradient's chain rule on the groups' adjoint sums: dJ/dca = g_prev,
/// dJ/dcb = (g_next - ca g_prev)/cb at every padded node (ca, cb as the
/// engines used them), through ca(eps_r, sigma), cb(eps_r, sigma), folded
/// onto the model node each extends.
void first_order_chain_rule(const PropagationSetup& s, const Model& model, Precision precision,
                            const std::vector<AdjointResult>& a, Array2D& eps_r, Array2D& sigma) {
    fold_terms(s, eps_r, sigma, [&](std::size_t i, int mz, int mx) {
        const double ca = as_used(s.ca()[i], precision), cb = as_used(s.cb()[i], precision);
        const double grad_ca = summed(a, &AdjointResult::g_prev, i);
        const double grad_cb = (summed(a, &AdjointResult::g_next, i) - ca * grad_ca) / cb;
        const auto d = lossy_coefficient_derivatives(model.eps_r(mz, mx), model.sigma(mz, mx), s.time.dt_internal);
        return std::pair{grad_ca * d.dca_deps_r + grad_cb * d.dcb_deps_r, grad_ca * d.dca_dsigma + grad_cb * d.dcb_dsigma};
    });
}

/// Runs fn(group) for every group: where `concurrent`, at once, groups 1..
/// on host threads of their own and group 0 on this one, else in turn.
/// Waits for all before it rethrows the first group's exception (in group
/// order), so that nothing runs on when it returns.
template <typename Fn>
void for_each_group(int groups, bool concurrent, Fn&& fn) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(groups));
    auto run = [&](int g) {
        try {
            fn(g);
        } catch (...) {
            errors[static_cast<std::size_t>(g)] = std::current_exception();
        }
    };
    std::vector<std::thread> threads;
    std::vector<int> here{0};  // the groups this thread runs
    for (int g = 1; g < groups; ++g) {
        if (concurrent) try {
                threads.emplace_back(run, g);
                continue;
            } catch (const std::system_error&) {  // no thread to be had: run it here, after the others
            }
        here.push_back(g);
    }
    for (int g : here) run(g);
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace

/// The propagator's workspace: a batch's shot groups, each with a setup,
/// options and an engine that are kept from call to call (engines are made
/// at the first call that needs them and refilled by each later one). Where
/// the backend runs engines at once, an engine a group, with the group's
/// setup (the batch's shots of that group, sharing its coefficients) and
/// options (the batch's, as one group; progress reported by group 0 alone,
/// whose steps keep pace with the others'); else one engine for the batch,
/// which keeps the groups' sums itself.
class EnginePropagator::ShotGroups {
public:
    explicit ShotGroups(EnginePropagator& p) : p_(p) {}

    /// Takes a call's batch and makes the engines of its groups ready for it
    /// (Engine::prepare); the engines of groups it does not have give their
    /// memory back.
    void bind(PropagationSetup&& batch, bool keep_levels) {
        groups_ = resolve_shot_groups(p_.options_, batch.shots.size(), batch.grid);
        n_ = p_.concurrent_groups() ? groups_ : 1;
        shots_ = batch.shots.size();
        while (slots_.size() < static_cast<std::size_t>(n_)) slots_.push_back(std::make_unique<Slot>());
        if (n_ == 1) {
            slots_[0]->setup = std::move(batch);
        } else {
            batch_ = std::move(batch);
            for (int g = 0; g < n_; ++g) slot(g).setup = batch_.shot_range(begin(g), begin(g + 1) - begin(g));
        }
        for (int g = 0; g < n_; ++g) {
            Slot& sl = slot(g);
            sl.options = p_.options_;
            if (n_ > 1) {
                sl.options.shot_groups = 1;
                if (g > 0) sl.options.progress = nullptr;
            }
            if (!sl.engine) sl.engine = p_.make_engine(sl.setup, sl.options);
            sl.engine->prepare(keep_levels);
        }
        for (std::size_t g = static_cast<std::size_t>(n_); g < slots_.size(); ++g)
            if (slots_[g]->engine) slots_[g]->engine->release();
    }
    /// The call's batch.
    const PropagationSetup& batch() const { return n_ == 1 ? slots_[0]->setup : batch_; }
    /// The last call's coefficients, for the next call to reuse or fill
    /// anew (the setups let go of them, so that they are the caller's
    /// alone); empty ones before the first call (PropagationSetup::build).
    std::shared_ptr<MaterialCoefficients> take_coefficients() {
        if (slots_.empty()) return std::make_shared<MaterialCoefficients>();
        auto c = std::const_pointer_cast<MaterialCoefficients>(batch().coefficients);
        batch_.coefficients.reset();
        for (auto& sl : slots_) sl->setup.coefficients.reset();
        return c;
    }
    /// The batch's shot groups (resolve_shot_groups).
    int groups() const { return groups_; }
    /// Its engines: the groups, or one.
    int size() const { return n_; }
    Engine& engine(int g) { return *slot(g).engine; }
    /// The first shot of group g in the batch.
    std::size_t begin(int g) const { return shot_group_begin(shots_, n_, g); }
    /// fn(g, engine) for every group, at once where the backend can.
    template <typename Fn>
    void each(Fn&& fn) {
        for_each_group(size(), p_.concurrent_groups(), [&](int g) { fn(g, engine(g)); });
    }
    /// The groups' forward runs (keeping their levels for an adjoint: the
    /// gradient's), joined; their time and what they did go to `t`.
    InternalTraces forward(bool keep_levels, RunTimings& t) {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<InternalTraces> parts(static_cast<std::size_t>(size()));
        each([&](int g, Engine& e) { parts[static_cast<std::size_t>(g)] = e.forward(keep_levels); });
        InternalTraces all = join(std::move(parts));
        t.forward_s = seconds_since(t0);
        t.shot_groups = groups();
        t.forward_paired_share = engine(0).notes().forward_paired_share;
        if (keep_levels) {
            t.level_storage = level_storage();
            t.imaging_steps = engine(0).notes().imaging_steps;
        }
        return all;
    }
    /// The batch's internal traces from the groups'.
    InternalTraces join(std::vector<InternalTraces>&& parts) const {
        InternalTraces all;
        for (InternalTraces& p : parts)
            for (auto& shot : p) all.push_back(std::move(shot));
        return all;
    }
    /// Group g's share of the batch's internal traces.
    InternalTraces slice(const InternalTraces& all, int g) const {
        return InternalTraces(all.begin() + static_cast<std::ptrdiff_t>(begin(g)),
                              all.begin() + static_cast<std::ptrdiff_t>(begin(g + 1)));
    }
    /// What the engines hold, released ones included (Engine::bytes_held).
    std::size_t bytes_held() const {
        std::size_t bytes = 0;
        for (const auto& sl : slots_)
            if (sl->engine) bytes += sl->engine->bytes_held();
        return bytes;
    }
    /// Where the groups kept their levels: one text where all agree.
    std::string level_storage() {
        std::string all = engine(0).level_storage();
        bool same = true;
        for (int g = 1; g < size(); ++g) same = same && engine(g).level_storage() == all;
        if (same) return all;
        all.clear();
        for (int g = 0; g < size(); ++g)
            all += (g ? "; " : "") + ("shot group " + std::to_string(g + 1) + ": ") + engine(g).level_storage();
        return all;
    }

private:
    /// A group's setup and options, which its engine refers to (so they
    /// stay where they are: a Slot is never moved), and the engine.
    struct Slot {
        PropagationSetup setup;
        PropagatorOptions options;
        std::unique_ptr<Engine> engine;  // (after what it refers to: destroyed first)
    };
    Slot& slot(int g) const { return *slots_[static_cast<std::size_t>(g)]; }

    EnginePropagator& p_;
    PropagationSetup batch_;  // the call's batch where it runs as several engines
    std::size_t shots_ = 0;
    int groups_ = 1, n_ = 1;
    std::vector<std::unique_ptr<Slot>> slots_;
};

EnginePropagator::EnginePropagator(const PropagatorOptions& options) : Propagator(options) {}
EnginePropagator::~EnginePropagator() = default;

void EnginePropagator::drop_workspace() { workspace_.reset(); }

int resolve_shot_groups(const PropagatorOptions& o, std::size_t shots, const PaddedGrid& grid) {
    const int most = static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(shots, kMaxShotGroups)));
    if (o.shot_groups > 0) return std::min(o.shot_groups, most);
    const auto storage = o.snapshots.storage;
    const bool small = static_cast<long long>(grid.nx) * grid.nz <= (1LL << 22);
    return o.precision == Precision::single && shots >= 4 && small && storage != SnapshotStorage::host &&
                   storage != SnapshotStorage::disk
               ? 2
               : 1;
}

std::size_t shot_group_begin(std::size_t shots, int groups, int group) {
    return shots * static_cast<std::size_t>(group) / static_cast<std::size_t>(groups);
}

BornTraces Engine::born(const CoefficientPerturbation&, BornLevels, bool) {
    throw NotCompiled("this backend has no Born (tangent-linear) runs: use backend cpu for Born modelling and "
                      "Hessian-vector products");
}

SecondOrderResult Engine::second_order_adjoint(const InternalTraces&, const InternalTraces&) {
    throw NotCompiled("this backend has no second-order adjoint: use backend cpu for Hessian-vector products");
}

const PropagationSetup& EnginePropagator::begin_call(const Model& model, const Survey& survey, bool keep_levels,
                                                     bool model_comes_again, KeptModel kept,
                                                     std::future<bool>* comparison) {
    timings_ = {};
    kept_forward_.reset();
    const auto t0 = std::chrono::steady_clock::now();
    if (!workspace_) workspace_ = std::make_unique<ShotGroups>(*this);
    ShotGroups& groups = *workspace_;
    std::shared_ptr<MaterialCoefficients> recycle = groups.take_coefficients();
    if (comparison && kept == KeptModel::compare && recycle && recycle->model &&
        same_bits_sampled(model, *recycle->model)) {
        // the copy is held by the comparison too, whatever becomes of the coefficients
        std::shared_ptr<const Model> copy(recycle, &*recycle->model);
        try {
            *comparison = std::async(std::launch::async, [&model, copy] { return same_bits_parallel(model, *copy); });
            kept = KeptModel::same;
        } catch (const std::system_error&) {  // no thread to be had: build compares them
        }
    }
    const std::uint64_t last_id = recycle ? recycle->id : 0;  // (none where the last call's build threw)
    PropagationSetup built =
        PropagationSetup::build(model, survey, options_, std::move(recycle), model_comes_again, kept);
    timings_.build_s = seconds_since(t0);
    timings_.coefficients_kept = last_id != 0 && built.coefficients->id == last_id;
    timings_.ran_again = kept == KeptModel::other;
    groups.bind(std::move(built), keep_levels);
    timings_.setup_s = seconds_since(t0);
    return groups.batch();
}

bool EnginePropagator::compares_during_loops() const {
    switch (options_.model_comparison) {
    case ModelComparison::before: return false;
    case ModelComparison::during: return true;
    case ModelComparison::automatic: break;
    }
    return loops_leave_host_free();
}

template <typename Call>
auto EnginePropagator::run_call(const Model& model, const Survey& survey, bool keep_levels, Call&& call) {
    KeptModel kept = KeptModel::compare;
    for (;;) {
        std::future<bool> comparison;  // (its destructor waits for a comparison that runs)
        const PropagationSetup& s = begin_call(model, survey, keep_levels, false, kept,
                                               compares_during_loops() ? &comparison : nullptr);
        try {
            auto out = call(s);
            if (!comparison.valid() || comparison.get()) return out;
        } catch (...) {
            if (!comparison.valid() || comparison.get()) throw;
        }
        kept = KeptModel::other;  // the batch took coefficients of another model: the call again, with its own
    }
}

void EnginePropagator::reserve(const Model& model, const Survey& survey, bool gradient) {
    begin_call(model, survey, gradient, true);  // (the call reserved for likely brings this model: kept)
}

Traces EnginePropagator::forward(const Model& model, const Survey& survey) {
    return run_call(model, survey, false, [&](const PropagationSetup& s) {
        const InternalTraces internal = workspace_->forward(false, timings_);
        const auto t0 = std::chrono::steady_clock::now();
        Traces out = to_user(s, internal, survey.nt);
        timings_.other_s = seconds_since(t0);
        return out;
    });
}

GradientResult EnginePropagator::gradient(const Model& model, const Survey& survey, const Misfit& misfit) {
    return run_call(model, survey, true, [&](const PropagationSetup& s) {
        ShotGroups& groups = *workspace_;
        const InternalTraces internal = groups.forward(true, timings_);
        auto t0 = std::chrono::steady_clock::now();
        GradientResult out;
        out.synthetic = to_user(s, internal, survey.nt);
        Traces adjoint_source = make_traces(survey);
        out.misfit = misfit.evaluate(out.synthetic, adjoint_source);
        check_traces_match(adjoint_source, survey, "adjoint source");
        const InternalTraces r_internal = to_internal_adjoint(s, adjoint_source);
        timings_.other_s = seconds_since(t0);
        t0 = std::chrono::steady_clock::now();
        std::vector<AdjointResult> a(static_cast<std::size_t>(groups.size()));
        groups.each([&](int g, Engine& e) { a[static_cast<std::size_t>(g)] = e.adjoint(groups.slice(r_internal, g)); });
        timings_.adjoint_s = seconds_since(t0);
        t0 = std::chrono::steady_clock::now();

        const std::size_t nodes = a[0].g_prev.size();
        first_order_chain_rule(s, model, options_.precision, a, out.grad_eps_r, out.grad_sigma);
        if (!a[0].illumination.empty()) {
            if (a.size() == 1) {
                out.illumination = fold_to_model(s, a[0].illumination);
            } else {
                std::vector<double> energy(nodes);
    #pragma omp parallel for schedule(static)
                for (std::size_t i = 0; i < nodes; ++i) energy[i] = summed(a, &AdjointResult::illumination, i);
                out.illumination = fold_to_model(s, energy);
            }
        }
        out.grad_wavelet.resize(s.shots.size());
        for (int g = 0; g < groups.size(); ++g)
            for (std::size_t si = groups.begin(g); si < groups.begin(g + 1); ++si) {
                out.grad_wavelet[si].assign(survey.nt, 0.0);
                const std::size_t k = si - groups.begin(g);
                s.upsample.apply_transpose(a[static_cast<std::size_t>(g)].grad_wavelet_internal[k].data(),
                                           out.grad_wavelet[si].data());
            }
        timings_.other_s += seconds_since(t0);
        return out;
    });
}

Traces EnginePropagator::born(const Model& model, const Survey& survey, const ModelDirection& dm) {
    return run_call(model, survey, false, [&](const PropagationSetup& s) {
        ShotGroups& groups = *workspace_;
        auto t0 = std::chrono::steady_clock::now();
        const CoefficientPerturbation p = perturb_coefficients(s, model, dm);
        timings_.setup_s += seconds_since(t0);
        t0 = std::chrono::steady_clock::now();
        std::vector<InternalTraces> parts(static_cast<std::size_t>(groups.size()));
        groups.each([&](int g, Engine& e) { parts[static_cast<std::size_t>(g)] = e.born(p, BornLevels::none).born; });
        const InternalTraces internal = groups.join(std::move(parts));
        timings_.forward_s = seconds_since(t0);
        timings_.shot_groups = groups.groups();
        t0 = std::chrono::steady_clock::now();
        Traces out = to_user(s, internal, survey.nt);
        timings_.other_s = seconds_since(t0);
        return out;
    });
}

HessianResult EnginePropagator::hessian(const Model& model, const Survey& survey, const Misfit& misfit,
                                        const ModelDirection& v, HessianKind kind) {
    const bool reuse = kept_forward_ && same_bits_parallel(kept_forward_->model, model) && kept_forward_->survey == survey;
    const PropagationSetup& s = reuse ? workspace_->batch() : begin_call(model, survey, true);
    if (reuse) timings_ = {};
    timings_.background_kept = reuse;
    ShotGroups& groups = *workspace_;
    auto t0 = std::chrono::steady_clock::now();
    const CoefficientPerturbation p = perturb_coefficients(s, model, v);
    timings_.setup_s += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const bool full = kind == HessianKind::full;
    std::vector<BornTraces> parts(static_cast<std::size_t>(groups.size()));
    groups.each([&](int g, Engine& e) {
        parts[static_cast<std::size_t>(g)] = e.born(p, full ? BornLevels::both : BornLevels::background, reuse);
    });
    std::vector<InternalTraces> forward_parts, born_parts;
    for (BornTraces& b : parts) {
        forward_parts.push_back(std::move(b.forward));
        born_parts.push_back(std::move(b.born));
    }
    timings_.forward_s = seconds_since(t0);
    timings_.shot_groups = groups.groups();
    timings_.level_storage = groups.level_storage();
    t0 = std::chrono::steady_clock::now();
    HessianResult out;
    out.synthetic = reuse ? kept_forward_->synthetic : to_user(s, groups.join(std::move(forward_parts)), survey.nt);
    bool exact = true;
    for (int g = 0; g < groups.size(); ++g) exact = exact && groups.engine(g).levels_exact();
    if (!reuse && exact) kept_forward_ = KeptForward{model, survey, out.synthetic};
    out.born = to_user(s, groups.join(std::move(born_parts)), survey.nt);
    Traces source = make_traces(survey), d_source = make_traces(survey);
    out.misfit = misfit.evaluate(out.synthetic, source);
    misfit.apply_hessian(out.synthetic, out.born, d_source);
    check_traces_match(source, survey, "adjoint source");
    check_traces_match(d_source, survey, "second-order adjoint source");
    const InternalTraces r = to_internal_adjoint(s, source), dr = to_internal_adjoint(s, d_source);
    timings_.other_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const double dt = s.time.dt_internal;
    if (!full) {
        // J^T H_d J v: the gradient's chain rule on the adjoint driven by dr
        std::vector<AdjointResult> a(static_cast<std::size_t>(groups.size()));
        groups.each([&](int g, Engine& e) { a[static_cast<std::size_t>(g)] = e.adjoint(groups.slice(dr, g)); });
        timings_.adjoint_s = seconds_since(t0);
        t0 = std::chrono::steady_clock::now();
        first_order_chain_rule(s, model, options_.precision, a, out.hv_eps_r, out.hv_sigma);
    } else {
        std::vector<SecondOrderResult> a(static_cast<std::size_t>(groups.size()));
        groups.each([&](int g, Engine& e) {
            a[static_cast<std::size_t>(g)] = e.second_order_adjoint(groups.slice(r, g), groups.slice(dr, g));
        });
        timings_.adjoint_s = seconds_since(t0);
        t0 = std::chrono::steady_clock::now();
        // the gradient's chain rule (as in gradient()) differentiated along v:
        //   G_ca = g_prev, G_cb = (g_next - ca G_ca)/cb
        //   dG_ca = dg_prev, dG_cb = (dg_next - ca dG_ca - dca G_ca)/cb - G_cb dcb/cb
        //   Hv = dG . dc/dm + G . (d2c/dm2 v)
        fold_terms(s, out.hv_eps_r, out.hv_sigma, [&](std::size_t i, int mz, int mx) {
            const double ca = as_used(s.ca()[i], options_.precision), cb = as_used(s.cb()[i], options_.precision);
            const double g_ca = summed(a, &SecondOrderResult::g_prev, i);
            const double g_cb = (summed(a, &SecondOrderResult::g_next, i) - ca * g_ca) / cb;
            const double dg_ca = summed(a, &SecondOrderResult::dg_prev, i);
            const double dg_cb = (summed(a, &SecondOrderResult::dg_next, i) - ca * dg_ca - p.dca[i] * g_ca) / cb - g_cb * p.dcb[i] / cb;
            const double e = model.eps_r(mz, mx), sg = model.sigma(mz, mx);
            const auto d = lossy_coefficient_derivatives(e, sg, dt);
            const auto d2 = lossy_coefficient_second_derivatives(e, sg, dt);
            const double ve = v.eps_r(mz, mx), vs = v.sigma(mz, mx);
            return std::pair{dg_ca * d.dca_deps_r + dg_cb * d.dcb_deps_r + g_ca * (d2.ca_ee * ve + d2.ca_es * vs) +
                                 g_cb * (d2.cb_ee * ve + d2.cb_es * vs),
                             dg_ca * d.dca_dsigma + dg_cb * d.dcb_dsigma + g_ca * (d2.ca_es * ve + d2.ca_ss * vs) +
                                 g_cb * (d2.cb_es * ve + d2.cb_ss * vs)};
        });
    }
    timings_.other_s += seconds_since(t0);
    return out;
}

MemoryEstimate EnginePropagator::estimate_memory(const Model& model, const Survey& survey, bool gradient) const {
    return plan_batch_memory(PropagationSetup::build(model, survey, options_), options_, gradient, backend());
}

std::size_t EnginePropagator::workspace_bytes() const { return workspace_ ? workspace_->bytes_held() : 0; }

}  // namespace gprfwi
