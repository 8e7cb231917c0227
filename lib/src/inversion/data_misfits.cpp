#include "gprfwi/data_misfits.hpp"

#include <algorithm>
#include <complex>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi {

MisfitKind parse_misfit_kind(const std::string& name) { return kMisfitNames.parse(name); }
const char* to_string(MisfitKind k) { return kMisfitNames.name(k); }

namespace {

constexpr int kHilbertHalf = 64;

/// h[k] = 2/(pi k) for odd k, 0 for even k, k = -64..64, Hamming-windowed.
const std::vector<double>& hilbert_kernel() {
    static const std::vector<double> h = [] {
        std::vector<double> k(2 * kHilbertHalf + 1, 0.0);
        for (int i = -kHilbertHalf; i <= kHilbertHalf; ++i)
            if (i % 2 != 0)
                k[static_cast<std::size_t>(i + kHilbertHalf)] =
                    2.0 / (std::numbers::pi * i) * (0.54 + 0.46 * std::cos(std::numbers::pi * i / kHilbertHalf));
        return k;
    }();
    return h;
}

double envelope_misfit(const double* s, const double* o, std::size_t n, double* adjoint) {
    std::vector<double> hs(n), ho(n), es(n), w(n), hw(n);
    hilbert_fir(s, n, hs.data());
    hilbert_fir(o, n, ho.data());
    double peak = 0;
    for (std::size_t i = 0; i < n; ++i) peak = std::max(peak, std::abs(o[i]));
    const double e2 = std::pow(1e-6 * peak, 2) + 1e-300;
    double j = 0;
    for (std::size_t i = 0; i < n; ++i) {
        es[i] = std::sqrt(s[i] * s[i] + hs[i] * hs[i] + e2);
        const double eo = std::sqrt(o[i] * o[i] + ho[i] * ho[i] + e2);
        const double r = es[i] - eo;
        j += 0.5 * r * r;
        w[i] = r / es[i];  // dJ/d(env) / env
    }
    // dJ/ds = w s + H^T (w Hs) = w s - H (w Hs)
    for (std::size_t i = 0; i < n; ++i) hw[i] = w[i] * hs[i];
    hilbert_fir(hw.data(), n, adjoint);
    for (std::size_t i = 0; i < n; ++i) adjoint[i] = w[i] * s[i] - adjoint[i];
    return j;
}

}  // namespace

void hilbert_fir(const double* x, std::size_t n, double* y) {
    const auto& h = hilbert_kernel();
    const auto N = static_cast<std::ptrdiff_t>(n);
    for (std::ptrdiff_t i = 0; i < N; ++i) {
        double acc = 0;
        for (std::ptrdiff_t k = -kHilbertHalf; k <= kHilbertHalf; ++k) {
            const std::ptrdiff_t j = i - k;
            if (j >= 0 && j < N) acc += h[static_cast<std::size_t>(k + kHilbertHalf)] * x[j];
        }
        y[i] = acc;
    }
}

double trace_misfit(MisfitKind kind, const double* s, const double* o, std::size_t n, double* adjoint,
                    double energy_floor) {
    if (kind == MisfitKind::envelope) return envelope_misfit(s, o, n, adjoint);
    if (kind == MisfitKind::l2) {
        double j = 0;
        for (std::size_t i = 0; i < n; ++i) {
            adjoint[i] = s[i] - o[i];
            j += 0.5 * adjoint[i] * adjoint[i];
        }
        return j;
    }
    if (kind == MisfitKind::relative) {
        double oo = 0;
        for (std::size_t i = 0; i < n; ++i) oo += o[i] * o[i];
        oo = std::max(oo, energy_floor);
        std::fill(adjoint, adjoint + n, 0.0);
        if (oo == 0) return 0;  // nothing observed: no scale to measure the trace against
        double j = 0;
        for (std::size_t i = 0; i < n; ++i) {
            adjoint[i] = (s[i] - o[i]) / oo;
            j += 0.5 * (s[i] - o[i]) * (s[i] - o[i]);
        }
        return j / oo;
    }
    double ss = 0, oo = 0, so = 0;
    for (std::size_t i = 0; i < n; ++i) {
        ss += s[i] * s[i];
        oo += o[i] * o[i];
        so += s[i] * o[i];
    }
    std::fill(adjoint, adjoint + n, 0.0);
    if (oo == 0) return 0;  // nothing observed: the trace says nothing about shape
    const double ns = std::sqrt(ss), no = std::sqrt(oo);
    if (ns == 0) return 1.0;  // a flat synthetic trace: no direction to improve it in
    const double c = so / (ns * no);  // <s^, o^>
    // 1/2 |s^ - o^|^2 = 1 - <s^, o^>; gradient (I - s^ s^T)/|s| (s^ - o^) = -(o^ - c s^)/|s|
    for (std::size_t i = 0; i < n; ++i) adjoint[i] = -(o[i] / no - c * s[i] / ns) / ns;
    return 1.0 - c;
}

ZeroPhaseLowpass::ZeroPhaseLowpass(double cutoff_hz, double dt) {
    if (cutoff_hz <= 0 || cutoff_hz >= 0.5 / dt) return;
    identity_ = false;
    // RBJ low-pass biquads (bilinear transform, prewarped) with the Q of the
    // two pole pairs of a 4th-order Butterworth filter
    const double w0 = 2 * std::numbers::pi * cutoff_hz * dt;
    const double q[2] = {0.54119610014619698, 1.3065629648763766};
    for (int k = 0; k < 2; ++k) {
        const double alpha = std::sin(w0) / (2 * q[k]), c = std::cos(w0), a0 = 1 + alpha;
        section_[k] = {(1 - c) / 2 / a0, (1 - c) / a0, (1 - c) / 2 / a0, -2 * c / a0, (1 - alpha) / a0};
    }
}

void ZeroPhaseLowpass::run(double* x, std::size_t n, bool backward) const {
    for (const Biquad& f : section_) {
        double x1 = 0, x2 = 0, y1 = 0, y2 = 0;  // zero initial state
        for (std::size_t k = 0; k < n; ++k) {
            double& v = x[backward ? n - 1 - k : k];
            const double y = f.b0 * v + f.b1 * x1 + f.b2 * x2 - f.a1 * y1 - f.a2 * y2;
            x2 = x1;
            x1 = v;
            y2 = y1;
            y1 = y;
            v = y;
        }
    }
}

double ZeroPhaseLowpass::power_gain(double omega) const {
    if (identity_) return 1;
    const std::complex<double> z1 = std::polar(1.0, -omega), z2 = z1 * z1;  // z^-1, z^-2
    double gain = 1;
    for (const Biquad& f : section_) gain *= std::norm((f.b0 + f.b1 * z1 + f.b2 * z2) / (1.0 + f.a1 * z1 + f.a2 * z2));
    return gain * gain;  // forward, then backward
}

void ZeroPhaseLowpass::apply(double* x, std::size_t n) const {
    if (identity_) return;
    run(x, n, false);
    run(x, n, true);
}

BandLimitedMisfit::BandLimitedMisfit(MisfitKind kind, std::vector<std::size_t> shots, Traces observed, double cutoff_hz,
                                     double dt)
    : kind_(kind), shots_(std::move(shots)), observed_(std::move(observed)), filter_(cutoff_hz, dt) {
    if (shots_.size() != observed_.size())
        throw SizeMismatch(fmt::format("BandLimitedMisfit: {} shots but {} observed gathers", shots_.size(), observed_.size()));
    for (auto& t : observed_) {
        double energy = 0;
        for (int r = 0; r < t.n_receivers(); ++r) {
            double* v = t.receiver(r);
            filter_.apply(v, static_cast<std::size_t>(t.nt()));
            for (int i = 0; i < t.nt(); ++i) energy += v[i] * v[i];
        }
        energy_floor_.push_back(t.n_receivers() > 0 ? kRelativeEnergyFloor * energy / t.n_receivers() : 0.0);
    }
}

std::size_t BandLimitedMisfit::index(std::size_t shot) const {
    const auto it = std::find(shots_.begin(), shots_.end(), shot);
    if (it == shots_.end()) throw InvalidArgument(fmt::format("misfit: no observed data for shot {}", shot));
    return static_cast<std::size_t>(it - shots_.begin());
}

const ShotTraces& BandLimitedMisfit::observed(std::size_t shot, const ShotTraces& synthetic) const {
    const ShotTraces& o = observed_[index(shot)];
    if (o.n_receivers() != synthetic.n_receivers() || o.nt() != synthetic.nt())
        throw SizeMismatch(fmt::format("observed shot {} is [{}][{}], synthetic [{}][{}]", shot, o.n_receivers(), o.nt(),
                                       synthetic.n_receivers(), synthetic.nt()));
    return o;
}

void BandLimitedMisfit::apply_hessian(std::size_t shot, const ShotTraces& synthetic, const ShotTraces& direction,
                                      ShotTraces& out) const {
    const ShotTraces& o = observed(shot, synthetic);
    if (kind_ != MisfitKind::l2 && kind_ != MisfitKind::relative)
        throw InvalidArgument(fmt::format("the {} misfit has no Hessian yet: Hessian-vector products and Newton-type "
                                          "methods need misfit l2 or relative", to_string(kind_)));
    if (direction.n_receivers() != synthetic.n_receivers() || direction.nt() != synthetic.nt())
        throw SizeMismatch(fmt::format("Hessian direction of shot {} is [{}][{}], synthetic [{}][{}]", shot,
                                       direction.n_receivers(), direction.nt(), synthetic.n_receivers(), synthetic.nt()));
    out = direction;
    const double floor = energy_floor_[index(shot)];
    const std::size_t nt = static_cast<std::size_t>(synthetic.nt());
    for (int r = 0; r < out.n_receivers(); ++r) {
        double* t = out.receiver(r);
        double scale = 1;
        if (kind_ == MisfitKind::relative) {
            double oo = 0;
            for (std::size_t i = 0; i < nt; ++i) oo += o.receiver(r)[i] * o.receiver(r)[i];
            oo = std::max(oo, floor);
            scale = oo > 0 ? 1 / oo : 0;
        }
        filter_.apply(t, nt);
        for (std::size_t i = 0; i < nt; ++i) t[i] *= scale;
        filter_.apply(t, nt);  // F^T = F
    }
}

double BandLimitedMisfit::evaluate(std::size_t shot, const ShotTraces& synthetic, ShotTraces& adjoint) const {
    const ShotTraces& o = observed(shot, synthetic);
    const double floor = energy_floor_[index(shot)];
    adjoint = ShotTraces(synthetic.n_receivers(), synthetic.nt());
    const std::size_t nt = static_cast<std::size_t>(synthetic.nt());
    std::vector<double> s(nt);
    double j = 0;
    for (int r = 0; r < synthetic.n_receivers(); ++r) {
        std::copy_n(synthetic.receiver(r), nt, s.begin());
        filter_.apply(s.data(), nt);
        j += trace_misfit(kind_, s.data(), o.receiver(r), nt, adjoint.receiver(r), floor);
        filter_.apply(adjoint.receiver(r), nt);  // F^T = F
    }
    return j;
}

}  // namespace gprfwi
