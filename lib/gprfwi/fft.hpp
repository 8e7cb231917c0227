#pragma once
// Real FFTs of traces through FFTW (Debian libfftw3), zero-padded to a power
// of two, for the wavelet estimation and the line-source correction.

#include <complex>
#include <vector>

namespace gprfwi {

/// The smallest power of two >= n.
int fft_length(int n);

/// The nfft / 2 + 1 bins of x[0 .. n) zero-padded to nfft (FFTW's sign: e^{-i w t}).
std::vector<std::complex<double>> real_spectrum(const double* x, int n, int nfft);

/// The nfft samples whose spectrum is X (nfft / 2 + 1 bins), unnormalised:
/// real_signal(real_spectrum(x)) is nfft times x.
std::vector<double> real_signal(std::vector<std::complex<double>> X, int nfft);

}  // namespace gprfwi
