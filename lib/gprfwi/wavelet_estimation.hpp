#pragma once
// Least-squares estimation of the source wavelet in the frequency domain.
// Traces are linear in the wavelet, S_k = G_k W0 for the current wavelet W0,
// so the wavelet that best explains observed traces O_k is, per frequency,
//   W = W0 sum_k conj(S_k) O_k / (sum_k |S_k|^2 + water * max_f sum_k |S_k|^2)
// (a water level keeps frequencies without energy from blowing up).

#include <complex>
#include <cstddef>
#include <vector>

namespace gprfwi {

class WaveletEstimator {
public:
    /// Traces and wavelets of nt samples (zero-padded to a power of two >= 2 nt).
    explicit WaveletEstimator(int nt);
    /// Adds one synthetic trace (computed with the current wavelet) and its
    /// observed trace, their products times `weight`.
    void add(const double* synthetic, const double* observed, double weight = 1.0);
    /// The accumulated sums as one flat array, so that MPI can add them up:
    /// per frequency bin f (nfft / 2 + 1 of them) Re and Im of sum conj(S) O
    /// at 2 f and 2 f + 1, then sum |S|^2 at 2 (nfft / 2 + 1) + f.
    std::vector<double>& sums() { return sums_; }
    /// The transforms' length for traces of nt samples (a power of two >= 2
    /// nt), which fixes the bins of sums().
    static int fft_size(int nt);
    /// The estimated wavelet, nt samples.
    std::vector<double> estimate(const std::vector<double>& current, double water_level) const;

private:
    std::vector<std::complex<double>> spectrum(const double* x) const;
    int nt_;
    int nfft_;
    std::vector<double> sums_;  // per frequency: Re, Im of sum conj(S) O, then sum |S|^2
};

}  // namespace gprfwi
