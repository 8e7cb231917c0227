#include "gprfwi/wavelet_projection.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "gprfwi/error.hpp"
#include "gprfwi/fft.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/wavelet_estimation.hpp"

namespace gprfwi {

namespace {

/// Solves M x = b in place (b becomes x) for a symmetric positive-definite n x n M (row-major; overwritten by its
/// Cholesky factor).
void solve_positive_definite(std::vector<double>& m, std::vector<double>& b, int n) {
    auto a = [&](int i, int j) -> double& { return m[static_cast<std::size_t>(i * n + j)]; };
    for (int j = 0; j < n; ++j) {
        double d = a(j, j);
        for (int k = 0; k < j; ++k) d -= a(j, k) * a(j, k);
        if (!(d > 0))
            throw Error("wavelet projection: the traces' correlations are not positive definite (no data in the band?)");
        a(j, j) = std::sqrt(d);
        for (int i = j + 1; i < n; ++i) {
            double v = a(i, j);
            for (int k = 0; k < j; ++k) v -= a(i, k) * a(j, k);
            a(i, j) = v / a(j, j);
        }
    }
    for (int i = 0; i < n; ++i) {  // L y = b
        double v = b[static_cast<std::size_t>(i)];
        for (int k = 0; k < i; ++k) v -= a(i, k) * b[static_cast<std::size_t>(k)];
        b[static_cast<std::size_t>(i)] = v / a(i, i);
    }
    for (int i = n - 1; i >= 0; --i) {  // L^T x = y
        double v = b[static_cast<std::size_t>(i)];
        for (int k = i + 1; k < n; ++k) v -= a(k, i) * b[static_cast<std::size_t>(k)];
        b[static_cast<std::size_t>(i)] = v / a(i, i);
    }
}

}  // namespace

WaveletProjection::WaveletProjection(MisfitKind kind, std::vector<std::size_t> shots, const Traces& observed, int nt,
                                     double cutoff_hz, double dt, double water_level, int max_lag)
    : shots_(std::move(shots)), observed_(observed), nt_(nt), max_lag_(max_lag),
      water_level_(water_level) {
    if (kind != MisfitKind::l2 && kind != MisfitKind::relative)
        throw InvalidArgument(fmt::format("the {} misfit is not quadratic in the data: projecting the wavelet out needs "
                                          "misfit l2 or relative", to_string(kind)));
    if (shots_.size() != observed_.size())
        throw SizeMismatch(fmt::format("WaveletProjection: {} shots but {} observed gathers", shots_.size(), observed_.size()));
    if (!(water_level_ > 0)) throw InvalidArgument("WaveletProjection: the water level must be > 0");
    if (nt_ < 1) throw InvalidArgument("WaveletProjection: nt must be >= 1");
    if (max_lag_ < 0 || max_lag_ >= nt_)
        throw InvalidArgument(fmt::format("WaveletProjection: the filter's lags must be in [0, {}), got {}", nt_, max_lag_));
    for (const ShotTraces& t : observed_)
        if (t.nt() != nt_)
            throw SizeMismatch(fmt::format("WaveletProjection: an observed gather has {} samples, not {}", t.nt(), nt_));
    nfft_ = WaveletEstimator::fft_size(nt_);  // the bins of the sums fit() adds up over the ranks
    const std::size_t nf = static_cast<std::size_t>(nfft_ / 2 + 1);
    const ZeroPhaseLowpass lowpass(cutoff_hz, dt);
    power_.resize(nf);
    multiplicity_.assign(nf, 2.0);
    multiplicity_.front() = multiplicity_.back() = 1.0;
    for (std::size_t k = 0; k < nf; ++k)
        power_[k] = std::pow(lowpass.power_gain(2 * std::numbers::pi * static_cast<double>(k) / nfft_), 2);
    for (const ShotTraces& t : observed_) {  // each trace's energy in the band, as the relative misfit weighs it
        std::vector<double> energy(static_cast<std::size_t>(t.n_receivers()), 0.0), w = energy;
        double mean = 0;
        for (int r = 0; r < t.n_receivers(); ++r) {
            const auto o = real_spectrum(t.receiver(r), nt_, nfft_);
            for (std::size_t k = 0; k < nf; ++k) energy[r] += multiplicity_[k] * power_[k] * std::norm(o[k]) / nfft_;
            mean += energy[r] / t.n_receivers();
        }
        for (std::size_t r = 0; r < energy.size(); ++r) {
            const double oo = std::max(energy[r], kRelativeEnergyFloor * mean);
            w[r] = kind == MisfitKind::l2 ? 1.0 : oo > 0 ? 1 / oo : 0.0;
        }
        weight_.push_back(std::move(w));
    }
    filter_.assign(nf, 1.0);
    lag_filter_.assign(static_cast<std::size_t>(2 * max_lag_ + 1), 0.0);
    lag_filter_[static_cast<std::size_t>(max_lag_)] = 1.0;
}

std::size_t WaveletProjection::index(std::size_t shot) const {
    const auto it = std::find(shots_.begin(), shots_.end(), shot);
    if (it == shots_.end()) throw InvalidArgument(fmt::format("wavelet projection: no observed data for shot {}", shot));
    return static_cast<std::size_t>(it - shots_.begin());
}

void WaveletProjection::fit(const Traces& synthetic) {
    const std::size_t nf = filter_.size();
    WaveletEstimator sums(nt_);  // the weighted sums of conj(S) O and |S|^2 per bin, over every rank's traces
    std::exception_ptr failure;
    try {
        if (synthetic.size() != observed_.size())
            throw SizeMismatch(fmt::format("wavelet projection: {} synthetic gathers for {} observed", synthetic.size(),
                                           observed_.size()));
        for (std::size_t i = 0; i < synthetic.size(); ++i) {
            const ShotTraces& o = observed_[i];
            if (synthetic[i].n_receivers() != o.n_receivers() || synthetic[i].nt() != nt_)
                throw SizeMismatch(fmt::format("wavelet projection: synthetic shot {} is [{}][{}], observed [{}][{}]",
                                               shots_[i], synthetic[i].n_receivers(), synthetic[i].nt(),
                                               o.n_receivers(), nt_));
            for (int r = 0; r < o.n_receivers(); ++r)
                sums.add(synthetic[i].receiver(r), o.receiver(r), weight_[i][static_cast<std::size_t>(r)]);
        }
    } catch (...) {
        failure = std::current_exception();
    }
    parallel::agree(failure);  // every rank sums, or every rank throws
    parallel::sum(sums.sums().data(), sums.sums().size());
    // the band's weighted cross- and auto-correlations of S and O, c_X[l] = (1/nfft) sum over the full spectrum of
    // A^2 X e^{i w l}: the normal equations of the filter's lags are sum_l' c_D[l - l'] f_l' + lambda' f_l = c_N[l]
    std::vector<std::complex<double>> cross(nf), power(nf);
    const std::vector<double>& sum = sums.sums();
    for (std::size_t k = 0; k < nf; ++k) {
        cross[k] = power_[k] * std::complex<double>(sum[2 * k], sum[2 * k + 1]);
        power[k] = power_[k] * sum[2 * nf + k];
    }
    const std::vector<double> c_n = real_signal(cross, nfft_), c_d = real_signal(power, nfft_);
    // p: the traces' energy in the band, c_D[0], at the first fit and then held, so that the term of f does not
    // change with the model (the gradient has no term of its own)
    if (!(peak_ > 0)) peak_ = c_d[0] / nfft_;
    const int lags = 2 * max_lag_ + 1;
    auto at = [&](const std::vector<double>& c, int l) {
        return c[static_cast<std::size_t>((l % nfft_ + nfft_) % nfft_)] / nfft_;
    };
    std::vector<double> m(static_cast<std::size_t>(lags * lags)), f(static_cast<std::size_t>(lags));
    for (int i = 0; i < lags; ++i) {
        for (int j = 0; j < lags; ++j) m[static_cast<std::size_t>(i * lags + j)] = at(c_d, i - j);
        m[static_cast<std::size_t>(i * lags + i)] += water_level_ * peak_;
        f[static_cast<std::size_t>(i)] = at(c_n, i - max_lag_);
    }
    solve_positive_definite(m, f, lags);
    lag_filter_ = f;
    // F_k = sum_l f_l e^{-i w_k l}
    std::vector<double> taps(static_cast<std::size_t>(nfft_), 0.0);
    for (int l = -max_lag_; l <= max_lag_; ++l)
        taps[static_cast<std::size_t>((l + nfft_) % nfft_)] = f[static_cast<std::size_t>(l + max_lag_)];
    filter_ = real_spectrum(taps.data(), nfft_, nfft_);
    double before = 0, after = 0;
    for (std::size_t k = 0; k < nf; ++k) {
        before += multiplicity_[k] * power[k].real();
        after += multiplicity_[k] * power[k].real() * std::norm(filter_[k]);
    }
    gain_ = before > 0 ? std::sqrt(after / before) : 1.0;
}

void WaveletProjection::back_to_time(const std::vector<std::complex<double>>& y, double weight, double* out) const {
    const std::vector<double> x = real_signal(y, nfft_);
    for (int n = 0; n < nt_; ++n) out[n] = weight * x[static_cast<std::size_t>(n)] / nfft_;
}

double WaveletProjection::evaluate(std::size_t shot, const ShotTraces& synthetic, ShotTraces& adjoint) const {
    const std::size_t i = index(shot);
    const ShotTraces& o = observed_[i];
    if (o.n_receivers() != synthetic.n_receivers() || synthetic.nt() != nt_)
        throw SizeMismatch(fmt::format("observed shot {} is [{}][{}], synthetic [{}][{}]", shot, o.n_receivers(), nt_,
                                       synthetic.n_receivers(), synthetic.nt()));
    adjoint = ShotTraces(synthetic.n_receivers(), synthetic.nt());
    const std::size_t nf = filter_.size();
    double j = 0;
    for (int r = 0; r < o.n_receivers(); ++r) {
        const double w = weight_[i][static_cast<std::size_t>(r)];
        if (w == 0) continue;
        auto y = real_spectrum(synthetic.receiver(r), nt_, nfft_);
        const auto O = real_spectrum(o.receiver(r), nt_, nfft_);
        double jr = 0;
        for (std::size_t k = 0; k < nf; ++k) {
            const std::complex<double> residual = filter_[k] * y[k] - O[k];
            jr += multiplicity_[k] * power_[k] * std::norm(residual);
            y[k] = power_[k] * std::conj(filter_[k]) * residual;
        }
        j += 0.5 * w * jr / nfft_;
        back_to_time(y, w, adjoint.receiver(r));
    }
    return j;
}

void WaveletProjection::apply_hessian(std::size_t shot, const ShotTraces& synthetic, const ShotTraces& direction,
                                      ShotTraces& out) const {
    const std::size_t i = index(shot);
    if (direction.n_receivers() != synthetic.n_receivers() || direction.nt() != nt_)
        throw SizeMismatch(fmt::format("Hessian direction of shot {} is [{}][{}], synthetic [{}][{}]", shot,
                                       direction.n_receivers(), direction.nt(), synthetic.n_receivers(), synthetic.nt()));
    out = ShotTraces(direction.n_receivers(), direction.nt());
    for (int r = 0; r < direction.n_receivers(); ++r) {
        const double w = weight_[i][static_cast<std::size_t>(r)];
        if (w == 0) continue;
        auto y = real_spectrum(direction.receiver(r), nt_, nfft_);
        for (std::size_t k = 0; k < y.size(); ++k) y[k] *= power_[k] * std::norm(filter_[k]);
        back_to_time(y, w, out.receiver(r));
    }
}

double WaveletProjection::regularization() const {
    double sum = 0;
    for (double v : lag_filter_) sum += v * v;
    return 0.5 * water_level_ * peak_ * sum;
}

std::vector<double> WaveletProjection::filtered(const std::vector<double>& wavelet) const {
    auto y = real_spectrum(wavelet.data(), static_cast<int>(wavelet.size()), nfft_);
    for (std::size_t k = 0; k < y.size(); ++k) y[k] *= filter_[k];
    std::vector<double> out = real_signal(std::move(y), nfft_);
    out.resize(wavelet.size());
    for (double& v : out) v /= nfft_;
    return out;
}

}  // namespace gprfwi
