// The CPU propagator: the time loop over the kernels of kernels/cpu/.
//
// Forward, internal step m = 0 .. nt_internal-1, for all shots at once:
//   H update; E update; Ey += source weights * wavelet_internal[m];
//   trace_internal[m] = receiver weights . Ey^{m+1}; keep Ey^{m+1} if asked.
// Adjoint, m = nt_internal-1 .. 0 (the transpose of the forward, in reverse):
//   lambda_ey += receiver weights * adjoint_source_internal[m];
//   dJ/dwavelet_internal[m] = source weights . lambda_ey;
//   pass 1 (with imaging), pass 2, pass 3 (see kernels.hpp).

#include "gprfwi/cpu_propagator.hpp"

#include <cmath>
#include <fmt/format.h>

#include "gprfwi/error.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/material.hpp"
#include "gprfwi/setup.hpp"
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
    explicit FieldArrays(std::size_t n)
        : ey(n), hx(n), hz(n), psi_ey_x(n), psi_ey_z(n), psi_hz_x(n), psi_hx_z(n) {}
    k::TmFields<T> view() {
        return {ey.data(), hx.data(), hz.data(), psi_ey_x.data(), psi_ey_z.data(), psi_hz_x.data(),
                psi_hx_z.data()};
    }
};

/// What every run of one batch shares: the setup in the arithmetic type T.
template <typename T>
struct Batch {
    const PropagationSetup& setup;
    std::vector<T> ca, cb, cq;
    AxisArrays<T> x, z;
    k::GridParams<T> grid;
    int check_interval;

    Batch(const PropagationSetup& s, int check)
        : setup(s), ca(convert<T>(s.ca)), cb(convert<T>(s.cb)), cq(convert<T>(s.cq)), x(s.cpml_x),
          z(s.cpml_z), check_interval(check) {
        grid.nx = s.grid.nx;
        grid.nz = s.grid.nz;
        grid.stride = s.grid.stride;
        grid.shot_stride = s.grid.storage_size();
        grid.origin = s.grid.index(0, 0);
        grid.n_shots = static_cast<int>(s.shots.size());
        grid.inv_dx = static_cast<T>(1.0 / s.grid.model.dx);
        grid.inv_dz = static_cast<T>(1.0 / s.grid.model.dz);
    }
    k::MaterialView<T> materials() const { return {ca.data(), cb.data(), cq.data()}; }
    std::size_t batch_size() const { return grid.shot_stride * grid.n_shots; }

    /// Throws NumericalBlowup if any shot's `field` holds NaN or Inf.
    void check_finite(const std::vector<T>& field, int step, const char* what) const {
        for (int s = 0; s < grid.n_shots; ++s) {
            const T* f = field.data() + s * grid.shot_stride;
            bool bad = false;
#pragma omp parallel for reduction(|| : bad)
            for (std::size_t i = 0; i < grid.shot_stride; ++i) bad = bad || !std::isfinite(f[i]);
            if (bad)
                throw NumericalBlowup(fmt::format(
                    "NaN or Inf in {} of shot {} at internal step {} of {} (user sample {}, t = {:.6g} s); "
                    "dt_internal = {:.6g} s, CFL limit {:.6g} s", what, s, step, setup.time.nt_internal,
                    step / setup.time.ratio, (step + 1) * setup.time.dt_internal, setup.time.dt_internal,
                    setup.time.dt_max));
        }
    }
    bool check_now(int step) const { return check_interval > 0 && (step + 1) % check_interval == 0; }
};

/// Internal-rate traces [shot][receiver][nt_internal].
using InternalTraces = std::vector<std::vector<std::vector<double>>>;

InternalTraces make_internal(const PropagationSetup& s) {
    InternalTraces t(s.shots.size());
    for (std::size_t i = 0; i < s.shots.size(); ++i)
        t[i].assign(s.shots[i].receivers.size(), std::vector<double>(s.time.nt_internal, 0.0));
    return t;
}

/// Forward time loop; keeps Ey levels in `store` when given.
template <typename T, int ORDER, typename Stored>
InternalTraces run_forward(Batch<T>& b, SnapshotStore<Stored>* store) {
    const PropagationSetup& s = b.setup;
    FieldArrays<T> f(b.batch_size());
    const auto fields = f.view();
    const auto mat = b.materials();
    const auto x = b.x.view(), z = b.z.view();
    InternalTraces traces = make_internal(s);
    for (int m = 0; m < s.time.nt_internal; ++m) {
        // H^{m-1/2} -> H^{m+1/2};  Ey^m -> Ey^{m+1}
        k::cpu::update_h<T, ORDER>(b.grid, mat, x, z, fields);
        k::cpu::update_e<T, ORDER>(b.grid, mat, x, z, fields);
        for (std::size_t si = 0; si < s.shots.size(); ++si) {
            T* ey = f.ey.data() + si * b.grid.shot_stride;
            const ShotOperators& op = s.shots[si];
            // Ey -= cb * J: weights already hold -cb * w * amplitude / (dx dz)
            for (const PointWeight& pw : op.source)
                ey[pw.index] += static_cast<T>(pw.weight * op.wavelet_internal[m]);
            for (std::size_t r = 0; r < op.receivers.size(); ++r) {
                double acc = 0;
                for (const PointWeight& pw : op.receivers[r]) acc += pw.weight * static_cast<double>(ey[pw.index]);
                traces[si][r][m] = acc;
            }
        }
        if (store) {
            if (Stored* level = store->level(m + 1)) {
                const std::size_t n = b.batch_size();
#pragma omp parallel for schedule(static)
                for (std::size_t i = 0; i < n; ++i) level[i] = store_as<Stored>(f.ey[i]);
            }
        }
        if (b.check_now(m) || m + 1 == s.time.nt_internal) b.check_finite(f.ey, m, "Ey");
    }
    return traces;
}

Traces to_user(const PropagationSetup& s, const InternalTraces& internal, int nt) {
    Traces out;
    for (std::size_t si = 0; si < internal.size(); ++si) {
        out.emplace_back(static_cast<int>(internal[si].size()), nt);
        for (std::size_t r = 0; r < internal[si].size(); ++r)
            s.downsample.apply(internal[si][r].data(), out[si].receiver(static_cast<int>(r)));
    }
    return out;
}

/// Adjoint time loop driven by the user-rate adjoint source; fills the
/// gradient with respect to the padded ca and cb, and the wavelets.
template <typename T, int ORDER, typename Stored>
void run_adjoint(Batch<T>& b, SnapshotStore<Stored>& store, const Traces& adjoint_source,
                 std::vector<double>& grad_ca, std::vector<double>& grad_cb,
                 std::vector<std::vector<double>>& grad_wavelet_internal) {
    const PropagationSetup& s = b.setup;
    const std::size_t n = b.batch_size();
    FieldArrays<T> adj(n);
    std::vector<T> q_x(n), q_z(n), p_x(n), p_z(n);
    std::vector<double> g_prev(n, 0.0), g_next(n, 0.0);
    const auto fields = adj.view();
    const k::AdjointScratch<T> scratch{q_x.data(), q_z.data(), p_x.data(), p_z.data()};
    const auto mat = b.materials();
    const auto x = b.x.view(), z = b.z.view();

    // adjoint source at the internal rate: D^T r
    InternalTraces r_internal = make_internal(s);
    for (std::size_t si = 0; si < s.shots.size(); ++si)
        for (std::size_t r = 0; r < r_internal[si].size(); ++r)
            s.downsample.apply_transpose(adjoint_source[si].receiver(static_cast<int>(r)),
                                         r_internal[si][r].data());
    grad_wavelet_internal.assign(s.shots.size(), std::vector<double>(s.time.nt_internal, 0.0));

    for (int m = s.time.nt_internal - 1; m >= 0; --m) {
        for (std::size_t si = 0; si < s.shots.size(); ++si) {
            T* lam = adj.ey.data() + si * b.grid.shot_stride;
            const ShotOperators& op = s.shots[si];
            // transpose of the receiver sampling, then of the source term
            for (std::size_t r = 0; r < op.receivers.size(); ++r)
                for (const PointWeight& pw : op.receivers[r])
                    lam[pw.index] += static_cast<T>(pw.weight * r_internal[si][r][m]);
            double acc = 0;
            for (const PointWeight& pw : op.source) acc += pw.weight * static_cast<double>(lam[pw.index]);
            grad_wavelet_internal[si][m] = acc;
        }
        const Stored* prev = store.level(m);
        const Stored* next = store.level(m + 1);
        const k::ImagingView<T, Stored> img{prev, next, static_cast<double>(store.interval()),
                                            g_prev.data(), g_next.data()};
        k::cpu::adjoint_e_prepare<T, Stored>(b.grid, mat, x, z, fields, scratch,
                                             (prev || next) ? &img : nullptr);
        k::cpu::adjoint_h<T, ORDER>(b.grid, mat, x, z, fields, scratch);
        k::cpu::adjoint_e_finish<T, ORDER>(b.grid, fields, scratch);
        if (b.check_now(m) || m == 0) b.check_finite(adj.ey, m, "the adjoint field lambda_ey");
    }

    // dJ/dca = sum_shots g_prev;  dJ/dcb = (g_next - ca*g_prev)/cb
    const std::size_t cells = b.grid.shot_stride;
    grad_ca.assign(cells, 0.0);
    grad_cb.assign(cells, 0.0);
    for (int si = 0; si < b.grid.n_shots; ++si)
        for (std::size_t i = 0; i < cells; ++i) {
            grad_ca[i] += g_prev[si * cells + i];
            grad_cb[i] += g_next[si * cells + i];
        }
    for (std::size_t i = 0; i < cells; ++i)
        if (s.cb[i] != 0.0) grad_cb[i] = (grad_cb[i] - static_cast<double>(b.ca[i]) * grad_ca[i]) / static_cast<double>(b.cb[i]);
}

template <typename T, int ORDER, typename Stored>
GradientResult run_gradient(const PropagationSetup& s, const Model& model, const Survey& survey,
                            const Misfit& misfit, const PropagatorOptions& opt) {
    Batch<T> b(s, opt.blowup_check_interval);
    SnapshotStore<Stored> store(s.time.nt_internal, opt.snapshots.interval, b.batch_size());
    GradientResult out;
    out.synthetic = to_user(s, run_forward<T, ORDER, Stored>(b, &store), survey.nt);
    Traces adjoint_source = make_traces(survey);
    out.misfit = misfit.evaluate(out.synthetic, adjoint_source);
    check_traces_match(adjoint_source, survey, "adjoint source");

    std::vector<double> grad_ca, grad_cb;
    std::vector<std::vector<double>> grad_w_internal;
    run_adjoint<T, ORDER, Stored>(b, store, adjoint_source, grad_ca, grad_cb, grad_w_internal);

    // chain rule through ca(eps_r, sigma), cb(eps_r, sigma) at every padded node
    std::vector<double> g_eps(grad_ca.size(), 0.0), g_sig(grad_ca.size(), 0.0);
    for (int iz = 0; iz < s.grid.nz; ++iz)
        for (int ix = 0; ix < s.grid.nx; ++ix) {
            const int mz = s.model_row(iz), mx = s.model_col(ix);
            const auto d = lossy_coefficient_derivatives(model.eps_r(mz, mx), model.sigma(mz, mx),
                                                         s.time.dt_internal);
            const std::size_t i = s.grid.index(iz, ix);
            g_eps[i] = grad_ca[i] * d.dca_deps_r + grad_cb[i] * d.dcb_deps_r;
            g_sig[i] = grad_ca[i] * d.dca_dsigma + grad_cb[i] * d.dcb_dsigma;
        }
    out.grad_eps_r = fold_to_model(s, g_eps);
    out.grad_sigma = fold_to_model(s, g_sig);
    out.grad_wavelet.resize(s.shots.size());
    for (std::size_t si = 0; si < s.shots.size(); ++si) {
        out.grad_wavelet[si].assign(survey.nt, 0.0);
        s.upsample.apply_transpose(grad_w_internal[si].data(), out.grad_wavelet[si].data());
    }
    return out;
}

/// Calls f.template operator()<T, ORDER>() for the run-time precision and order.
template <typename F>
decltype(auto) dispatch(Precision p, int order, F&& f) {
    auto by_order = [&]<typename T>() -> decltype(auto) {
        switch (order) {
            case 2: return f.template operator()<T, 2>();
            case 4: return f.template operator()<T, 4>();
            case 6: return f.template operator()<T, 6>();
            case 8: return f.template operator()<T, 8>();
        }
        throw InvalidArgument(fmt::format("stencil order must be 2, 4, 6 or 8, got {}", order));
    };
    if (p == Precision::single) return by_order.template operator()<float>();
    return by_order.template operator()<double>();
}

}  // namespace

CpuPropagator::CpuPropagator(const PropagatorOptions& options) : Propagator(options) {
    options_.validate();
}

Traces CpuPropagator::forward(const Model& model, const Survey& survey) {
    const PropagationSetup s = PropagationSetup::build(model, survey, options_);
    return dispatch(options_.precision, options_.stencil_order, [&]<typename T, int ORDER>() {
        Batch<T> b(s, options_.blowup_check_interval);
        return to_user(s, run_forward<T, ORDER, T>(b, nullptr), survey.nt);
    });
}

GradientResult CpuPropagator::gradient(const Model& model, const Survey& survey, const Misfit& misfit) {
    const PropagationSetup s = PropagationSetup::build(model, survey, options_);
    return dispatch(options_.precision, options_.stencil_order, [&]<typename T, int ORDER>() {
        if (options_.snapshots.compression == SnapshotCompression::bf16)
            return run_gradient<T, ORDER, Bf16>(s, model, survey, misfit, options_);
        return run_gradient<T, ORDER, T>(s, model, survey, misfit, options_);
    });
}

MemoryEstimate CpuPropagator::estimate_memory(const Model& model, const Survey& survey, bool gradient) const {
    const PaddedGrid g(model.grid, options_.cpml.widths);
    const TimeStepping t = plan_time_stepping(model, survey, options_.stencil_order, options_.allow_substeps);
    const std::size_t word = options_.precision == Precision::single ? 4 : 8;
    const std::size_t shots = survey.shots.size();
    const std::size_t level = g.storage_size() * shots;
    MemoryEstimate e;
    // coefficients (3) + forward fields (7); gradient: adjoint fields (7) + scratch (4) + 2 double accumulators
    e.fields_bytes = 3 * g.storage_size() * word + 7 * level * word;
    if (gradient) e.fields_bytes += 11 * level * word + 2 * level * sizeof(double);
    if (gradient) {
        const std::size_t stored = options_.snapshots.compression == SnapshotCompression::bf16 ? 2 : word;
        e.snapshot_bytes = static_cast<std::size_t>(t.nt_internal / options_.snapshots.interval) * level * stored;
    }
    std::size_t receivers = 0;
    for (const Shot& shot : survey.shots) receivers += shot.receivers.size();
    e.traces_bytes = receivers * static_cast<std::size_t>(t.nt_internal) * sizeof(double) * (gradient ? 2 : 1);
    return e;
}

}  // namespace gprfwi
