#pragma once
// The CPU backend: OpenMP over shots and rows; the reference every other
// backend is tested against.

#include "gprfwi/engine.hpp"

namespace gprfwi {

class CpuPropagator final : public EnginePropagator {
public:
    explicit CpuPropagator(const PropagatorOptions& options);
    std::string name() const override { return "cpu"; }

protected:
    std::unique_ptr<Engine> make_engine(const PropagationSetup& setup, const PropagatorOptions& options) override;
    BackendKind backend() const override { return BackendKind::cpu; }
};

}  // namespace gprfwi
