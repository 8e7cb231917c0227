// FDTD kernels of the 2D TM propagator on NVIDIA GPUs: the forward step, the
// adjoint passes with the imaging condition, and the sparse source/receiver
// operators. Each kernel is the CPU reference's loop body (kernels/cpu/),
// operation for operation, so that with FMA contraction off (CMake sets
// -fmad=false) the two backends agree to rounding.
//
// Equations: lib/gprfwi/kernels.hpp. Assumptions:
//  - the PaddedGrid layout with a zero halo of kMaxHalo nodes;
//  - one thread per padded node (x fastest, 32 x 8 blocks), looping over the
//    shots of the batch, so materials and CPML profiles are read once per node
//    and step for all shots;
//  - CPML memories are touched only in the CPML strips.
// Memory traffic per cell-step (float): update_h reads Ey, Hx, Hz and writes
// Hx, Hz (20 B) plus cq/shots; update_e reads Hx, Hz, Ey and writes Ey (16 B)
// plus (ca, cb)/shots and, when a level is kept, its store.

#include <cuda_runtime.h>

#include <algorithm>

#include "cuda_check.hpp"
#include "gprfwi/kernels.hpp"
#include "gprfwi/stencil.hpp"
#include "gprfwi/storage.hpp"

namespace gprfwi::kernels::cuda {

namespace {

constexpr int kBlockX = 32, kBlockY = 8;



template <typename T, int ORDER>
__device__ __forceinline__ T coef(int k) {
    return static_cast<T>(Stencil<ORDER>::c(k + 1));
}

template <typename T>
__device__ __forceinline__ bool in_strip(const CpmlAxis<T>& a, int i, int n) {
    const int lo = a.strip_low_end < n ? a.strip_low_end : n;
    const int hi = a.strip_high_begin > lo ? a.strip_high_begin : lo;
    return i < lo || i >= hi;
}

// The forward node kernels run one thread per node and shot (blockIdx.z is the
// shot) and issue all their loads before any arithmetic or store. Looping
// over shots inside a thread, loading as it went, left them latency-bound at
// ~30% of DRAM bandwidth; this form reaches ~45% (docs/performance.md, where
// also more shots or rows per thread were measured and did not help).

template <typename T, int ORDER>
__global__ void update_h_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, TmFields<T> f) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const std::size_t c = g.origin + static_cast<std::size_t>(iz) * stride + ix;  // node
    const std::size_t o = c + blockIdx.z * g.shot_stride;                         // node of this shot
    const T* __restrict__ ey = f.ey + o;
    T* __restrict__ hx = f.hx;
    T* __restrict__ hz = f.hz;
    // loads: Dx+[Ey], Dz+[Ey] onto the Hz and Hx nodes, old H, cq
    T dx = 0, dz = 0;
#pragma unroll
    for (int k = 0; k < ORDER / 2; ++k) {
        dx += coef<T, ORDER>(k) * (ey[k + 1] - ey[-k]);
        dz += coef<T, ORDER>(k) * (ey[(k + 1) * stride] - ey[-k * stride]);
    }
    const T hx_old = hx[o], hz_old = hz[o], cq = m.cq[c];
    dx *= g.inv_dx;
    dz *= g.inv_dz;
    if (in_strip(x, ix, g.nx)) {
        const T psi = x.b_half[ix] * f.psi_ey_x[o] + x.a_half[ix] * dx;
        f.psi_ey_x[o] = psi;
        dx = dx * x.inv_kappa_half[ix] + psi;
    }
    if (in_strip(z, iz, g.nz)) {
        const T psi = z.b_half[iz] * f.psi_ey_z[o] + z.a_half[iz] * dz;
        f.psi_ey_z[o] = psi;
        dz = dz * z.inv_kappa_half[iz] + psi;
    }
    hx[o] = hx_old - cq * dz;
    hz[o] = hz_old + cq * dx;
}

template <typename T, int ORDER, typename Stored>
__global__ void update_e_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, TmFields<T> f,
                                Stored* keep) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const std::size_t c = g.origin + static_cast<std::size_t>(iz) * stride + ix;
    const std::size_t o = c + blockIdx.z * g.shot_stride;
    const T* __restrict__ hx = f.hx + o;
    const T* __restrict__ hz = f.hz + o;
    T* __restrict__ ey = f.ey;
    // loads: Dx-[Hz], Dz-[Hx] onto the Ey nodes, old Ey, ca, cb
    T dx = 0, dz = 0;
#pragma unroll
    for (int k = 0; k < ORDER / 2; ++k) {
        dx += coef<T, ORDER>(k) * (hz[k] - hz[-k - 1]);
        dz += coef<T, ORDER>(k) * (hx[k * stride] - hx[-(k + 1) * stride]);
    }
    const T ey_old = ey[o], ca = m.ca[c], cb = m.cb[c];
    dx *= g.inv_dx;
    dz *= g.inv_dz;
    if (in_strip(x, ix, g.nx)) {
        const T psi = x.b_int[ix] * f.psi_hz_x[o] + x.a_int[ix] * dx;
        f.psi_hz_x[o] = psi;
        dx = dx * x.inv_kappa_int[ix] + psi;
    }
    if (in_strip(z, iz, g.nz)) {
        const T psi = z.b_int[iz] * f.psi_hx_z[o] + z.a_int[iz] * dz;
        f.psi_hx_z[o] = psi;
        dz = dz * z.inv_kappa_int[iz] + psi;
    }
    // Ey^{n+1} = ca*Ey^n + cb*curlH
    const T e = ca * ey_old + cb * (dx - dz);
    ey[o] = e;
    if (keep) keep[o] = store_as<Stored>(e);
}

template <typename T, typename Stored>
__global__ void inject_sources_kernel(GridParams<T> g, SparseOperators op, const double* wavelets, int nt, int m,
                                      T* ey, Stored* keep) {
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= op.n_source_points) return;
    const int s = op.source_shot[e];
    const std::size_t o = s * g.shot_stride + op.source_index[e];
    const T v = ey[o] + static_cast<T>(op.source_weight[e] * wavelets[static_cast<std::size_t>(s) * nt + m]);
    ey[o] = v;
    if (keep) keep[o] = store_as<Stored>(v);
}

/// sum_j w_j * field[index_j] over entries [begin, end), added in j order as
/// on the CPU (bitwise the same sum), by one warp: each lane loads its
/// entries' products in parallel, then lane 0 adds them in order via shuffles.
template <typename T>
__device__ double warp_ordered_dot(int begin, int end, const std::size_t* index, const double* weight, const T* field) {
    const int lane = threadIdx.x & 31;
    double acc = 0;
    for (int base = begin; base < end; base += 32) {
        const int j = base + lane;
        const double prod = j < end ? weight[j] * static_cast<double>(field[index[j]]) : 0.0;
        const int count = end - base < 32 ? end - base : 32;
        for (int l = 0; l < count; ++l) {
            const double p = __shfl_sync(0xffffffffu, prod, l);
            if (lane == 0) acc += p;
        }
    }
    return acc;
}

template <typename T>
__global__ void sample_receivers_kernel(GridParams<T> g, SparseOperators op, const T* ey, double* traces, int nt,
                                        int m) {
    const int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // one warp per receiver row
    if (r >= op.n_rows) return;
    const double acc =
        warp_ordered_dot(op.row_begin[r], op.row_begin[r + 1], op.row_index, op.row_weight, ey + op.row_shot[r] * g.shot_stride);
    if ((threadIdx.x & 31) == 0) traces[static_cast<std::size_t>(r) * nt + m] = acc;
}

template <typename T>
__global__ void inject_adjoint_kernel(GridParams<T> g, SparseOperators op, const double* adjoint_source, int nt,
                                      int m, T* lam) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= op.n_nodes) return;
    T& v = lam[op.node_shot[j] * g.shot_stride + op.node_index[j]];
    T acc = v;
    for (int e = op.node_begin[j]; e < op.node_begin[j + 1]; ++e)
        acc += static_cast<T>(op.node_weight[e] * adjoint_source[static_cast<std::size_t>(op.node_row[e]) * nt + m]);
    v = acc;
}

template <typename T>
__global__ void source_gradient_kernel(GridParams<T> g, SparseOperators op, const T* lam, double* grad, int nt,
                                       int m) {
    const int s = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // one warp per shot
    if (s >= op.n_shots) return;
    const double acc = warp_ordered_dot(op.shot_source_begin[s], op.shot_source_begin[s + 1], op.source_index,
                                        op.source_weight, lam + s * g.shot_stride);
    if ((threadIdx.x & 31) == 0) grad[static_cast<std::size_t>(s) * nt + m] = acc;
}

template <typename T, typename Stored>
__global__ void adjoint_e_prepare_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z,
                                         TmFields<T> adj, AdjointScratch<T> sc, ImagingView<T, Stored> img,
                                         bool imaging) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * g.stride + ix;
    const T ca = m.ca[i], cb = m.cb[i];
    const bool xp = in_strip(x, ix, g.nx), zp = in_strip(z, iz, g.nz);
    {
        const int s = blockIdx.z;  // the shot
        const std::size_t o = i + s * g.shot_stride;
        const T lam = adj.ey[o];
        if (imaging) {
            // g_prev += w * lambda^{n+1} * Ey^n;  g_next += w * lambda^{n+1} * Ey^{n+1}
            const double wl = img.weight * static_cast<double>(lam);
            const double sp = img.scale_prev ? img.scale_prev[s] : 1.0;
            const double sn = img.scale_next ? img.scale_next[s] : 1.0;
            if (img.ey_prev) img.g_ey_prev[o] += wl * (load_as<double>(img.ey_prev[o]) * sp);
            if (img.ey_next) {
                const double e = load_as<double>(img.ey_next[o]) * sn;
                img.g_ey_next[o] += wl * e;
                if (img.illumination) img.illumination[o] += img.weight * e * e;
            }
        }
        const T t = cb * lam;
        T qx = t, qz = -t;
        if (xp) {
            const T mx = adj.psi_hz_x[o] + t;
            qx = t * x.inv_kappa_int[ix] + x.a_int[ix] * mx;
            adj.psi_hz_x[o] = x.b_int[ix] * mx;
        }
        if (zp) {
            const T mz = adj.psi_hx_z[o] - t;
            qz = -t * z.inv_kappa_int[iz] + z.a_int[iz] * mz;
            adj.psi_hx_z[o] = z.b_int[iz] * mz;
        }
        sc.q_x[o] = qx;
        sc.q_z[o] = qz;
        adj.ey[o] = ca * lam;
    }
}

template <typename T, int ORDER>
__global__ void adjoint_h_kernel(GridParams<T> g, MaterialView<T> m, CpmlAxis<T> x, CpmlAxis<T> z, TmFields<T> adj,
                                 AdjointScratch<T> sc) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * stride + ix;
    const T cq = m.cq[i];
    const bool xp = in_strip(x, ix, g.nx), zp = in_strip(z, iz, g.nz);
    {
        const int s = blockIdx.z;  // the shot
        const std::size_t o = i + s * g.shot_stride;
        const T* qx_ = sc.q_x + o;
        const T* qz_ = sc.q_z + o;
        // lambda_hz -= Dx+[q_x];  lambda_hx -= Dz+[q_z]
        T dx = 0, dz = 0;
#pragma unroll
        for (int k = 0; k < ORDER / 2; ++k) {
            dx += coef<T, ORDER>(k) * (qx_[k + 1] - qx_[-k]);
            dz += coef<T, ORDER>(k) * (qz_[(k + 1) * stride] - qz_[-k * stride]);
        }
        const T lam_hz = adj.hz[o] - dx * g.inv_dx;
        const T lam_hx = adj.hx[o] - dz * g.inv_dz;
        adj.hz[o] = lam_hz;
        adj.hx[o] = lam_hx;
        const T sx = cq * lam_hz;
        const T sz = -cq * lam_hx;
        T px = sx, pz = sz;
        if (xp) {
            const T mx = adj.psi_ey_x[o] + sx;
            px = sx * x.inv_kappa_half[ix] + x.a_half[ix] * mx;
            adj.psi_ey_x[o] = x.b_half[ix] * mx;
        }
        if (zp) {
            const T mz = adj.psi_ey_z[o] + sz;
            pz = sz * z.inv_kappa_half[iz] + z.a_half[iz] * mz;
            adj.psi_ey_z[o] = z.b_half[iz] * mz;
        }
        sc.p_x[o] = px;
        sc.p_z[o] = pz;
    }
}

template <typename T, int ORDER>
__global__ void adjoint_e_finish_kernel(GridParams<T> g, TmFields<T> adj, AdjointScratch<T> sc) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const std::size_t i = g.origin + static_cast<std::size_t>(iz) * stride + ix;
    {
        const int s = blockIdx.z;  // the shot
        const std::size_t o = i + s * g.shot_stride;
        const T* px = sc.p_x + o;
        const T* pz = sc.p_z + o;
        // lambda_ey -= Dx-[p_x] + Dz-[p_z]
        T dx = 0, dz = 0;
#pragma unroll
        for (int k = 0; k < ORDER / 2; ++k) {
            dx += coef<T, ORDER>(k) * (px[k] - px[-k - 1]);
            dz += coef<T, ORDER>(k) * (pz[k * stride] - pz[-(k + 1) * stride]);
        }
        adj.ey[o] -= dx * g.inv_dx + dz * g.inv_dz;
    }
}

template <typename T>
__global__ void sum_over_shots_kernel(GridParams<T> g, const double* per_shot, double* out) {
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i >= g.shot_stride) return;
    double acc = 0;
    for (int s = 0; s < g.n_shots; ++s) acc += per_shot[s * g.shot_stride + i];
    out[i] = acc;
}

template <typename T, typename Stored>
__global__ void store_level_kernel(std::size_t n, const T* ey, Stored* level) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        level[i] = store_as<Stored>(ey[i]);
}

/// max |field| of each shot (blockIdx.y), as the bits of a non-negative
/// double, which order like the values (max is exact in any order).
template <typename T>
__global__ void max_abs_kernel(std::size_t n, std::size_t shot_stride, const T* field, unsigned long long* out) {
    const T* f = field + blockIdx.y * shot_stride;
    double m = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        m = fmax(m, fabs(static_cast<double>(f[i])));
    for (int d = 16; d > 0; d /= 2) m = fmax(m, __shfl_down_sync(0xffffffffu, m, d));
    if ((threadIdx.x & 31) == 0) atomicMax(out + blockIdx.y, static_cast<unsigned long long>(__double_as_longlong(m)));
}

/// level = fp8(Ey * 448 / max), scales = max / 448 (1 for a zero field), per shot (blockIdx.y).
template <typename T>
__global__ void quantize_fp8_kernel(std::size_t n, std::size_t shot_stride, const T* field,
                                    const unsigned long long* max_bits, Fp8* level, double* scales) {
    const double max_abs = __longlong_as_double(static_cast<long long>(max_bits[blockIdx.y]));
    const double inv = max_abs > 0 ? kFp8Max / max_abs : 1.0;
    const std::size_t base = blockIdx.y * shot_stride;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        level[base + i] = store_as<Fp8>(static_cast<float>(static_cast<double>(field[base + i]) * inv));
    if (blockIdx.x == 0 && threadIdx.x == 0) scales[blockIdx.y] = max_abs > 0 ? max_abs / kFp8Max : 1.0;
}

template <typename T>
__global__ void flag_non_finite_kernel(std::size_t n, const T* field, int* flag) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        if (!isfinite(field[i])) {
            *flag = 1;
            return;
        }
}

int blocks_for(std::size_t n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

}  // namespace

template <typename T>
dim3 node_and_shot_grid(const GridParams<T>& g) {
    return dim3((g.nx + kBlockX - 1) / kBlockX, (g.nz + kBlockY - 1) / kBlockY, g.n_shots);
}

template <typename T, int ORDER>
void update_h(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
              const TmFields<T>& f, Stream stream) {
    update_h_kernel<T, ORDER><<<node_and_shot_grid(g), dim3(kBlockX, kBlockY), 0, stream>>>(g, m, x, z, f);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, int ORDER, typename Stored>
void update_e(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
              const TmFields<T>& f, Stored* keep, Stream stream) {
    update_e_kernel<T, ORDER, Stored><<<node_and_shot_grid(g), dim3(kBlockX, kBlockY), 0, stream>>>(g, m, x, z, f, keep);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Stored>
void inject_sources(const GridParams<T>& g, const SparseOperators& op, const double* wavelets, int nt, int m, T* ey,
                    Stored* keep, Stream stream) {
    if (op.n_source_points == 0) return;
    inject_sources_kernel<T, Stored><<<blocks_for(op.n_source_points, 128), 128, 0, stream>>>(g, op, wavelets, nt, m,
                                                                                             ey, keep);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void sample_receivers(const GridParams<T>& g, const SparseOperators& op, const T* ey, double* traces, int nt, int m,
                      Stream stream) {
    if (op.n_rows == 0) return;
    sample_receivers_kernel<T><<<blocks_for(static_cast<std::size_t>(op.n_rows) * 32, 128), 128, 0, stream>>>(g, op, ey, traces, nt, m);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void inject_adjoint_sources(const GridParams<T>& g, const SparseOperators& op, const double* adjoint_source, int nt,
                            int m, T* lam, Stream stream) {
    if (op.n_nodes == 0) return;
    inject_adjoint_kernel<T><<<blocks_for(op.n_nodes, 128), 128, 0, stream>>>(g, op, adjoint_source, nt, m, lam);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void source_gradient(const GridParams<T>& g, const SparseOperators& op, const T* lam, double* grad, int nt, int m,
                     Stream stream) {
    source_gradient_kernel<T><<<blocks_for(static_cast<std::size_t>(op.n_shots) * 32, 128), 128, 0, stream>>>(g, op, lam, grad, nt, m);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Stored>
void adjoint_e_prepare(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
                       const TmFields<T>& adj, const AdjointScratch<T>& s, const ImagingView<T, Stored>* img,
                       Stream stream) {
    const ImagingView<T, Stored> view = img ? *img : ImagingView<T, Stored>{nullptr, nullptr, 0.0, nullptr, nullptr};
    adjoint_e_prepare_kernel<T, Stored>
        <<<node_and_shot_grid(g), dim3(kBlockX, kBlockY), 0, stream>>>(g, m, x, z, adj, s, view, img != nullptr);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, int ORDER>
void adjoint_h(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
               const TmFields<T>& adj, const AdjointScratch<T>& s, Stream stream) {
    adjoint_h_kernel<T, ORDER><<<node_and_shot_grid(g), dim3(kBlockX, kBlockY), 0, stream>>>(g, m, x, z, adj, s);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, int ORDER>
void adjoint_e_finish(const GridParams<T>& g, const TmFields<T>& adj, const AdjointScratch<T>& s, Stream stream) {
    adjoint_e_finish_kernel<T, ORDER><<<node_and_shot_grid(g), dim3(kBlockX, kBlockY), 0, stream>>>(g, adj, s);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void sum_over_shots(const GridParams<T>& g, const double* per_shot, double* out, Stream stream) {
    sum_over_shots_kernel<T><<<blocks_for(g.shot_stride, 256), 256, 0, stream>>>(g, per_shot, out);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Stored>
void store_level(const GridParams<T>& g, const T* ey, Stored* level, Stream stream) {
    const std::size_t n = g.shot_stride * g.n_shots;
    store_level_kernel<T, Stored><<<std::min(blocks_for(n, 256), 4096), 256, 0, stream>>>(n, ey, level);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void keep_level_fp8(const GridParams<T>& g, const T* ey, Fp8* level, double* scales, unsigned long long* max_scratch,
                    Stream stream) {
    const dim3 grid(std::min(blocks_for(g.shot_stride, 256), 1024), g.n_shots);
    GPRFWI_CUDA_CHECK(cudaMemsetAsync(max_scratch, 0, g.n_shots * sizeof(unsigned long long), stream));
    max_abs_kernel<T><<<grid, 256, 0, stream>>>(g.shot_stride, g.shot_stride, ey, max_scratch);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
    quantize_fp8_kernel<T><<<grid, 256, 0, stream>>>(g.shot_stride, g.shot_stride, ey, max_scratch, level, scales);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void flag_non_finite(const GridParams<T>& g, const T* field, int* flag, Stream stream) {
    const std::size_t n = g.shot_stride * g.n_shots;
    flag_non_finite_kernel<T><<<std::min(blocks_for(n, 256), 4096), 256, 0, stream>>>(n, field, flag);
    GPRFWI_CUDA_CHECK(cudaGetLastError());
}

#define GPRFWI_INSTANTIATE_ORDER(T, ORDER)                                                                       \
    template void update_h<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,           \
                                     const CpmlAxis<T>&, const TmFields<T>&, Stream);                            \
    template void update_e<T, ORDER, T>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,        \
                                        const CpmlAxis<T>&, const TmFields<T>&, T*, Stream);                     \
    template void update_e<T, ORDER, Bf16>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,     \
                                           const CpmlAxis<T>&, const TmFields<T>&, Bf16*, Stream);               \
    template void adjoint_h<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,          \
                                      const CpmlAxis<T>&, const TmFields<T>&, const AdjointScratch<T>&, Stream); \
    template void adjoint_e_finish<T, ORDER>(const GridParams<T>&, const TmFields<T>&, const AdjointScratch<T>&, \
                                             Stream);
#define GPRFWI_INSTANTIATE_TYPE(T)                                                                                  \
    GPRFWI_INSTANTIATE_ORDER(T, 2) GPRFWI_INSTANTIATE_ORDER(T, 4) GPRFWI_INSTANTIATE_ORDER(T, 6)                   \
    GPRFWI_INSTANTIATE_ORDER(T, 8)                                                                                  \
    template void inject_sources<T, T>(const GridParams<T>&, const SparseOperators&, const double*, int, int, T*,   \
                                       T*, Stream);                                                                 \
    template void inject_sources<T, Bf16>(const GridParams<T>&, const SparseOperators&, const double*, int, int,    \
                                          T*, Bf16*, Stream);                                                       \
    template void sample_receivers<T>(const GridParams<T>&, const SparseOperators&, const T*, double*, int, int,    \
                                      Stream);                                                                      \
    template void inject_adjoint_sources<T>(const GridParams<T>&, const SparseOperators&, const double*, int, int,  \
                                            T*, Stream);                                                            \
    template void source_gradient<T>(const GridParams<T>&, const SparseOperators&, const T*, double*, int, int,     \
                                     Stream);                                                                       \
    template void adjoint_e_prepare<T, T>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,         \
                                          const CpmlAxis<T>&, const TmFields<T>&, const AdjointScratch<T>&,         \
                                          const ImagingView<T, T>*, Stream);                                        \
    template void adjoint_e_prepare<T, Bf16>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,      \
                                             const CpmlAxis<T>&, const TmFields<T>&, const AdjointScratch<T>&,      \
                                             const ImagingView<T, Bf16>*, Stream);                                  \
    template void adjoint_e_prepare<T, Fp8>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&,       \
                                            const CpmlAxis<T>&, const TmFields<T>&, const AdjointScratch<T>&,       \
                                            const ImagingView<T, Fp8>*, Stream);                                    \
    template void keep_level_fp8<T>(const GridParams<T>&, const T*, Fp8*, double*, unsigned long long*, Stream);   \
    template void store_level<T, T>(const GridParams<T>&, const T*, T*, Stream);                                    \
    template void store_level<T, Bf16>(const GridParams<T>&, const T*, Bf16*, Stream);                              \
    template void sum_over_shots<T>(const GridParams<T>&, const double*, double*, Stream);                          \
    template void flag_non_finite<T>(const GridParams<T>&, const T*, int*, Stream);
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
