#pragma once
// Variable projection of the source wavelet (docs/inversion.md, "Source
// wavelet"): where the wavelet is unknown, the misfit of a model is the least
// one any wavelet near the stage's gives it,
//
//   Phi(m) = min_f  J(f * s(m)) + 1/2 lambda p |f|^2,
//
// s(m) the traces modelled with the stage's wavelet, f a short filter applied
// to them (lags -L..L; traces are linear in the wavelet, so f * s is what the
// wavelet filtered by f would give; L about one period of the wavelet, so
// that f can rescale, shift and reshape the wavelet but not take up the
// spectral detail of the ground's response), lambda the water level and p
// the traces' energy in the band (their weighted sum), so that lambda is the
// share of it at which f's Tikhonov term costs as much as the misfit. The
// least-squares f solves a small Toeplitz system, and at it dPhi/ds = dJ/ds
// at fixed f (the projection's derivative drops out), so the gradient is one
// adjoint run as for a known wavelet: the model no longer trades its mean
// velocity or attenuation against a wavelet estimated once from a poorer
// model.
//
// The misfit is measured on the traces zero-padded to nfft >= 2 nt, in the
// frequency domain (Parseval), so that the f found is its exact minimiser:
//   J = sum over traces of 1/2 w_t (1/nfft) sum_k m_k A_k^2 |F_k S_tk - O_tk|^2,
// F the filter's spectrum, w_t 1 (l2) or one over the trace's observed energy
// in the band (relative), m_k the count of bin k in the full spectrum (1 at 0
// and nfft/2, else 2), A_k the power gain of the stage's zero-phase low-pass
// (BandLimitedMisfit's filter, whose edge effects this misfit does not have).
// p is measured at the first fit and held after it, so that the term of f
// does not depend on the model (a resumed stage measures it anew at its
// model).

#include <complex>
#include <cstddef>
#include <vector>

#include "gprfwi/data_misfits.hpp"
#include "gprfwi/distributed.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

class WaveletProjection final : public ShotMisfit {
public:
    /// `observed` holds the traces of `shots` (this rank's, maybe none), in
    /// order, nt samples each (the survey's: the same on every rank), and is
    /// read, not copied: it must outlive the projection. kind l2 or relative
    /// (the others are not quadratic in the data: InvalidArgument);
    /// cutoff_hz <= 0: the full band; water_level: lambda (> 0); max_lag: L,
    /// samples (0: a scale alone).
    WaveletProjection(MisfitKind kind, std::vector<std::size_t> shots, const Traces& observed, int nt,
                      double cutoff_hz, double dt, double water_level, int max_lag);

    /// Fits f to the synthetic traces of this rank's shots (in order) and
    /// every other rank's: collective. Until then f = 1 at lag 0.
    void fit(const Traces& synthetic);

    /// J_s of the filtered traces and its adjoint source (dJ_s/ds at fixed F).
    double evaluate(std::size_t shot, const ShotTraces& synthetic, ShotTraces& adjoint) const override;
    /// The Gauss-Newton product at fixed F: d^2 J_s / ds^2 applied to `direction`.
    void apply_hessian(std::size_t shot, const ShotTraces& synthetic, const ShotTraces& direction,
                       ShotTraces& out) const override;

    /// 1/2 lambda p |f|^2 (Phi's term of the filter; add it once, not per shot).
    double regularization() const;
    /// The wavelet the fit stands for: `wavelet` (the stage's, nt samples)
    /// filtered by F, nt samples.
    std::vector<double> filtered(const std::vector<double>& wavelet) const;
    /// F's gain over the data's band: sqrt(sum D |F|^2 / sum D), D the
    /// synthetic traces' power per frequency at the fit (1 before it).
    double gain() const { return gain_; }

private:
    std::size_t index(std::size_t shot) const;
    /// d^2 J/ds^2 or dJ/ds: nt samples of (w / nfft) c2r(A^2 conj(F) Y).
    void back_to_time(const std::vector<std::complex<double>>& y, double weight, double* out) const;

    std::vector<std::size_t> shots_;
    const Traces& observed_;  // the caller's
    int nt_ = 0, nfft_ = 0, max_lag_ = 0;
    double water_level_ = 0;
    std::vector<double> power_;                 // A_k^2 per bin
    std::vector<double> multiplicity_;          // m_k
    std::vector<std::vector<double>> weight_;   // w_t per gather and receiver
    double peak_ = 0;                           // p (0 until the first fit)
    std::vector<double> lag_filter_;            // f_l, l = -L..L
    std::vector<std::complex<double>> filter_;  // F_k
    double gain_ = 1;
};

}  // namespace gprfwi
