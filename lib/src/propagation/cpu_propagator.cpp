// The CPU engine: the time loops over the kernels of kernels/cpu/.
//
// Forward, internal step m = 0 .. nt_internal-1, for all shots at once:
//   H update; E update; Ey += source weights * wavelet_internal[m];
//   trace_internal[m] = receiver weights . Ey^{m+1}; keep Ey^{m+1} if asked.
// Adjoint, m = nt_internal-1 .. 0 (the transpose of the forward, in reverse):
//   lambda_ey += receiver weights * adjoint_source_internal[m];
//   dJ/dwavelet_internal[m] = source weights . lambda_ey;
//   pass 1 (with imaging), pass 2, pass 3 (see kernels.hpp).
// Born, beside the forward step m: the perturbation's fields take the same H
// and E updates without a source, then the scattering term (kernels::
// BornScatter), and are sampled as the forward's are.
// Second-order adjoint, step m: both adjoint fields take their sources and
// image; the second's pass 1 reads the first's lambda_ey before the first's
// own pass 1 (kernels::BornCoupling), then each takes passes 2 and 3.

#include "gprfwi/cpu_propagator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <type_traits>

#include "gprfwi/checkpoint_schedule.hpp"
#include "gprfwi/dispatch.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/memory_plan.hpp"
#include "gprfwi/snapshots.hpp"

namespace gprfwi {

namespace {

namespace k = kernels;

template <typename T>
std::vector<T> convert(const std::vector<double>& v) {
    return std::vector<T>(v.begin(), v.end());
}

/// CPML profile of one axis in the arithmetic type, with its kernel view.
template <typename T>
struct AxisArrays {
    std::vector<T> ik_int, a_int, b_int, ik_half, a_half, b_half;
    int low_end, high_begin;
    explicit AxisArrays(const CpmlAxisProfile& p)
        : ik_int(convert<T>(p.inv_kappa_int)), a_int(convert<T>(p.a_int)), b_int(convert<T>(p.b_int)),
          ik_half(convert<T>(p.inv_kappa_half)), a_half(convert<T>(p.a_half)),
          b_half(convert<T>(p.b_half)), low_end(p.strip_low_end), high_begin(p.strip_high_begin) {}
    k::CpmlAxis<T> view() const {
        return {ik_int.data(), a_int.data(), b_int.data(), ik_half.data(), a_half.data(), b_half.data(),
                low_end, high_begin};
    }
};

/// Seven field arrays (Ey, Hx, Hz and four CPML memories) for a batch of shots.
template <typename T>
struct FieldArrays {
    std::vector<T> ey, hx, hz, psi_ey_x, psi_ey_z, psi_hz_x, psi_hx_z;
    FieldArrays() = default;
    explicit FieldArrays(std::size_t n) { zero(n); }
    /// n zeros in every array (their memory kept where it holds n already).
    void zero(std::size_t n) {
        for (auto* a : {&ey, &hx, &hz, &psi_ey_x, &psi_ey_z, &psi_hz_x, &psi_hx_z}) a->assign(n, T(0));
    }
    k::TmFields<T> view() {
        return {ey.data(), hx.data(), hz.data(), psi_ey_x.data(), psi_ey_z.data(), psi_hz_x.data(),
                psi_hx_z.data()};
    }
};

template <typename T, int ORDER, typename Stored>
class CpuEngine final : public Engine {
public:
    CpuEngine(const PropagationSetup& s, const PropagatorOptions& o) : s_(s), opt_(o) {}

    void prepare(bool) override {
        // the model's coefficients (unless this engine holds these already) and the CPML profiles in the
        // arithmetic type
        if (coefficients_id_ != s_.coefficients->id) {
            assign_converted(ca_, s_.ca());
            assign_converted(cb_, s_.cb());
            assign_converted(cq_, s_.cq());
            coefficients_id_ = s_.coefficients->id;
        }
        x_.emplace(s_.cpml_x);
        z_.emplace(s_.cpml_z);
        g_ = grid_params<T>(s_);
        kept_ = false;
    }

    void release() override {
        fields_ = {};
        adjoint_ = {};
        scratch_ = {};
        store_.reset();
        checkpoints_ = {};
        sums_ = {};
        born_ = {};
        second_ = {};
        dstore_.reset();
        prev_ = {};
    }

    InternalTraces forward(bool keep_levels) override {
        const std::size_t n = batch_size();
        const int c = s_.checkpoint_steps;
        const bool binomial = s_.binomial_slots > 0;  // the adjoint recomputes everything from the zero start
        if (keep_levels && !c && !binomial) {
            if (store_) store_->reset(s_.time.nt_internal, s_.snapshot_interval, n);
            else store_.emplace(s_.time.nt_internal, s_.snapshot_interval, n);
        }
        checkpoints_.clear();
        kept_ = keep_levels;
        born_kept_ = false;
        FieldArrays<T>& f = fields_;
        f.zero(n);
        InternalTraces traces = make_internal_traces(s_);
        for (int m = 0; m < s_.time.nt_internal; ++m) {
            if (keep_levels && c && m % c == 0) checkpoints_.push_back(f);  // the state at step m
            step(f, m, &traces);
            if (keep_levels && !c && !binomial)
                if (Stored* level = store_->level(m + 1)) keep_level(f.ey, level, (m + 1) / s_.snapshot_interval, scales_);
            if (check_now(m)) check_finite(f.ey, m, "Ey");
            report_progress(opt_, "forward", m + 1, s_.time.nt_internal);
        }
        return traces;
    }

    AdjointResult adjoint(const InternalTraces& r_internal) override {
        if (!kept_) throw Error("CpuEngine::adjoint needs a forward run that kept its levels");
        const std::size_t n = batch_size();
        FieldArrays<T>& adj = adjoint_;
        adj.zero(n);
        for (std::vector<T>& a : scratch_) a.assign(n, T(0));
        auto& [q_x, q_z, p_x, p_z] = scratch_;
        // the imaging accumulators, summed over the shots as it goes; the result's views of them
        const int groups = reset_sums(false);
        AdjointResult out{sums_[0].prev, sums_[0].next, sums_[0].illumination, {}};
        const auto fields = adj.view();
        const k::AdjointScratch<T> scratch{q_x.data(), q_z.data(), p_x.data(), p_z.data()};
        const auto x = x_->view(), z = z_->view();
        out.grad_wavelet_internal.assign(s_.shots.size(), std::vector<double>(s_.time.nt_internal, 0.0));
        // adjoint step m, imaging with kept levels m and m+1 (nullptr: not kept)
        auto adjoint_step = [&](int m, const Stored* prev, const Stored* next) {
            inject(adj, r_internal, m, &out.grad_wavelet_internal);
            for (int group = 0; group < groups && (prev || next); ++group) {
                Sums& sum = sums_[static_cast<std::size_t>(group)];
                const k::ImagingView<T, Stored> img{prev, next, static_cast<double>(s_.snapshot_interval),
                                                    sum.prev.data(), sum.next.data(), level_scales(prev, m, scales_),
                                                    level_scales(next, m + 1, scales_),
                                                    sum.illumination.empty() ? nullptr : sum.illumination.data()};
                const auto first = [&](int gr) { return static_cast<int>(shot_group_begin(s_.shots.size(), groups, gr)); };
                k::cpu::imaging_condition<T, Stored>(g_, fields.ey, img, first(group), first(group + 1));
            }
            k::cpu::adjoint_e_prepare<T>(g_, materials(), x, z, fields, scratch);
            k::cpu::adjoint_h<T, ORDER>(g_, materials(), x, z, fields, scratch);
            k::cpu::adjoint_e_finish<T, ORDER>(g_, fields, scratch);
            if (check_now(m)) check_finite(adj.ey, m, "the adjoint field lambda_ey");
            report_progress(opt_, "adjoint", s_.time.nt_internal - m, s_.time.nt_internal);
        };
        // the reverse-time schedule (run_reverse_time): recomputed levels in a
        // window of slots, the binomial schedule's saved states, one current state
        // (the window and the saved states are kept from call to call: every slot is written before it is read)
        const int nt = s_.time.nt_internal, c = s_.checkpoint_steps;
        if (s_.binomial_slots) window_.resize(2 * n);
        else if (c) window_.resize(static_cast<std::size_t>(c + 1) * n);
        auto slot = [&](int k) { return k < 0 ? nullptr : window_.data() + static_cast<std::size_t>(k) * n; };
        FieldArrays<T>& f = recomputed_;
        std::vector<FieldArrays<T>>& saved = saved_;
        ReverseTimeSteps steps;
        steps.start_from_zero = [&] { f.zero(n); };
        steps.advance = [&](int m) { step(f, m, nullptr); };
        steps.save = [&](int k) {
            if (static_cast<std::size_t>(k) < saved.size()) saved[static_cast<std::size_t>(k)] = f;
            else saved.push_back(f);
        };
        steps.load = [&](int k) { f = saved[static_cast<std::size_t>(k)]; };
        steps.load_segment = [&](int seg, int a) {
            f = checkpoints_[static_cast<std::size_t>(seg)];
            if (a > 0) keep_level(f.ey, slot(0), a, scales_);
        };
        steps.keep = [&](int m, int k) { keep_level(f.ey, slot(k), m, scales_); };
        steps.step_keeping = [&](int m, int k) {
            step(f, m, nullptr);
            keep_level(f.ey, slot(k), m + 1, scales_);
        };
        steps.adjoint = [&](int m, int prev, int next, bool) { adjoint_step(m, slot(prev), slot(next)); };
        steps.adjoint_kept = [&](int m) { adjoint_step(m, store_->level(m), store_->level(m + 1)); };
        std::vector<CheckpointAction> schedule;
        if (s_.binomial_slots) schedule = binomial_schedule(nt, s_.binomial_slots);
        run_reverse_time(nt, c, s_.binomial_slots ? &schedule : nullptr, steps);
        add_group_sums();
        return out;
    }

    bool levels_exact() const override {
        return kept_ && std::is_same_v<Stored, T> && s_.snapshot_interval == 1 && !s_.checkpoint_steps &&
               !s_.binomial_slots && store_;
    }

    BornTraces born(const CoefficientPerturbation& p, BornLevels keep, bool from_levels) override {
        const std::size_t n = batch_size();
        const int c = s_.checkpoint_steps;
        const bool binomial = s_.binomial_slots > 0;
        const bool keep_d = keep == BornLevels::both;
        const bool keep_e = keep != BornLevels::none && !from_levels;  // (levels read are kept as they are)
        if (from_levels && !levels_exact())
            throw Error("CpuEngine::born from kept levels needs every level of a forward run, uncompressed");
        if (keep_d && (c || binomial))
            throw InvalidArgument("second-order adjoint runs read every kept level: snapshots.checkpoint_steps and "
                                  "snapshots.binomial_slots are not available for them");
        if (p.dca.size() != ca_.size() || p.dcb.size() != ca_.size() || p.dcb_over_cb.size() != ca_.size())
            throw SizeMismatch(fmt::format("Born perturbation of {} nodes on a padded grid of {}", p.dca.size(), ca_.size()));
        if (keep_e && !c && !binomial) {
            if (store_) store_->reset(s_.time.nt_internal, s_.snapshot_interval, n);
            else store_.emplace(s_.time.nt_internal, s_.snapshot_interval, n);
        }
        if (keep_d) {
            if (dstore_) dstore_->reset(s_.time.nt_internal, s_.snapshot_interval, n);
            else dstore_.emplace(s_.time.nt_internal, s_.snapshot_interval, n);
        }
        if (!from_levels) {
            checkpoints_.clear();
            kept_ = keep_e;
        }
        born_kept_ = keep_d;
        // the perturbation in the arithmetic type
        dca_.assign(p.dca.begin(), p.dca.end());
        dcb_.assign(p.dcb.begin(), p.dcb.end());
        dcb_over_cb_.assign(p.dcb_over_cb.begin(), p.dcb_over_cb.end());
        FieldArrays<T>& f = fields_;
        FieldArrays<T>& d = born_;
        d.zero(n);
        prev_.assign(n, T(0));  // Ey^m of the step (Ey^0 from the levels: zero)
        BornTraces out{from_levels ? InternalTraces{} : make_internal_traces(s_), make_internal_traces(s_)};
        if (!from_levels) f.zero(n);
        const auto x = x_->view(), z = z_->view();
        const auto dfields = d.view();
        for (int m = 0; m < s_.time.nt_internal; ++m) {
            const T* e_prev = prev_.data();
            const T* e_next = f.ey.data();
            if (from_levels) {
                if constexpr (std::is_same_v<Stored, T>) {
                    if (m > 0) e_prev = store_->level(m);
                    e_next = store_->level(m + 1);
                }
            } else {
                if (keep_e && c && m % c == 0) checkpoints_.push_back(f);
                std::copy(f.ey.begin(), f.ey.end(), prev_.begin());
                step(f, m, &out.forward);
            }
            k::cpu::update_h<T, ORDER>(g_, materials(), x, z, dfields);
            k::cpu::update_e<T, ORDER>(g_, materials(), x, z, dfields);
            k::cpu::born_scatter<T>(g_, {ca_.data(), dca_.data(), dcb_over_cb_.data(), e_prev, e_next, d.ey.data()});
            sample(d.ey, m, out.born);
            const int j = (m + 1) / s_.snapshot_interval;
            if (keep_e && !c && !binomial)
                if (Stored* level = store_->level(m + 1)) keep_level(f.ey, level, j, scales_);
            if (keep_d)
                if (Stored* level = dstore_->level(m + 1)) keep_level(d.ey, level, j, dscales_);
            if (check_now(m)) {
                if (!from_levels) check_finite(f.ey, m, "Ey");
                check_finite(d.ey, m, "the Born field dEy");
            }
            report_progress(opt_, "born", m + 1, s_.time.nt_internal);
        }
        return out;
    }

    SecondOrderResult second_order_adjoint(const InternalTraces& source, const InternalTraces& d_source) override {
        if (!born_kept_)
            throw Error("CpuEngine::second_order_adjoint needs a Born run that kept the background's and its own levels");
        const std::size_t n = batch_size();
        FieldArrays<T>& adj = adjoint_;
        FieldArrays<T>& sec = second_;
        adj.zero(n);
        sec.zero(n);
        for (std::vector<T>& a : scratch_) a.assign(n, T(0));
        auto& [q_x, q_z, p_x, p_z] = scratch_;
        const int groups = reset_sums(true);
        const auto fields = adj.view(), dfields = sec.view();
        const k::AdjointScratch<T> scratch{q_x.data(), q_z.data(), p_x.data(), p_z.data()};
        const auto x = x_->view(), z = z_->view();
        const k::BornCoupling<T> coupling{dca_.data(), dcb_.data(), adj.ey.data()};
        const double w = s_.snapshot_interval;
        for (int m = s_.time.nt_internal - 1; m >= 0; --m) {
            inject(adj, source, m, nullptr);
            inject(sec, d_source, m, nullptr);
            const Stored* prev = store_->level(m);
            const Stored* next = store_->level(m + 1);
            const Stored* dprev = dstore_->level(m);
            const Stored* dnext = dstore_->level(m + 1);
            for (int group = 0; group < groups && (prev || next); ++group) {
                Sums& sum = sums_[static_cast<std::size_t>(group)];
                const int first = static_cast<int>(shot_group_begin(s_.shots.size(), groups, group));
                const int last = static_cast<int>(shot_group_begin(s_.shots.size(), groups, group + 1));
                const double* sp = level_scales(prev, m, scales_);
                const double* sn = level_scales(next, m + 1, scales_);
                // lambda with Ey; dlambda with Ey, then lambda with dEy, into the derivative's sums
                k::cpu::imaging_condition<T, Stored>(
                    g_, fields.ey, {prev, next, w, sum.prev.data(), sum.next.data(), sp, sn}, first, last);
                k::cpu::imaging_condition<T, Stored>(
                    g_, dfields.ey, {prev, next, w, sum.dprev.data(), sum.dnext.data(), sp, sn}, first, last);
                k::cpu::imaging_condition<T, Stored>(g_, fields.ey,
                                                     {dprev, dnext, w, sum.dprev.data(), sum.dnext.data(),
                                                      level_scales(dprev, m, dscales_), level_scales(dnext, m + 1, dscales_)},
                                                     first, last);
            }
            k::cpu::second_order_e_prepare<T>(g_, materials(), x, z, dfields, scratch, coupling);
            k::cpu::adjoint_h<T, ORDER>(g_, materials(), x, z, dfields, scratch);
            k::cpu::adjoint_e_finish<T, ORDER>(g_, dfields, scratch);
            k::cpu::adjoint_e_prepare<T>(g_, materials(), x, z, fields, scratch);
            k::cpu::adjoint_h<T, ORDER>(g_, materials(), x, z, fields, scratch);
            k::cpu::adjoint_e_finish<T, ORDER>(g_, fields, scratch);
            if (check_now(m)) {
                check_finite(adj.ey, m, "the adjoint field lambda_ey");
                check_finite(sec.ey, m, "the second-order adjoint field");
            }
            report_progress(opt_, "second-order adjoint", s_.time.nt_internal - m, s_.time.nt_internal);
        }
        add_group_sums();
        return {sums_[0].prev, sums_[0].next, sums_[0].dprev, sums_[0].dnext};
    }

    std::string level_storage() const override { return "host memory (CPU backend)"; }

    std::size_t bytes_held() const override {
        std::size_t values = 0, stored = 0, doubles = 0;
        auto fields = [&](const FieldArrays<T>& f) {
            for (auto* a : {&f.ey, &f.hx, &f.hz, &f.psi_ey_x, &f.psi_ey_z, &f.psi_hz_x, &f.psi_hx_z}) values += a->capacity();
        };
        for (const std::vector<T>* a : {&ca_, &cb_, &cq_, &dca_, &dcb_, &dcb_over_cb_, &prev_}) values += a->capacity();
        for (const auto* axis : {&x_, &z_})
            if (*axis)
                for (auto* a : {&(*axis)->ik_int, &(*axis)->a_int, &(*axis)->b_int, &(*axis)->ik_half, &(*axis)->a_half,
                                &(*axis)->b_half})
                    values += a->capacity();
        for (const FieldArrays<T>* f : {&fields_, &adjoint_, &born_, &second_, &recomputed_}) fields(*f);
        for (const std::vector<T>& a : scratch_) values += a.capacity();
        for (const auto* kept : {&checkpoints_, &saved_})
            for (const FieldArrays<T>& f : *kept) fields(f);
        for (const auto* store : {&store_, &dstore_})
            if (*store) stored += (*store)->capacity();
        stored += window_.capacity();
        doubles += scales_.capacity() + dscales_.capacity();
        for (const Sums& sum : sums_)
            for (auto* a : {&sum.prev, &sum.next, &sum.illumination, &sum.dprev, &sum.dnext}) doubles += a->capacity();
        return values * sizeof(T) + stored * sizeof(Stored) + doubles * sizeof(double);
    }

    /// What bytes_held() comes to after a forward (or a gradient's forward
    /// and adjoint) over `s` in a fresh engine: the arrays of prepare(),
    /// forward() and adjoint(), one term each; and the call's traces (the
    /// caller's), with the adjoint source beside them in a gradient.
    static MemoryEstimate plan(const PropagationSetup& s, const PropagatorOptions& o, bool gradient) {
        const std::size_t cells = s.grid.storage_size(), shots = s.shots.size(), n = cells * shots;
        const auto nt = static_cast<std::size_t>(s.time.nt_internal);
        std::size_t profiles = 0, rows = 0;
        for (const CpmlAxisProfile* p : {&s.cpml_x, &s.cpml_z})
            for (const std::vector<double>* a : p->arrays())
                profiles += a->size();
        for (const ShotOperators& op : s.shots) rows += op.receivers.size();
        MemoryEstimate e;
        e.fields_bytes = (3 * cells + profiles + 7 * n) * sizeof(T);  // ca, cb, cq; the CPML; the forward's fields
        e.traces_bytes = rows * nt * sizeof(double) * (gradient ? 2 : 1);
        if (!gradient) return e;
        const auto groups = static_cast<std::size_t>(resolve_shot_groups(o, shots, s.grid));
        // the adjoint's fields and scratch; each shot group's imaging sums
        e.fields_bytes += 11 * n * sizeof(T) + groups * (o.illumination ? 3 : 2) * cells * sizeof(double);
        const std::size_t levels = nt / static_cast<std::size_t>(s.snapshot_interval);
        if constexpr (kScaledStorage<Stored>) e.fields_bytes += levels * shots * sizeof(double);
        const std::size_t state = 7 * n * sizeof(T);
        if (const int slots = s.binomial_slots) {
            // the schedule's saved states (those it stores), the current state and Ey^m, Ey^{m+1}
            int saved = 0;
            for (const CheckpointAction& a : binomial_schedule(s.time.nt_internal, slots))
                if (a.kind == CheckpointAction::store) saved = std::max(saved, a.slot + 1);
            e.snapshot_bytes = (static_cast<std::size_t>(saved) + 1) * state + 2 * n * sizeof(Stored);
        } else if (const int c = s.checkpoint_steps) {
            // a state per segment, the current state, and one segment's levels
            const std::size_t segments = (nt + static_cast<std::size_t>(c) - 1) / static_cast<std::size_t>(c);
            e.snapshot_bytes = (segments + 1) * state + static_cast<std::size_t>(c + 1) * n * sizeof(Stored);
        } else {
            e.snapshot_bytes = levels * n * sizeof(Stored);
        }
        return e;
    }

    /// What bytes_held() comes to after a Hessian-vector product over `s` in
    /// a fresh engine: a gradient's arrays, the Born run's perturbed
    /// coefficients, Ey^m and fields; for a full product also the
    /// second-order adjoint's fields and sums and the Born run's kept levels.
    /// Its traces: the synthetic and Born traces and the two adjoint sources.
    static MemoryEstimate hessian_plan(const PropagationSetup& s, const PropagatorOptions& o, HessianKind kind) {
        MemoryEstimate e = plan(s, o, true);
        const std::size_t cells = s.grid.storage_size(), shots = s.shots.size(), n = cells * shots;
        e.fields_bytes += (3 * cells + n + 7 * n) * sizeof(T);  // dca, dcb, dcb / cb; Ey^m; the Born fields
        e.traces_bytes *= 2;
        if (kind != HessianKind::full) return e;
        const auto groups = static_cast<std::size_t>(resolve_shot_groups(o, shots, s.grid));
        e.fields_bytes += 7 * n * sizeof(T) + groups * 2 * cells * sizeof(double);
        const std::size_t levels = static_cast<std::size_t>(s.time.nt_internal) / static_cast<std::size_t>(s.snapshot_interval);
        if constexpr (kScaledStorage<Stored>) e.fields_bytes += levels * shots * sizeof(double);
        e.snapshot_bytes += levels * n * sizeof(Stored);
        return e;
    }

private:
    k::MaterialView<T> materials() const { return {ca_.data(), cb_.data(), cq_.data()}; }

    static void assign_converted(std::vector<T>& to, const std::vector<double>& from) {
        to.assign(from.begin(), from.end());
    }

    /// Adds step m's adjoint source (the transpose of the receiver sampling)
    /// to the adjoint Ey of `adj`, and, when grad_wavelet is given, writes the
    /// transpose of the source term, grad_wavelet[shot][m].
    void inject(FieldArrays<T>& adj, const InternalTraces& source, int m,
                std::vector<std::vector<double>>* grad_wavelet) const {
        for (std::size_t si = 0; si < s_.shots.size(); ++si) {
            T* lam = adj.ey.data() + si * g_.shot_stride;
            const ShotOperators& op = s_.shots[si];
            for (std::size_t r = 0; r < op.receivers.size(); ++r)
                for (const PointWeight& pw : op.receivers[r]) lam[pw.index] += static_cast<T>(pw.weight * source[si][r][m]);
            if (!grad_wavelet) continue;
            double acc = 0;
            for (const PointWeight& pw : op.source) acc += pw.weight * static_cast<double>(lam[pw.index]);
            (*grad_wavelet)[si][m] = acc;
        }
    }

    /// traces[shot][r][m] = receiver r's weights . the shot's Ey.
    void sample(const std::vector<T>& ey, int m, InternalTraces& traces) const {
        for (std::size_t si = 0; si < s_.shots.size(); ++si) {
            const T* e = ey.data() + si * g_.shot_stride;
            const ShotOperators& op = s_.shots[si];
            for (std::size_t r = 0; r < op.receivers.size(); ++r) {
                double acc = 0;
                for (const PointWeight& pw : op.receivers[r]) acc += pw.weight * static_cast<double>(e[pw.index]);
                traces[si][r][m] = acc;
            }
        }
    }

    /// Each shot group's imaging sums, zeroed: a shot group (resolve_shot_groups) sums into its own, the
    /// groups' added in group order at the end (add_group_sums), as EnginePropagator adds those of engines
    /// that run at once. prev and next always; illumination where asked, in the first-order adjoint; the
    /// derivatives' in the second-order one. Returns the number of groups.
    int reset_sums(bool second_order) {
        const std::size_t cells = g_.shot_stride;
        const int groups = resolve_shot_groups(opt_, s_.shots.size(), s_.grid);
        sums_.resize(static_cast<std::size_t>(groups));
        for (Sums& sum : sums_) {
            sum.prev.assign(cells, 0.0);
            sum.next.assign(cells, 0.0);
            sum.illumination.assign(!second_order && opt_.illumination ? cells : 0, 0.0);
            sum.dprev.assign(second_order ? cells : 0, 0.0);
            sum.dnext.assign(second_order ? cells : 0, 0.0);
        }
        return groups;
    }

    /// Adds the shot groups' sums into group 0's, in group order.
    void add_group_sums() {
        for (std::size_t group = 1; group < sums_.size(); ++group)
            for (auto part : {&Sums::prev, &Sums::next, &Sums::illumination, &Sums::dprev, &Sums::dnext}) {
                std::vector<double>& to = sums_[0].*part;
                const std::vector<double>& add = sums_[group].*part;
                if (add.size() != to.size()) continue;
#pragma omp parallel for schedule(static)
                for (std::size_t i = 0; i < to.size(); ++i) to[i] += add[i];
            }
    }

    /// Forward step m: H, E, the source term, and (when traces is given) the receivers.
    void step(FieldArrays<T>& f, int m, InternalTraces* traces) {
        const auto fields = f.view();
        const auto x = x_->view(), z = z_->view();
        // H^{m-1/2} -> H^{m+1/2};  Ey^m -> Ey^{m+1}
        k::cpu::update_h<T, ORDER>(g_, materials(), x, z, fields);
        k::cpu::update_e<T, ORDER>(g_, materials(), x, z, fields);
        for (std::size_t si = 0; si < s_.shots.size(); ++si) {
            T* ey = f.ey.data() + si * g_.shot_stride;
            const ShotOperators& op = s_.shots[si];
            // Ey -= cb * J: weights already hold -cb * w * amplitude / (dx dz)
            for (const PointWeight& pw : op.source) ey[pw.index] += static_cast<T>(pw.weight * op.wavelet_internal[m]);
        }
        if (traces) sample(f.ey, m, *traces);
    }

    /// Stores Ey as kept level j (1-based); fp8 levels get a scale per shot,
    /// max |Ey| / 448 (1 for a zero field), and hold Ey / scale.
    void keep_level(const std::vector<T>& ey, Stored* level, int j, std::vector<double>& scales) {
        const std::size_t n = batch_size();
        if constexpr (kScaledStorage<Stored>) {
            scales.resize(static_cast<std::size_t>(s_.time.nt_internal / s_.snapshot_interval) * g_.n_shots);
            for (int si = 0; si < g_.n_shots; ++si) {
                const T* f = ey.data() + si * g_.shot_stride;
                double max_abs = 0;
#pragma omp parallel for reduction(max : max_abs)
                for (std::size_t i = 0; i < g_.shot_stride; ++i) max_abs = std::max(max_abs, std::abs(static_cast<double>(f[i])));
                const double inv = max_abs > 0 ? kFp8Max / max_abs : 1.0;
                scales[static_cast<std::size_t>(j - 1) * g_.n_shots + si] = max_abs > 0 ? max_abs / kFp8Max : 1.0;
                Stored* out = level + si * g_.shot_stride;
#pragma omp parallel for schedule(static)
                for (std::size_t i = 0; i < g_.shot_stride; ++i)
                    out[i] = store_as<Stored>(static_cast<float>(static_cast<double>(f[i]) * inv));
            }
        } else {
#pragma omp parallel for schedule(static)
            for (std::size_t i = 0; i < n; ++i) level[i] = store_as<Stored>(ey[i]);
        }
    }

    /// Per-shot scales (of `scales`) of internal level L when it is kept in a scaled type.
    const double* level_scales(const Stored* kept, int L, const std::vector<double>& scales) const {
        if (!kept || !kScaledStorage<Stored>) return nullptr;
        return scales.data() + static_cast<std::size_t>(L / s_.snapshot_interval - 1) * g_.n_shots;
    }
    std::size_t batch_size() const { return g_.shot_stride * g_.n_shots; }
    bool check_now(int step) const { return blowup_check_due(s_, opt_.blowup_check_interval, step); }

    /// Throws NumericalBlowup if any shot's `field` holds NaN or Inf.
    void check_finite(const std::vector<T>& field, int step, const char* what) const {
        for (int si = 0; si < g_.n_shots; ++si) {
            const T* f = field.data() + si * g_.shot_stride;
            bool bad = false;
#pragma omp parallel for reduction(|| : bad)
            for (std::size_t i = 0; i < g_.shot_stride; ++i) bad = bad || !std::isfinite(f[i]);
            if (bad) throw_blowup(s_, what, si, step);
        }
    }

    const PropagationSetup& s_;
    const PropagatorOptions& opt_;
    std::vector<T> ca_, cb_, cq_;
    std::uint64_t coefficients_id_ = 0;  // MaterialCoefficients::id of the values in ca_, cb_, cq_ (0: none)
    std::optional<AxisArrays<T>> x_, z_;
    k::GridParams<T> g_;
    FieldArrays<T> fields_, adjoint_;          // the forward's and the adjoint's fields
    FieldArrays<T> born_, second_;             // the Born run's and the second-order adjoint's
    std::array<std::vector<T>, 4> scratch_;    // the adjoint's q_x, q_z, p_x, p_z
    std::optional<SnapshotStore<Stored>> store_;  // every kept level, or
    std::vector<FieldArrays<T>> checkpoints_;      // the state every checkpoint_steps steps
    // the adjoint's recomputation (checkpoints, binomial): its levels' window, current and saved states
    std::vector<Stored> window_;
    FieldArrays<T> recomputed_;
    std::vector<FieldArrays<T>> saved_;
    bool kept_ = false;
    std::vector<double> scales_;  // [kept level][shot], fp8 only
    // the last Born run's perturbation (r = dcb/cb), Ey^n of its step, and its kept dEy levels
    std::vector<T> dca_, dcb_, dcb_over_cb_, prev_;
    std::optional<SnapshotStore<Stored>> dstore_;
    std::vector<double> dscales_;
    bool born_kept_ = false;
    /// The last adjoint's per-node sums of a shot group; group 0's hold the
    /// batch's at the end, which AdjointResult views.
    struct Sums {
        std::vector<double> prev, next, illumination;
        std::vector<double> dprev, dnext;  // the second-order adjoint's
    };
    std::vector<Sums> sums_;
};

}  // namespace

MemoryEstimate cpu_memory_plan(const PropagationSetup& batch, const PropagatorOptions& options, bool gradient) {
    return dispatch_kernel_types(options, [&]<typename T, int ORDER, typename Stored>() {
        return CpuEngine<T, ORDER, Stored>::plan(batch, options, gradient);
    });
}

MemoryEstimate cpu_hessian_memory_plan(const PropagationSetup& batch, const PropagatorOptions& options, HessianKind kind) {
    return dispatch_kernel_types(options, [&]<typename T, int ORDER, typename Stored>() {
        return CpuEngine<T, ORDER, Stored>::hessian_plan(batch, options, kind);
    });
}

CpuPropagator::CpuPropagator(const PropagatorOptions& options) : EnginePropagator(options) {
    options_.validate();
}

std::unique_ptr<Engine> CpuPropagator::make_engine(const PropagationSetup& setup, const PropagatorOptions& options) {
    return dispatch_kernel_types(options, [&]<typename T, int ORDER, typename Stored>() -> std::unique_ptr<Engine> {
        return std::make_unique<CpuEngine<T, ORDER, Stored>>(setup, options);
    });
}

}  // namespace gprfwi
