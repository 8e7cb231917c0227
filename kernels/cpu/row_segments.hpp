#pragma once
// Helpers shared by the CPU kernels: the split of a row into CPML strips and
// the interior, so that the interior loop carries no CPML work and vectorises.

#include "gprfwi/kernels.hpp"

namespace gprfwi::kernels::cpu {

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
