// Forward FDTD update of the 2D TM fields (Ey, Hx, Hz) with CPML, CPU backend.
//
// Equations: see lib/gprfwi/kernels.hpp and PHYSICS.md.
// Assumptions:
//  - arrays use the PaddedGrid layout; the halo of kMaxHalo nodes is zero and
//    never written, so every stencil read is in bounds and fields vanish
//    outside the padded grid;
//  - CPML memory variables are touched only in the strips of the CPML
//    profiles (elsewhere a = 0, 1/kappa = 1 and psi stays zero);
//  - shots of a batch share the materials and differ only in their fields.
// Parallel over (shot, row) with OpenMP; inner loops over x vectorise.

#include <omp.h>

#include "gprfwi/kernels.hpp"
#include "gprfwi/stencil.hpp"
#include "common/operators.hpp"
#include "row_segments.hpp"

namespace gprfwi::kernels::cpu {

template <typename T, int ORDER>
void update_h(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
              const CpmlAxis<T>& z, const TmFields<T>& f) {
    const int stride = g.stride;
#pragma omp parallel for collapse(2) schedule(static)
    for (int s = 0; s < g.n_shots; ++s) {
        for (int iz = 0; iz < g.nz; ++iz) {
            const std::size_t shot = s * g.shot_stride;
            const std::size_t row = g.origin + static_cast<std::size_t>(iz) * stride;
            const T* __restrict ey = f.ey + shot + row;
            T* __restrict hx = f.hx + shot + row;
            T* __restrict hz = f.hz + shot + row;
            T* __restrict psi_x = f.psi_ey_x + shot + row;
            T* __restrict psi_z = f.psi_ey_z + shot + row;
            const T* __restrict cq = m.cq + row;
            const bool z_pml = in_strip(z, iz);
            for_row_segments(x, g.nx, z_pml, [&]<bool XP, bool ZP>(int ix0, int ix1) {
                for (int ix = ix0; ix < ix1; ++ix) {
                    // Dx+[Ey], Dz+[Ey] onto the Hz and Hx nodes
                    T dx = forward_difference<T, ORDER>([&](int j) { return ey[ix + j]; });
                    T dz = forward_difference<T, ORDER>([&](int j) { return ey[ix + j * stride]; });
                    dx *= g.inv_dx;
                    dz *= g.inv_dz;
                    if constexpr (XP) dx = cpml_stretch(dx, psi_x[ix], x.b_half[ix], x.a_half[ix], x.inv_kappa_half[ix]);
                    if constexpr (ZP) dz = cpml_stretch(dz, psi_z[ix], z.b_half[iz], z.a_half[iz], z.inv_kappa_half[iz]);
                    hx[ix] = hx_update(hx[ix], cq[ix], dz);
                    hz[ix] = hz_update(hz[ix], cq[ix], dx);
                }
            });
        }
    }
}

template <typename T, int ORDER>
void update_e(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
              const CpmlAxis<T>& z, const TmFields<T>& f) {
    const int stride = g.stride;
#pragma omp parallel for collapse(2) schedule(static)
    for (int s = 0; s < g.n_shots; ++s) {
        for (int iz = 0; iz < g.nz; ++iz) {
            const std::size_t shot = s * g.shot_stride;
            const std::size_t row = g.origin + static_cast<std::size_t>(iz) * stride;
            T* __restrict ey = f.ey + shot + row;
            const T* __restrict hx = f.hx + shot + row;
            const T* __restrict hz = f.hz + shot + row;
            T* __restrict psi_x = f.psi_hz_x + shot + row;
            T* __restrict psi_z = f.psi_hx_z + shot + row;
            const T* __restrict ca = m.ca + row;
            const T* __restrict cb = m.cb + row;
            const bool z_pml = in_strip(z, iz);
            for_row_segments(x, g.nx, z_pml, [&]<bool XP, bool ZP>(int ix0, int ix1) {
                for (int ix = ix0; ix < ix1; ++ix) {
                    // Dx-[Hz], Dz-[Hx] onto the Ey nodes
                    T dx = backward_difference<T, ORDER>([&](int j) { return hz[ix + j]; });
                    T dz = backward_difference<T, ORDER>([&](int j) { return hx[ix + j * stride]; });
                    dx *= g.inv_dx;
                    dz *= g.inv_dz;
                    if constexpr (XP) dx = cpml_stretch(dx, psi_x[ix], x.b_int[ix], x.a_int[ix], x.inv_kappa_int[ix]);
                    if constexpr (ZP) dz = cpml_stretch(dz, psi_z[ix], z.b_int[iz], z.a_int[iz], z.inv_kappa_int[iz]);
                    ey[ix] = ey_update(ey[ix], ca[ix], cb[ix], dx, dz);
                }
            });
        }
    }
}

template <typename T>
void born_scatter(const GridParams<T>& g, const BornScatter<T>& b) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int s = 0; s < g.n_shots; ++s) {
        for (int iz = 0; iz < g.nz; ++iz) {
            const std::size_t shot = s * g.shot_stride;
            const std::size_t row = g.origin + static_cast<std::size_t>(iz) * g.stride;
            const T* __restrict ca = b.ca + row;
            const T* __restrict dca = b.dca + row;
            const T* __restrict r = b.dcb_over_cb + row;
            const T* __restrict prev = b.ey_prev + shot + row;
            const T* __restrict next = b.ey_next + shot + row;
            T* __restrict d = b.d_ey + shot + row;
            for (int ix = 0; ix < g.nx; ++ix) d[ix] += born_scattering(dca[ix], r[ix], prev[ix], next[ix], ca[ix]);
        }
    }
}

template void born_scatter<float>(const GridParams<float>&, const BornScatter<float>&);
template void born_scatter<double>(const GridParams<double>&, const BornScatter<double>&);

#define GPRFWI_INSTANTIATE(T, ORDER)                                                              \
    template void update_h<T, ORDER>(const GridParams<T>&, const MaterialView<T>&,                \
                                     const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&); \
    template void update_e<T, ORDER>(const GridParams<T>&, const MaterialView<T>&,                \
                                     const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&);
GPRFWI_FOR_EACH_TYPE_AND_ORDER(GPRFWI_INSTANTIATE)
#undef GPRFWI_INSTANTIATE

}  // namespace gprfwi::kernels::cpu
