#pragma once
// The single place where run-time choices become template parameters:
// arithmetic type T (precision), stencil order, and snapshot storage type.

#include <string>

#include "gprfwi/error.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/storage.hpp"

namespace gprfwi {

/// Calls f.template operator()<T, ORDER, Stored>() for the options' precision,
/// stencil order and snapshot compression.
template <typename F>
decltype(auto) dispatch_kernel_types(const PropagatorOptions& o, F&& f) {
    auto by_storage = [&]<typename T, int ORDER>() -> decltype(auto) {
        if (o.snapshots.compression == SnapshotCompression::bf16) return f.template operator()<T, ORDER, Bf16>();
        if (o.snapshots.compression == SnapshotCompression::fp8) return f.template operator()<T, ORDER, Fp8>();
        return f.template operator()<T, ORDER, T>();
    };
    auto by_order = [&]<typename T>() -> decltype(auto) {
        switch (o.stencil_order) {
            case 2: return by_storage.template operator()<T, 2>();
            case 4: return by_storage.template operator()<T, 4>();
            case 6: return by_storage.template operator()<T, 6>();
            case 8: return by_storage.template operator()<T, 8>();
        }
        throw InvalidArgument("stencil order must be 2, 4, 6 or 8, got " + std::to_string(o.stencil_order));
    };
    if (o.precision == Precision::single) return by_order.template operator()<float>();
    return by_order.template operator()<double>();
}

}  // namespace gprfwi
