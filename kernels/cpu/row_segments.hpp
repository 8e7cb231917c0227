#pragma once
// Helpers shared by the CPU kernels: the stencil table in the arithmetic
// type, and the split of a row into CPML strips and the interior, so that the
// interior loop carries no CPML work and vectorises.

#include "gprfwi/kernels.hpp"
#include "gprfwi/stencil.hpp"

namespace gprfwi::kernels::cpu {

/// c_{k+1} in the arithmetic type; a constexpr object, so that after the
/// stencil loop is unrolled its values are constants in the kernel.
template <typename T, int ORDER>
struct StencilTable {
    T v[Stencil<ORDER>::halo];
    constexpr StencilTable() : v{} {
        for (int k = 0; k < Stencil<ORDER>::halo; ++k) v[k] = static_cast<T>(Stencil<ORDER>::c(k + 1));
    }
    constexpr T operator[](int k) const { return v[k]; }
};

template <typename T>
inline bool in_strip(const CpmlAxis<T>& a, int i) {
    return i < a.strip_low_end || i >= a.strip_high_begin;
}

/// Calls body.template operator()<XP, ZP>(ix0, ix1) for the low x strip, the
/// interior and the high x strip of a row; XP says whether the segment is in
/// an x strip, ZP whether the row is in a z strip.
template <typename T, typename Body>
inline void for_row_segments(const CpmlAxis<T>& x, int nx, bool z_pml, Body&& body) {
    const int lo = x.strip_low_end < nx ? x.strip_low_end : nx;
    const int hi = x.strip_high_begin > lo ? x.strip_high_begin : lo;
    if (z_pml) {
        body.template operator()<true, true>(0, lo);
        body.template operator()<false, true>(lo, hi);
        body.template operator()<true, true>(hi, nx);
    } else {
        body.template operator()<true, false>(0, lo);
        body.template operator()<false, false>(lo, hi);
        body.template operator()<true, false>(hi, nx);
    }
}

#define GPRFWI_FOR_EACH_TYPE_AND_ORDER(X) \
    X(float, 2) X(float, 4) X(float, 6) X(float, 8) X(double, 2) X(double, 4) X(double, 6) X(double, 8)

}  // namespace gprfwi::kernels::cpu
