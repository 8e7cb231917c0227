#pragma once
// Staggered-grid first-derivative stencils of order 2, 4, 6 and 8.
//
//   Dx+[F](i) = (1/dx) * sum_k c_k (F(i+k) - F(i-k+1))   integer -> half nodes
//   Dx-[F](i) = (1/dx) * sum_k c_k (F(i+k-1) - F(i-k))   half -> integer nodes
//
// With fields taken as zero outside the padded grid, Dx+^T = -Dx- exactly:
// the adjoint kernels rely on that identity.

#include "gprfwi/host_device.hpp"

namespace gprfwi {

template <int ORDER>
struct Stencil {
    static_assert(ORDER == 2 || ORDER == 4 || ORDER == 6 || ORDER == 8,
                  "stencil order must be 2, 4, 6 or 8");
    static constexpr int order = ORDER;
    static constexpr int halo = ORDER / 2;  // nodes read on each side

    /// Coefficient c_k, k = 1..halo.
    GPRFWI_HD static constexpr double c(int k) {
        constexpr double c2[1] = {1.0};
        constexpr double c4[2] = {9.0 / 8.0, -1.0 / 24.0};
        constexpr double c6[3] = {75.0 / 64.0, -25.0 / 384.0, 3.0 / 640.0};
        constexpr double c8[4] = {1225.0 / 1024.0, -245.0 / 3072.0, 49.0 / 5120.0,
                                  -5.0 / 7168.0};
        if constexpr (ORDER == 2) return c2[k - 1];
        else if constexpr (ORDER == 4) return c4[k - 1];
        else if constexpr (ORDER == 6) return c6[k - 1];
        else return c8[k - 1];
    }

    /// sum_k |c_k|: the stencil's factor in the CFL limit.
    static constexpr double abs_sum() {
        double s = 0.0;
        for (int k = 1; k <= halo; ++k) s += c(k) < 0 ? -c(k) : c(k);
        return s;
    }
};

/// Runtime view of the same tables, for code that holds the order as an int.
/// Throws InvalidArgument for an order other than 2, 4, 6, 8.
double stencil_coefficient(int order, int k);
double stencil_abs_sum(int order);
void check_stencil_order(int order);

}  // namespace gprfwi
