// Adjoint of the forward FDTD step (the exact transpose, in reverse order) and
// the imaging condition, CPU backend.
//
// Equations: see lib/gprfwi/kernels.hpp. The material and CPML coefficients
// multiply *before* the transposed difference operator here, where the forward
// step applies them after; that is what makes this the transpose where
// materials vary and inside the CPML.
// Assumptions: as in fdtd_forward.cpp; the scratch arrays q, p use the same
// padded layout, with a zero halo.

#include "gprfwi/kernels.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/storage.hpp"
#include "common/operators.hpp"
#include "row_segments.hpp"

namespace gprfwi::kernels::cpu {

template <typename T, typename Stored>
void imaging_condition(const GridParams<T>& g, const T* lambda_ey, const ImagingView<T, Stored>& img, int shot_begin,
                       int shot_end) {
    const double w = img.weight;
#pragma omp parallel for schedule(static)
    for (int iz = 0; iz < g.nz; ++iz) {
        const std::size_t row = g.origin + static_cast<std::size_t>(iz) * g.stride;
        double* __restrict g_prev = img.g_ey_prev + row;
        double* __restrict g_next = img.g_ey_next + row;
        double* __restrict ill = img.illumination ? img.illumination + row : nullptr;
        // g_prev += w * lambda^{n+1} * Ey^n;  g_next += w * lambda^{n+1} * Ey^{n+1}, shot after shot
        for (int shot_i = shot_begin; shot_i < shot_end; ++shot_i) {
            const std::size_t shot = shot_i * g.shot_stride;
            const T* __restrict lam = lambda_ey + shot + row;
            if (img.ey_prev) {
                const Stored* __restrict prev = img.ey_prev + shot + row;
                const double sp = img.scale_prev ? img.scale_prev[shot_i] : 1.0;
                for (int ix = 0; ix < g.nx; ++ix) {
                    const double wl = w * static_cast<double>(lam[ix]);
                    g_prev[ix] += wl * (load_as<double>(prev[ix]) * sp);
                }
            }
            if (img.ey_next) {
                const Stored* __restrict next = img.ey_next + shot + row;
                const double sn = img.scale_next ? img.scale_next[shot_i] : 1.0;
                for (int ix = 0; ix < g.nx; ++ix) {
                    const double wl = w * static_cast<double>(lam[ix]);
                    const double e = load_as<double>(next[ix]) * sn;
                    g_next[ix] += wl * e;
                    if (ill) ill[ix] += w * e * e;
                }
            }
        }
    }
}

namespace {

/// Pass 1, and with `lin` (COUPLED) the second-order adjoint's pass 1, whose
/// step also transposes the Born scattering: t = cb*lambda + dcb*lambda1,
/// lambda <- ca*lambda + dca*lambda1.
template <typename T, bool COUPLED>
void e_prepare(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
               const TmFields<T>& adj, const AdjointScratch<T>& s, const BornCoupling<T>* lin) {
    const int stride = g.stride;
#pragma omp parallel for collapse(2) schedule(static)
    for (int shot_i = 0; shot_i < g.n_shots; ++shot_i) {
        for (int iz = 0; iz < g.nz; ++iz) {
            const std::size_t shot = shot_i * g.shot_stride;
            const std::size_t row = g.origin + static_cast<std::size_t>(iz) * stride;
            T* __restrict lam = adj.ey + shot + row;
            T* __restrict mu_x = adj.psi_hz_x + shot + row;
            T* __restrict mu_z = adj.psi_hx_z + shot + row;
            T* __restrict q_x = s.q_x + shot + row;
            T* __restrict q_z = s.q_z + shot + row;
            const T* __restrict ca = m.ca + row;
            const T* __restrict cb = m.cb + row;
            const T* __restrict dca = COUPLED ? lin->dca + row : nullptr;
            const T* __restrict dcb = COUPLED ? lin->dcb + row : nullptr;
            const T* __restrict lam1 = COUPLED ? lin->lambda_ey + shot + row : nullptr;
            const bool z_pml = in_strip(z, iz);
            for_row_segments(x, g.nx, z_pml, [&]<bool XP, bool ZP>(int ix0, int ix1) {
                for (int ix = ix0; ix < ix1; ++ix) {
                    T t = cb[ix] * lam[ix];
                    if constexpr (COUPLED) t += dcb[ix] * lam1[ix];
                    T qx = t, qz = -t;
                    if constexpr (XP) qx = cpml_stretch_transpose(t, mu_x[ix], x.b_int[ix], x.a_int[ix], x.inv_kappa_int[ix]);
                    if constexpr (ZP) qz = cpml_stretch_transpose(-t, mu_z[ix], z.b_int[iz], z.a_int[iz], z.inv_kappa_int[iz]);
                    q_x[ix] = qx;
                    q_z[ix] = qz;
                    if constexpr (COUPLED) lam[ix] = ca[ix] * lam[ix] + dca[ix] * lam1[ix];
                    else lam[ix] = ca[ix] * lam[ix];
                }
            });
        }
    }
}

}  // namespace

template <typename T>
void adjoint_e_prepare(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                       const CpmlAxis<T>& z, const TmFields<T>& adj, const AdjointScratch<T>& s) {
    e_prepare<T, false>(g, m, x, z, adj, s, nullptr);
}

template <typename T>
void second_order_e_prepare(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                            const CpmlAxis<T>& z, const TmFields<T>& adj, const AdjointScratch<T>& s,
                            const BornCoupling<T>& lin) {
    e_prepare<T, true>(g, m, x, z, adj, s, &lin);
}

template <typename T, int ORDER>
void adjoint_h(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
               const CpmlAxis<T>& z, const TmFields<T>& adj, const AdjointScratch<T>& s) {
    const int stride = g.stride;
#pragma omp parallel for collapse(2) schedule(static)
    for (int shot_i = 0; shot_i < g.n_shots; ++shot_i) {
        for (int iz = 0; iz < g.nz; ++iz) {
            const std::size_t shot = shot_i * g.shot_stride;
            const std::size_t row = g.origin + static_cast<std::size_t>(iz) * stride;
            T* __restrict lam_hx = adj.hx + shot + row;
            T* __restrict lam_hz = adj.hz + shot + row;
            T* __restrict mu_x = adj.psi_ey_x + shot + row;
            T* __restrict mu_z = adj.psi_ey_z + shot + row;
            const T* __restrict q_x = s.q_x + shot + row;
            const T* __restrict q_z = s.q_z + shot + row;
            T* __restrict p_x = s.p_x + shot + row;
            T* __restrict p_z = s.p_z + shot + row;
            const T* __restrict cq = m.cq + row;
            const bool z_pml = in_strip(z, iz);
            for_row_segments(x, g.nx, z_pml, [&]<bool XP, bool ZP>(int ix0, int ix1) {
                for (int ix = ix0; ix < ix1; ++ix) {
                    // lambda_hz -= Dx+[q_x];  lambda_hx -= Dz+[q_z]
                    const T dx = forward_difference<T, ORDER>([&](int j) { return q_x[ix + j]; });
                    const T dz = forward_difference<T, ORDER>([&](int j) { return q_z[ix + j * stride]; });
                    lam_hz[ix] = adjoint_h_update(lam_hz[ix], dx, g.inv_dx);
                    lam_hx[ix] = adjoint_h_update(lam_hx[ix], dz, g.inv_dz);
                    const T sx = cq[ix] * lam_hz[ix];
                    const T sz = -cq[ix] * lam_hx[ix];
                    T px = sx, pz = sz;
                    if constexpr (XP) px = cpml_stretch_transpose(sx, mu_x[ix], x.b_half[ix], x.a_half[ix], x.inv_kappa_half[ix]);
                    if constexpr (ZP) pz = cpml_stretch_transpose(sz, mu_z[ix], z.b_half[iz], z.a_half[iz], z.inv_kappa_half[iz]);
                    p_x[ix] = px;
                    p_z[ix] = pz;
                }
            });
        }
    }
}

template <typename T, int ORDER>
void adjoint_e_finish(const GridParams<T>& g, const TmFields<T>& adj, const AdjointScratch<T>& s) {
    const int stride = g.stride;
#pragma omp parallel for collapse(2) schedule(static)
    for (int shot_i = 0; shot_i < g.n_shots; ++shot_i) {
        for (int iz = 0; iz < g.nz; ++iz) {
            const std::size_t shot = shot_i * g.shot_stride;
            const std::size_t row = g.origin + static_cast<std::size_t>(iz) * stride;
            T* __restrict lam = adj.ey + shot + row;
            const T* __restrict p_x = s.p_x + shot + row;
            const T* __restrict p_z = s.p_z + shot + row;
            for (int ix = 0; ix < g.nx; ++ix) {
                // lambda_ey -= Dx-[p_x] + Dz-[p_z]
                const T dx = backward_difference<T, ORDER>([&](int j) { return p_x[ix + j]; });
                const T dz = backward_difference<T, ORDER>([&](int j) { return p_z[ix + j * stride]; });
                lam[ix] = adjoint_ey_finish(lam[ix], dx, g.inv_dx, dz, g.inv_dz);
            }
        }
    }
}

#define GPRFWI_INSTANTIATE(T, ORDER)                                                                 \
    template void adjoint_h<T, ORDER>(const GridParams<T>&, const MaterialView<T>&,                  \
                                      const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&,     \
                                      const AdjointScratch<T>&);                                     \
    template void adjoint_e_finish<T, ORDER>(const GridParams<T>&, const TmFields<T>&,               \
                                             const AdjointScratch<T>&);
GPRFWI_FOR_EACH_TYPE_AND_ORDER(GPRFWI_INSTANTIATE)
#undef GPRFWI_INSTANTIATE

template void adjoint_e_prepare<float>(const GridParams<float>&, const MaterialView<float>&, const CpmlAxis<float>&,
                                       const CpmlAxis<float>&, const TmFields<float>&, const AdjointScratch<float>&);
template void adjoint_e_prepare<double>(const GridParams<double>&, const MaterialView<double>&,
                                        const CpmlAxis<double>&, const CpmlAxis<double>&, const TmFields<double>&,
                                        const AdjointScratch<double>&);

template void second_order_e_prepare<float>(const GridParams<float>&, const MaterialView<float>&,
                                            const CpmlAxis<float>&, const CpmlAxis<float>&, const TmFields<float>&,
                                            const AdjointScratch<float>&, const BornCoupling<float>&);
template void second_order_e_prepare<double>(const GridParams<double>&, const MaterialView<double>&,
                                             const CpmlAxis<double>&, const CpmlAxis<double>&,
                                             const TmFields<double>&, const AdjointScratch<double>&,
                                             const BornCoupling<double>&);

#define GPRFWI_INSTANTIATE_IMAGING(T, S) \
    template void imaging_condition<T, S>(const GridParams<T>&, const T*, const ImagingView<T, S>&, int, int);
GPRFWI_INSTANTIATE_IMAGING(float, float)
GPRFWI_INSTANTIATE_IMAGING(float, Bf16)
GPRFWI_INSTANTIATE_IMAGING(double, double)
GPRFWI_INSTANTIATE_IMAGING(double, Bf16)
GPRFWI_INSTANTIATE_IMAGING(float, Fp8)
GPRFWI_INSTANTIATE_IMAGING(double, Fp8)
#undef GPRFWI_INSTANTIATE_IMAGING

}  // namespace gprfwi::kernels::cpu
