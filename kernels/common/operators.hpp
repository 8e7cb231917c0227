#pragma once
// The operators of the 2D TM step and its adjoint, written once for the CPU
// loops (kernels/cpu/) and the CUDA kernels (kernels/cuda/): the staggered
// differences, the CPML's memory update and its transpose, and the field
// updates. Equations: lib/gprfwi/kernels.hpp.
//
// Each function is the one expression both backends evaluate, operation for
// operation; with FMA contraction off on the device (CMake passes
// -fmad=false) and none on the host (no FMA in the x86-64 baseline), the two
// backends round alike and agree bit for bit. A change of order here changes
// the results of both, and the tests that fix them.
//
// The differences read their field through an accessor, at(j) = F(i + j) for
// the node i being updated: a row pointer on the CPU, a window of registers
// (lanes of a row or packs of rows) in the CUDA kernels. They return the sum
// without the 1/dx factor, which callers apply where the update needs it.

#include "gprfwi/stencil.hpp"

#if defined(__CUDACC__)
#define GPRFWI_OPERATOR __host__ __device__ __forceinline__
#define GPRFWI_UNROLL _Pragma("unroll")
#else
#define GPRFWI_OPERATOR inline __attribute__((always_inline))
#define GPRFWI_UNROLL  // the host compilers unroll loops of a few constant steps themselves
#endif

namespace gprfwi::kernels {

/// c_{k+1} of the stencil of order ORDER in the arithmetic type.
template <typename T, int ORDER>
GPRFWI_OPERATOR constexpr T stencil_c(int k) {
    return static_cast<T>(Stencil<ORDER>::c(k + 1));
}

/// Dx+ (integer to half nodes), unscaled: sum_k c_k (F(i+k) - F(i-k+1)),
/// k = 1..halo, written as sum over k = 0..halo-1 of c_{k+1} (at(k+1) - at(-k)).
template <typename T, int ORDER, typename At>
GPRFWI_OPERATOR T forward_difference(At at) {
    T d = 0;
    GPRFWI_UNROLL
    for (int k = 0; k < Stencil<ORDER>::halo; ++k) d += stencil_c<T, ORDER>(k) * (at(k + 1) - at(-k));
    return d;
}

/// Dx- (half to integer nodes), unscaled: c_{k+1} (at(k) - at(-k-1)) summed.
template <typename T, int ORDER, typename At>
GPRFWI_OPERATOR T backward_difference(At at) {
    T d = 0;
    GPRFWI_UNROLL
    for (int k = 0; k < Stencil<ORDER>::halo; ++k) d += stencil_c<T, ORDER>(k) * (at(k) - at(-k - 1));
    return d;
}

/// The CPML's stretched derivative: the memory psi <- b psi + a d, and
/// d / kappa + psi returned (inv_kappa = 1 / kappa).
template <typename T>
GPRFWI_OPERATOR T cpml_stretch(T d, T& psi, T b, T a, T inv_kappa) {
    psi = b * psi + a * d;
    return d * inv_kappa + psi;
}

/// The transpose of cpml_stretch, s being the adjoint of the stretched
/// derivative and mu the memory's adjoint: m = mu + s, mu <- b m, and
/// s / kappa + a m (the adjoint of d) returned.
template <typename T>
GPRFWI_OPERATOR T cpml_stretch_transpose(T s, T& mu, T b, T a, T inv_kappa) {
    const T m = mu + s;
    mu = b * m;
    return s * inv_kappa + a * m;
}

/// Hx^{n+1/2} = Hx^{n-1/2} - cq Dz+[Ey] (dz the stretched, scaled difference).
template <typename T>
GPRFWI_OPERATOR T hx_update(T hx, T cq, T dz) {
    return hx - cq * dz;
}

/// Hz^{n+1/2} = Hz^{n-1/2} + cq Dx+[Ey].
template <typename T>
GPRFWI_OPERATOR T hz_update(T hz, T cq, T dx) {
    return hz + cq * dx;
}

/// Ey^{n+1} = ca Ey^n + cb (Dx-[Hz] - Dz-[Hx]).
template <typename T>
GPRFWI_OPERATOR T ey_update(T ey, T ca, T cb, T dx, T dz) {
    return ca * ey + cb * (dx - dz);
}

/// The adjoint's pass 2 on one H field: lambda_h -= D+[q] / d (d unscaled).
template <typename T>
GPRFWI_OPERATOR T adjoint_h_update(T lambda_h, T d, T inv_spacing) {
    return lambda_h - d * inv_spacing;
}

/// The adjoint's pass 3: lambda_ey -= Dx-[p_x] + Dz-[p_z] (dx, dz unscaled).
template <typename T>
GPRFWI_OPERATOR T adjoint_ey_finish(T lambda_ey, T dx, T inv_dx, T dz, T inv_dz) {
    return lambda_ey - (dx * inv_dx + dz * inv_dz);
}

/// The Born step's scattering term added to dEy^{n+1}: dca Ey^n + r (Ey^{n+1}
/// - ca Ey^n), r = dcb / cb (kernels.hpp, BornScatter).
template <typename T>
GPRFWI_OPERATOR T born_scattering(T dca, T r, T ey_prev, T ey_next, T ca) {
    return dca * ey_prev + r * (ey_next - ca * ey_prev);
}

}  // namespace gprfwi::kernels
