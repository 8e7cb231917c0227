#include "gprfwi/fft.hpp"

#include <fftw3.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace gprfwi {

namespace {

/// FFTW's planner is not thread-safe (only the execution of a plan is):
/// plans are made under this lock, so that engines' threads and library
/// users may transform at once.
std::mutex& planner_mutex() {
    static std::mutex m;
    return m;
}

/// Making a plan costs some fifteen times its execution (FFTW_ESTIMATE, 2048
/// points), and the wavelet's projection transforms every trace several
/// times an evaluation: each length's two plans are made once, on arrays of
/// the alignment std::vector gives, and executed on the caller's arrays
/// (FFTW's new-array execution), which gives the same results as a plan of
/// their own. Arrays of another alignment get a plan of their own.
struct LengthPlans {
    fftw_plan forward = nullptr, inverse = nullptr;
    int real_alignment = 0, complex_alignment = 0;
};

class PlanCache {
public:
    ~PlanCache() {
        for (auto& [n, p] : plans_) {
            fftw_destroy_plan(p.forward);
            fftw_destroy_plan(p.inverse);
        }
    }
    /// The plans of length nfft (made under the planner's lock the first time).
    const LengthPlans& of(int nfft) {
        const std::lock_guard lock(planner_mutex());
        auto it = plans_.find(nfft);
        if (it != plans_.end()) return it->second;
        std::vector<double> x(static_cast<std::size_t>(nfft));
        std::vector<std::complex<double>> X(static_cast<std::size_t>(nfft / 2 + 1));
        auto* c = reinterpret_cast<fftw_complex*>(X.data());
        LengthPlans p;
        p.forward = fftw_plan_dft_r2c_1d(nfft, x.data(), c, FFTW_ESTIMATE);
        p.inverse = fftw_plan_dft_c2r_1d(nfft, c, x.data(), FFTW_ESTIMATE);
        p.real_alignment = fftw_alignment_of(x.data());
        p.complex_alignment = fftw_alignment_of(reinterpret_cast<double*>(c));
        return plans_.emplace(nfft, p).first->second;
    }

private:
    std::map<int, LengthPlans> plans_;  // (a node's address stays: references outlive later insertions)
};

PlanCache& plans() {
    static PlanCache cache;
    return cache;
}

/// Whether arrays at these addresses can run the cached plans.
bool fits(const LengthPlans& p, double* real, fftw_complex* complex) {
    return fftw_alignment_of(real) == p.real_alignment &&
           fftw_alignment_of(reinterpret_cast<double*>(complex)) == p.complex_alignment;
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
    auto* c = reinterpret_cast<fftw_complex*>(out.data());
    const LengthPlans& cached = plans().of(nfft);
    if (fits(cached, in.data(), c)) {
        fftw_execute_dft_r2c(cached.forward, in.data(), c);
        return out;
    }
    fftw_plan p;
    {
        const std::lock_guard lock(planner_mutex());
        p = fftw_plan_dft_r2c_1d(nfft, in.data(), c, FFTW_ESTIMATE);
    }
    fftw_execute(p);
    const std::lock_guard lock(planner_mutex());
    fftw_destroy_plan(p);
    return out;
}

std::vector<double> real_signal(std::vector<std::complex<double>> X, int nfft) {
    std::vector<double> out(static_cast<std::size_t>(nfft));
    // (the complex-to-real transform overwrites its input: X is a copy)
    auto* c = reinterpret_cast<fftw_complex*>(X.data());
    const LengthPlans& cached = plans().of(nfft);
    if (fits(cached, out.data(), c)) {
        fftw_execute_dft_c2r(cached.inverse, c, out.data());
        return out;
    }
    fftw_plan p;
    {
        const std::lock_guard lock(planner_mutex());
        p = fftw_plan_dft_c2r_1d(nfft, c, out.data(), FFTW_ESTIMATE);
    }
    fftw_execute(p);
    const std::lock_guard lock(planner_mutex());
    fftw_destroy_plan(p);
    return out;
}

}  // namespace gprfwi
