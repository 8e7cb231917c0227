#include "gprfwi/fft.hpp"

#include <fftw3.h>

#include <algorithm>
#include <mutex>

namespace gprfwi {

namespace {
/// FFTW's planner is not thread-safe (only fftw_execute is): plans are made
/// and destroyed under this lock, so that engines' threads and library users
/// may transform at once.
std::mutex& planner_mutex() {
    static std::mutex m;
    return m;
}
}  // namespace

int fft_length(int n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}

std::vector<std::complex<double>> real_spectrum(const double* x, int n, int nfft) {
    std::vector<double> in(static_cast<std::size_t>(nfft), 0.0);
    std::copy_n(x, std::min(n, nfft), in.begin());
    std::vector<std::complex<double>> out(static_cast<std::size_t>(nfft / 2 + 1));
    fftw_plan p;
    {
        const std::lock_guard lock(planner_mutex());
        p = fftw_plan_dft_r2c_1d(nfft, in.data(), reinterpret_cast<fftw_complex*>(out.data()), FFTW_ESTIMATE);
    }
    fftw_execute(p);
    const std::lock_guard lock(planner_mutex());
    fftw_destroy_plan(p);
    return out;
}

std::vector<double> real_signal(std::vector<std::complex<double>> X, int nfft) {
    std::vector<double> out(static_cast<std::size_t>(nfft));
    // (the complex-to-real transform overwrites its input: X is a copy)
    fftw_plan p;
    {
        const std::lock_guard lock(planner_mutex());
        p = fftw_plan_dft_c2r_1d(nfft, reinterpret_cast<fftw_complex*>(X.data()), out.data(), FFTW_ESTIMATE);
    }
    fftw_execute(p);
    const std::lock_guard lock(planner_mutex());
    fftw_destroy_plan(p);
    return out;
}

}  // namespace gprfwi
