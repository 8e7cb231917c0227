#pragma once
// The CPU backend: OpenMP over shots and rows; the reference every other
// backend is tested against.

#include "gprfwi/propagator.hpp"

namespace gprfwi {

class CpuPropagator final : public Propagator {
public:
    explicit CpuPropagator(const PropagatorOptions& options);
    std::string name() const override { return "cpu"; }
    Traces forward(const Model& model, const Survey& survey) override;
    GradientResult gradient(const Model& model, const Survey& survey, const Misfit& misfit) override;
    using Propagator::gradient;
    MemoryEstimate estimate_memory(const Model& model, const Survey& survey, bool gradient) const override;
};

}  // namespace gprfwi
