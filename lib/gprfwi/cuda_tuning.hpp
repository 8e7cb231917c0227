#pragma once
// Knobs of the CUDA backend (PropagatorOptions::cuda; the run file's
// `propagator.cuda`), for measurements and tests. The defaults are what the
// measurements chose (docs/gpu.md); results do not depend on them.

namespace gprfwi {

struct CudaTuning {
    static constexpr int kPairsWherePay = -2, kPairsAnyBox = -1;
    /// Rows of the forward's marching segments without step pairs; 0: the
    /// count that fills the GPU's last wave of blocks most (12 to 16).
    int step_rows = 0;
    /// Rows of the adjoint's marching segments; 0: the default (14).
    int adjoint_rows = 0;
    /// The forward's step pairs: kPairsWherePay (where they pay: large
    /// grids, stencils 2 and 4; rows chosen per grid), kPairsAnyBox (rows
    /// chosen per grid, wherever there is a pair box), 0 (none), or N rows
    /// wherever there is a pair box.
    int pair_rows = kPairsWherePay;
    /// Keep the model's coefficients in an L2 persisting window where they fit.
    bool l2_persist = true;
    /// Launch the time steps' kernels as programmatic dependent launches, so
    /// that each may start while the one before it finishes, where the GPU
    /// has them (compute capability 9.0 and later; an engine on an older GPU
    /// turns it off).
    bool dependent_launch = true;
    /// Fill every device array with bytes 0xFF (NaN in every floating-point
    /// type) when it is allocated and at each call's start, so that anything
    /// read before the call wrote it shows in the results (the GPU tests).
    bool poison_device_memory = false;
};

}  // namespace gprfwi
