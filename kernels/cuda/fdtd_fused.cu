// The forward step as one fused kernel: H^{n+1/2} and Ey^{n+1} for a tile of
// 32 x 16 nodes per block, with the tile's Ey^n (and halo) loaded once into
// shared memory and the H values the E update needs (the tile plus a halo)
// computed there; each block writes only its own nodes.
//
// Equations: lib/gprfwi/kernels.hpp (per node exactly the operations of the
// CPU kernels, in the same order, so results are bitwise equal with FMA
// contraction off). Assumptions:
//  - neighbouring blocks read old Ey, H and the H-node CPML memories in their
//    halos, so those are double-buffered: `in` holds step n, `out` receives
//    n+1; the E-node CPML memories are only touched by their owner and live
//    in `in` (out.psi_hz_x/psi_hx_z must equal in's);
//  - nodes outside the padded grid hold zero fields (as the zero halo does).
// Traffic per cell-step (float): Ey, Hx, Hz, two H-node CPML memories in the
// strips, read once and written once (24 B + strips), coefficients per shot,
// plus halo reads served mostly by L2.

#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/storage.hpp"

namespace gprfwi::kernels::cuda {

namespace {

constexpr int kTileX = 32, kTileZ = 16, kThreadsY = 8;

template <typename T>
__device__ __forceinline__ bool in_strip(const CpmlAxis<T>& a, int i, int n) {
    const int lo = a.strip_low_end < n ? a.strip_low_end : n;
    const int hi = a.strip_high_begin > lo ? a.strip_high_begin : lo;
    return i < lo || i >= hi;
}

template <typename T, int ORDER, typename Stored>
__global__ void __launch_bounds__(kTileX* kThreadsY)
    fused_step_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, TmFields<T> in,
                      TmFields<T> out, Stored* keep) {
    constexpr int H = ORDER / 2;
    constexpr int EX = kTileX + 4 * H - 2, EZ = kTileZ + 4 * H - 2;  // Ey^n with halo
    constexpr int HZX = kTileX + 2 * H - 1;                          // Hz: x halo
    constexpr int HXZ = kTileZ + 2 * H - 1;                          // Hx: z halo
    __shared__ T ey_s[EZ][EX];
    __shared__ T hz_s[kTileZ][HZX];
    __shared__ T hx_s[HXZ][kTileX];

    const int x0 = blockIdx.x * kTileX, z0 = blockIdx.y * kTileZ;
    const int tid = threadIdx.y * kTileX + threadIdx.x, nthreads = kTileX * kThreadsY;
    const std::size_t shot = blockIdx.z * g.shot_stride;
    const int stride = g.stride;
    auto at = [&](int iz, int ix) { return g.origin + static_cast<std::size_t>(iz) * stride + ix; };
    auto inside = [&](int iz, int ix) { return iz >= 0 && iz < g.nz && ix >= 0 && ix < g.nx; };
    auto c = [](int k) { return static_cast<T>(Stencil<ORDER>::c(k + 1)); };

    // Ey^n on the tile and its halo (zero outside the padded grid)
    for (int e = tid; e < EX * EZ; e += nthreads) {
        const int r = e / EX, col = e % EX;
        const int iz = z0 - (2 * H - 1) + r, ix = x0 - (2 * H - 1) + col;
        ey_s[r][col] = inside(iz, ix) ? in.ey[shot + at(iz, ix)] : T(0);
    }
    __syncthreads();

    // Hz^{n+1/2} = Hz + cq * (Dx+[Ey]/kappa + psi) on the tile rows, x halo included
    for (int e = tid; e < kTileZ * HZX; e += nthreads) {
        const int r = e / HZX, col = e % HZX;
        const int iz = z0 + r, jx = x0 - H + col;
        T v = 0;
        if (inside(iz, jx)) {
            const std::size_t i = at(iz, jx), o = shot + i;
            T d = 0;
#pragma unroll
            for (int k = 0; k < H; ++k) d += c(k) * (ey_s[r + 2 * H - 1][col + H + k] - ey_s[r + 2 * H - 1][col + H - 1 - k]);
            d *= g.inv_dx;
            if (in_strip(x, jx, g.nx)) {
                const T psi = x.b_half[jx] * in.psi_ey_x[o] + x.a_half[jx] * d;
                d = d * x.inv_kappa_half[jx] + psi;
                if (col >= H && col < H + kTileX) out.psi_ey_x[o] = psi;
            }
            v = in.hz[o] + m.cq[i] * d;
            if (col >= H && col < H + kTileX) out.hz[o] = v;
        }
        hz_s[r][col] = v;
    }
    // Hx^{n+1/2} = Hx - cq * (Dz+[Ey]/kappa + psi) on the tile columns, z halo included
    for (int e = tid; e < HXZ * kTileX; e += nthreads) {
        const int r = e / kTileX, col = e % kTileX;
        const int jz = z0 - H + r, ix = x0 + col;
        T v = 0;
        if (inside(jz, ix)) {
            const std::size_t i = at(jz, ix), o = shot + i;
            T d = 0;
#pragma unroll
            for (int k = 0; k < H; ++k) d += c(k) * (ey_s[r + H + k][col + 2 * H - 1] - ey_s[r + H - 1 - k][col + 2 * H - 1]);
            d *= g.inv_dz;
            if (in_strip(z, jz, g.nz)) {
                const T psi = z.b_half[jz] * in.psi_ey_z[o] + z.a_half[jz] * d;
                d = d * z.inv_kappa_half[jz] + psi;
                if (r >= H && r < H + kTileZ) out.psi_ey_z[o] = psi;
            }
            v = in.hx[o] - m.cq[i] * d;
            if (r >= H && r < H + kTileZ) out.hx[o] = v;
        }
        hx_s[r][col] = v;
    }
    __syncthreads();

    // Ey^{n+1} = ca*Ey^n + cb*(Dx-[Hz]/kappa + psi - Dz-[Hx]/kappa - psi) on the tile
    const int col = threadIdx.x, ix = x0 + col;
#pragma unroll
    for (int rr = 0; rr < kTileZ / kThreadsY; ++rr) {
        const int r = threadIdx.y + rr * kThreadsY, iz = z0 + r;
        if (!inside(iz, ix)) continue;
        const std::size_t i = at(iz, ix), o = shot + i;
        T dx = 0, dz = 0;
#pragma unroll
        for (int k = 0; k < H; ++k) {
            dx += c(k) * (hz_s[r][col + H + k] - hz_s[r][col + H - k - 1]);
            dz += c(k) * (hx_s[r + H + k][col] - hx_s[r + H - k - 1][col]);
        }
        dx *= g.inv_dx;
        dz *= g.inv_dz;
        if (in_strip(x, ix, g.nx)) {
            const T psi = x.b_int[ix] * in.psi_hz_x[o] + x.a_int[ix] * dx;
            in.psi_hz_x[o] = psi;
            dx = dx * x.inv_kappa_int[ix] + psi;
        }
        if (in_strip(z, iz, g.nz)) {
            const T psi = z.b_int[iz] * in.psi_hx_z[o] + z.a_int[iz] * dz;
            in.psi_hx_z[o] = psi;
            dz = dz * z.inv_kappa_int[iz] + psi;
        }
        const T e = m.ca[i] * ey_s[r + 2 * H - 1][col + 2 * H - 1] + m.cb[i] * (dx - dz);
        out.ey[o] = e;
        if (keep) keep[o] = store_as<Stored>(e);
    }
}

}  // namespace

template <typename T, int ORDER, typename Stored>
void fused_step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
                const TmFields<T>& in, const TmFields<T>& out, Stored* keep, Stream stream) {
    const dim3 grid((g.nx + kTileX - 1) / kTileX, (g.nz + kTileZ - 1) / kTileZ, g.n_shots);
    fused_step_kernel<T, ORDER, Stored><<<grid, dim3(kTileX, kThreadsY), 0, stream>>>(g, m, x, z, in, out, keep);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

#define GPRFWI_INSTANTIATE(T, ORDER)                                                                       \
    template void fused_step<T, ORDER, T>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, \
                                          const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&, T*,    \
                                          Stream);                                                           \
    template void fused_step<T, ORDER, Bf16>(const GridParams<T>&, const MaterialView<T>&,                   \
                                             const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&,     \
                                             const TmFields<T>&, Bf16*, Stream);
GPRFWI_INSTANTIATE(float, 2)
GPRFWI_INSTANTIATE(float, 4)
GPRFWI_INSTANTIATE(float, 6)
GPRFWI_INSTANTIATE(float, 8)
GPRFWI_INSTANTIATE(double, 2)
GPRFWI_INSTANTIATE(double, 4)
GPRFWI_INSTANTIATE(double, 6)
GPRFWI_INSTANTIATE(double, 8)
#undef GPRFWI_INSTANTIATE

}  // namespace gprfwi::kernels::cuda
