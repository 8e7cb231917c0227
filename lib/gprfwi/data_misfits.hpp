#pragma once
// The data misfits of the inversion, per shot and per trace, on band-limited
// data: each stage low-pass filters observed and synthetic traces with the
// same zero-phase filter, whose operator is symmetric, so the adjoint source
// stays exact (F^T = F).

#include <cstddef>
#include <string>
#include <vector>

#include "gprfwi/distributed.hpp"
#include "gprfwi/names.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

/// Per trace, s synthetic and o observed:
/// - l2:          1/2 |s - o|^2 (V/m)^2, the misfit of `gprfwi gradient`;
/// - normalized:  1/2 |s/|s| - o/|o||^2 = 1 - <s, o>/(|s| |o|): trace-
///                normalised L2, which is one minus the normalised zero-lag
///                cross-correlation; blind to each trace's amplitude (source
///                coupling, antenna gain); dimensionless. Traces whose
///                observed energy is zero are left out.
/// - relative:    1/2 |s - o|^2 / |o|^2: L2 with each trace weighted by its
///                observed energy, so every trace counts alike (the near
///                traces do not drown the far ones) while the amplitudes
///                between traces, which carry the attenuation, still count;
///                dimensionless. A trace's energy counts as at least
///                kRelativeEnergyFloor of its gather's mean (the one given
///                to trace_misfit): a trace that no arrival reached would
///                otherwise weigh without bound, its adjoint source beyond
///                single precision. Gathers with no energy are left out.
/// - envelope:    1/2 |env(s) - env(o)|^2, env(x) = sqrt(x^2 + (H x)^2 + e^2)
///                with H a 129-tap Hamming-windowed FIR Hilbert transformer
///                and e = 1e-6 of the observed peak (keeps the gradient finite);
///                blind to the phase of the data, robust to cycle skipping.
enum class MisfitKind { l2, normalized, relative, envelope };
inline constexpr NameTable<MisfitKind, 4> kMisfitNames{"misfit",
                                                       {{{MisfitKind::l2, "l2"},
                                                         {MisfitKind::normalized, "normalized"},
                                                         {MisfitKind::relative, "relative"},
                                                         {MisfitKind::envelope, "envelope"}}}};
MisfitKind parse_misfit_kind(const std::string& name);
const char* to_string(MisfitKind k);

/// y = H x: the FIR Hilbert transformer of the envelope misfit (antisymmetric
/// kernel, so H^T = -H), zero outside the trace.
void hilbert_fir(const double* x, std::size_t n, double* y);

/// The least energy of a trace in the relative misfit, as a share of the
/// mean energy of its gather's observed traces: far below any trace an
/// arrival reaches, so that only traces that hold nothing are raised to it.
inline constexpr double kRelativeEnergyFloor = 1e-6;

/// J and dJ/ds of one trace of n samples; `adjoint` receives dJ/ds.
/// `energy_floor` is the least observed energy the relative misfit divides
/// by (the other kinds ignore it).
double trace_misfit(MisfitKind kind, const double* s, const double* o, std::size_t n, double* adjoint,
                    double energy_floor = 0);

/// Zero-phase Butterworth low-pass: a 4th-order filter (two biquads) run
/// forward and then backward with zero initial state, so its gain is the
/// Butterworth gain squared (-6 dB at the cut-off) and it has no phase. As a
/// matrix it is symmetric.
class ZeroPhaseLowpass {
public:
    /// cutoff_hz <= 0 or at or above Nyquist: identity.
    ZeroPhaseLowpass(double cutoff_hz, double dt);
    void apply(double* x, std::size_t n) const;
    bool identity() const { return identity_; }
    /// The gain of apply() at omega radians per sample away from the trace's
    /// ends: |H(e^{i omega})|^2 of the two biquads (run twice).
    double power_gain(double omega) const;

private:
    struct Biquad {
        double b0, b1, b2, a1, a2;
    };
    void run(double* x, std::size_t n, bool backward) const;
    bool identity_ = true;
    Biquad section_[2]{};
};

/// A ShotMisfit of one kind on low-passed data: J_s = sum over receivers of
/// trace_misfit(F s, F o), adjoint F (dJ/d(F s)). Observed traces are given
/// for this rank's shots and filtered once here.
class BandLimitedMisfit final : public ShotMisfit {
public:
    BandLimitedMisfit(MisfitKind kind, std::vector<std::size_t> shots, Traces observed, double cutoff_hz, double dt);
    double evaluate(std::size_t shot, const ShotTraces& synthetic, ShotTraces& adjoint) const override;
    /// l2: F F direction; relative: the same over each trace's observed
    /// energy (at least the floor; 0 in a gather with none); the other kinds
    /// have none yet (InvalidArgument).
    void apply_hessian(std::size_t shot, const ShotTraces& synthetic, const ShotTraces& direction,
                       ShotTraces& out) const override;

private:
    std::size_t index(std::size_t shot) const;
    const ShotTraces& observed(std::size_t shot, const ShotTraces& synthetic) const;

    MisfitKind kind_;
    std::vector<std::size_t> shots_;
    Traces observed_;                   // filtered
    std::vector<double> energy_floor_;  // per gather: kRelativeEnergyFloor x its mean trace energy
    ZeroPhaseLowpass filter_;
};

}  // namespace gprfwi
