#pragma once
// Data misfits. A misfit returns its value and fills the adjoint source
// dJ/d(synthetic) that drives the adjoint propagation.

#include "gprfwi/traces.hpp"

namespace gprfwi {

class Misfit {
public:
    virtual ~Misfit() = default;
    /// J(synthetic); writes dJ/d(synthetic) into adjoint_source (same shape).
    virtual double evaluate(const Traces& synthetic, Traces& adjoint_source) const = 0;
    /// The misfit's Hessian with respect to the synthetic traces, at
    /// `synthetic`, applied to `direction`, into `out` (the same shapes): what
    /// Hessian-vector products propagate. Misfits without one throw
    /// InvalidArgument.
    virtual void apply_hessian(const Traces& synthetic, const Traces& direction, Traces& out) const;
};

/// J = 1/2 * sum over shots, receivers, samples of (synthetic - observed)^2.
class L2Misfit final : public Misfit {
public:
    explicit L2Misfit(const Traces& observed) : observed_(observed) {}
    double evaluate(const Traces& synthetic, Traces& adjoint_source) const override;
    /// The identity.
    void apply_hessian(const Traces& synthetic, const Traces& direction, Traces& out) const override;

private:
    const Traces& observed_;
};

/// J = sum <synthetic, weights>: a linear functional, whose gradient with
/// respect to the wavelets is F^T weights (the dot-product test uses it).
class LinearFunctional final : public Misfit {
public:
    explicit LinearFunctional(const Traces& weights) : weights_(weights) {}
    double evaluate(const Traces& synthetic, Traces& adjoint_source) const override;
    /// Zero.
    void apply_hessian(const Traces& synthetic, const Traces& direction, Traces& out) const override;

private:
    const Traces& weights_;
};

}  // namespace gprfwi
