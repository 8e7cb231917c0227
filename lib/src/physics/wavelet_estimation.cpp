#include "gprfwi/wavelet_estimation.hpp"

#include <algorithm>
#include <cmath>

#include "gprfwi/error.hpp"
#include "gprfwi/fft.hpp"

namespace gprfwi {

int WaveletEstimator::fft_size(int nt) { return fft_length(2 * nt); }

WaveletEstimator::WaveletEstimator(int nt) : nt_(nt), nfft_(fft_size(nt)) {
    if (nt < 1) throw InvalidArgument("WaveletEstimator: nt must be >= 1");
    sums_.assign(static_cast<std::size_t>(3 * (nfft_ / 2 + 1)), 0.0);
}

std::vector<std::complex<double>> WaveletEstimator::spectrum(const double* x) const {
    return real_spectrum(x, nt_, nfft_);
}

void WaveletEstimator::add(const double* synthetic, const double* observed, double weight) {
    const auto s = spectrum(synthetic), o = spectrum(observed);
    const std::size_t nf = s.size();
    for (std::size_t f = 0; f < nf; ++f) {
        const std::complex<double> c = weight * std::conj(s[f]) * o[f];
        sums_[2 * f] += c.real();
        sums_[2 * f + 1] += c.imag();
        sums_[2 * nf + f] += weight * std::norm(s[f]);
    }
}

std::vector<double> WaveletEstimator::estimate(const std::vector<double>& current, double water_level) const {
    if (current.size() != static_cast<std::size_t>(nt_))
        throw SizeMismatch("WaveletEstimator: the current wavelet must have nt samples");
    const std::size_t nf = static_cast<std::size_t>(nfft_ / 2 + 1);
    const double peak = *std::max_element(sums_.begin() + static_cast<std::ptrdiff_t>(2 * nf), sums_.end());
    if (!(peak > 0)) throw Error("wavelet estimation: the synthetic traces are all zero");
    auto w = spectrum(current.data());
    for (std::size_t f = 0; f < nf; ++f) {
        const std::complex<double> num(sums_[2 * f], sums_[2 * f + 1]);
        w[f] *= num / (sums_[2 * nf + f] + water_level * peak);
    }
    std::vector<double> out = real_signal(std::move(w), nfft_);
    out.resize(static_cast<std::size_t>(nt_));
    for (double& v : out) v /= nfft_;  // FFTW's transforms are unnormalised
    // The estimate is reliable where the data have energy; at the lowest
    // frequencies, where the finite traces hold only the start of a static
    // field, it leaves a long, small tail, which would charge the line source
    // and build a static field over the whole trace. A source wavelet is
    // short: keep it up to where 99.9% of its energy is in, taper it to zero
    // over half that time again, and remove what is left of its mean there.
    double total = 0;
    for (double v : out) total += v * v;
    std::size_t end = out.size();
    double cum = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        cum += out[i] * out[i];
        if (cum >= 0.999 * total) {
            end = i + 1;
            break;
        }
    }
    const std::size_t taper = std::max<std::size_t>(end / 2, 4);
    for (std::size_t i = end; i < out.size(); ++i)
        out[i] *= i < end + taper ? 0.5 * (1 + std::cos(M_PI * static_cast<double>(i - end) / static_cast<double>(taper))) : 0.0;
    const std::size_t support = std::min(out.size(), end + taper);
    double mean = 0;
    for (std::size_t i = 0; i < support; ++i) mean += out[i];
    mean /= static_cast<double>(support);
    for (std::size_t i = 0; i < support; ++i) out[i] -= mean * 0.5 * (1 - std::cos(2 * M_PI * (static_cast<double>(i) + 0.5) / static_cast<double>(support))) * 2;
    return out;
}

}  // namespace gprfwi
