// Probe: fused H+E step, each lane 4 columns marching down a z-segment (ORDER 4, float, no CPML).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)
constexpr float C0 = (float)(9.0 / 8), C1 = (float)(-1.0 / 24);
struct G { int nx, nz, stride; size_t shot_stride, origin; float inv_dx, inv_dz; };
struct F { float *ey, *hx, *hz; };
struct M { const float *ca, *cb, *cq; };

__global__ void h_ref(G g, M m, F f) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const size_t c = g.origin + (size_t)iz * g.stride + ix, o = c + blockIdx.z * g.shot_stride; const int s = g.stride;
    const float* ey = f.ey + o;
    float dx = 0, dz = 0;
    dx += C0 * (ey[1] - ey[0]); dz += C0 * (ey[s] - ey[0]);
    dx += C1 * (ey[2] - ey[-1]); dz += C1 * (ey[2 * s] - ey[-s]);
    dx *= g.inv_dx; dz *= g.inv_dz;
    f.hx[o] = f.hx[o] - m.cq[c] * dz; f.hz[o] = f.hz[o] + m.cq[c] * dx;
}
__global__ void e_ref(G g, M m, F f) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const size_t c = g.origin + (size_t)iz * g.stride + ix, o = c + blockIdx.z * g.shot_stride; const int s = g.stride;
    const float* hx = f.hx + o; const float* hz = f.hz + o;
    float dx = 0, dz = 0;
    dx += C0 * (hz[0] - hz[-1]); dz += C0 * (hx[0] - hx[-s]);
    dx += C1 * (hz[1] - hz[-2]); dz += C1 * (hx[s] - hx[-2 * s]);
    dx *= g.inv_dx; dz *= g.inv_dz;
    f.ey[o] = m.ca[c] * f.ey[o] + m.cb[c] * (dx - dz);
}

__device__ __forceinline__ float4 ld(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void st(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ float& E(float4& v, int j) { return (&v.x)[j]; }
__device__ __forceinline__ float Ec(const float4& v, int j) { return (&v.x)[j]; }

// hx_new at one row from ey rows q-1..q+2 (a..d), hx_old, cq
__device__ __forceinline__ float4 hx_update(const G& g, float4 hx, float4 cq, float4 a, float4 b, float4 c, float4 d) {
    float4 r;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float dz = 0; dz += C0 * (Ec(c, j) - Ec(b, j)); dz += C1 * (Ec(d, j) - Ec(a, j)); dz *= g.inv_dz;
        E(r, j) = Ec(hx, j) - Ec(cq, j) * dz;
    }
    return r;
}

template <int L>
__global__ void __launch_bounds__(128) fused(G g, M m, F in, F out) {
    const int lane = threadIdx.x & 31;
    const int wx = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int c0 = wx * 120 - 4 + lane * 4;
    const int z0 = blockIdx.y * L;
    if (wx * 120 >= g.nx) return;
    const bool owner = lane >= 1 && lane <= 30 && c0 < g.nx;
    const int s = g.stride;
    const size_t col = g.origin + (size_t)c0;                 // row 0 of this lane's columns (coefficients)
    const size_t fo = col + blockIdx.z * g.shot_stride;      // ... of this shot's fields
    auto at = [&](int r) { return (ptrdiff_t)r * s; };
    const unsigned full = 0xffffffffu;
    // prologue: ey rows z0-3 .. z0+2, hx_new rows z0-2, z0-1, z0
    float4 e_m3 = ld(in.ey + fo + at(z0 - 3)), e_m2 = ld(in.ey + fo + at(z0 - 2)), e_m1 = ld(in.ey + fo + at(z0 - 1));
    float4 e0 = ld(in.ey + fo + at(z0)), e1 = ld(in.ey + fo + at(z0 + 1)), e2 = ld(in.ey + fo + at(z0 + 2));
    float4 hn_m2 = hx_update(g, ld(in.hx + fo + at(z0 - 2)), ld(m.cq + col + at(z0 - 2)), e_m3, e_m2, e_m1, e0);
    float4 hn_m1 = hx_update(g, ld(in.hx + fo + at(z0 - 1)), ld(m.cq + col + at(z0 - 1)), e_m2, e_m1, e0, e1);
    float4 hn_0 = hx_update(g, ld(in.hx + fo + at(z0)), ld(m.cq + col + at(z0)), e_m1, e0, e1, e2);
    const int zend = min(z0 + L, g.nz);
    // window: ey rows r-1, r, r+1, r+2 (em1, e0, e1, e2); hx_new rows r-2, r-1, r (hn_m2, hn_m1, hn_0)
    for (int r = z0; r < zend; ++r) {
        const size_t ro = fo + at(r), rc = col + at(r);
        // loads of this iteration
        const float4 e3 = ld(in.ey + ro + 3 * (ptrdiff_t)s);
        const float4 hx1 = ld(in.hx + ro + s), cq1 = ld(m.cq + rc + s);
        const float4 hz0 = ld(in.hz + ro), cq0 = ld(m.cq + rc), ca = ld(m.ca + rc), cb = ld(m.cb + rc);
        // hx_new(r+1) from ey rows r..r+3
        const float4 hn_1 = hx_update(g, hx1, cq1, e0, e1, e2, e3);
        // hz_new(r) from ey row r with x neighbours
        const float eL = __shfl_up_sync(full, e0.w, 1);
        const float eR0 = __shfl_down_sync(full, e0.x, 1), eR1 = __shfl_down_sync(full, e0.y, 1);
        const float w[7] = {eL, e0.x, e0.y, e0.z, e0.w, eR0, eR1};  // columns c-1 .. c+5
        float4 hzn;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            float dx = 0; dx += C0 * (w[j + 2] - w[j + 1]); dx += C1 * (w[j + 3] - w[j]); dx *= g.inv_dx;
            E(hzn, j) = Ec(hz0, j) + Ec(cq0, j) * dx;
        }
        // E(r)
        const float hL1 = __shfl_up_sync(full, hzn.w, 1), hL2 = __shfl_up_sync(full, hzn.z, 1);
        const float hR = __shfl_down_sync(full, hzn.x, 1);
        const float h[7] = {hL2, hL1, hzn.x, hzn.y, hzn.z, hzn.w, hR};  // columns c-2 .. c+4
        float4 en;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            float dx = 0, dz = 0;
            dx += C0 * (h[j + 2] - h[j + 1]); dz += C0 * (Ec(hn_0, j) - Ec(hn_m1, j));
            dx += C1 * (h[j + 3] - h[j]); dz += C1 * (Ec(hn_1, j) - Ec(hn_m2, j));
            dx *= g.inv_dx; dz *= g.inv_dz;
            E(en, j) = Ec(ca, j) * Ec(e0, j) + Ec(cb, j) * (dx - dz);
        }
        if (owner) { st(out.hx + ro, hn_0); st(out.hz + ro, hzn); st(out.ey + ro, en); }
        // shift
        hn_m2 = hn_m1; hn_m1 = hn_0; hn_0 = hn_1;
        e0 = e1; e1 = e2; e2 = e3;
    }
}

float* dalloc(size_t n) { float* p; CK(cudaMalloc(&p, n * 4)); CK(cudaMemset(p, 0, n * 4)); return p; }

int main(int argc, char** argv) {
    const int n = atoi(argv[1]), shots = atoi(argv[2]), steps = atoi(argv[3]);
    const int nx = n + 40, nz = nx;  // nx % 4 == 0 assumed
    const int wxs = (nx + 119) / 120;
    int stride = ((wxs * 120 + 8) + 3) / 4 * 4;
    G g{nx, nz, stride, (size_t)stride * (nz + 8), (size_t)4 * stride + 4, 1.f / 0.01f, 1.f / 0.01f};
    const size_t cells = g.shot_stride, tot = cells * shots;
    std::vector<float> ca(cells, 0.f), cb(cells, 0.f), cq(cells, 0.f);
    for (int iz = 0; iz < nz; ++iz) for (int ix = 0; ix < nx; ++ix) { size_t i = g.origin + (size_t)iz * stride + ix; ca[i] = 0.99f - 1e-3f * ((ix * 7 + iz * 3) % 10); cb[i] = 1e-3f * (1 + (ix + iz) % 5); cq[i] = 1e-3f * (1 + (ix * 3 + iz) % 3); }
    float *dca = dalloc(cells), *dcb = dalloc(cells), *dcq = dalloc(cells);
    CK(cudaMemcpy(dca, ca.data(), cells * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dcb, cb.data(), cells * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dcq, cq.data(), cells * 4, cudaMemcpyHostToDevice));
    M m{dca, dcb, dcq};
    F ref{dalloc(tot), dalloc(tot), dalloc(tot)}, A{dalloc(tot), dalloc(tot), dalloc(tot)}, B{dalloc(tot), dalloc(tot), dalloc(tot)};
    std::vector<float> init(tot, 0.f);
    for (int sh = 0; sh < shots; ++sh) for (int k = 0; k < 50; ++k) init[sh * cells + g.origin + (size_t)(nz / 2 + k % 7) * stride + nx / 3 + k] = 1.f + k;
    for (F* f : {&ref, &A}) CK(cudaMemcpy(f->ey, init.data(), tot * 4, cudaMemcpyHostToDevice));
    const dim3 rb(32, 8), rg((nx + 31) / 32, (nz + 7) / 8, shots);
    constexpr int L = 32;
    const dim3 fb(128), fg((wxs + 3) / 4, (nz + L - 1) / L, shots);
    for (int s = 0; s < 100; ++s) { h_ref<<<rg, rb>>>(g, m, ref); e_ref<<<rg, rb>>>(g, m, ref); }
    for (int s = 0; s < 100; ++s) { fused<L><<<fg, fb>>>(g, m, s % 2 ? B : A, s % 2 ? A : B); }
    CK(cudaDeviceSynchronize());
    std::vector<float> a(tot), b(tot), c(tot), d(tot);
    CK(cudaMemcpy(a.data(), ref.ey, tot * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(b.data(), A.ey, tot * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(c.data(), ref.hz, tot * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(d.data(), A.hz, tot * 4, cudaMemcpyDeviceToHost));
    size_t diff = 0, dh = 0; double mx = 0;
    for (size_t i = 0; i < tot; ++i) { diff += a[i] != b[i]; dh += c[i] != d[i]; mx = fmax(mx, fabs(a[i])); }
    printf("n=%d shots=%d: fused vs reference after 100 steps: %zu Ey and %zu Hz values differ (max |Ey| %g)\n", n, shots, diff, dh, mx);
    cudaEvent_t t0, t1; cudaEventCreate(&t0); cudaEventCreate(&t1);
    for (int v = 0; v < 2; ++v) {
        float best = 1e9;
        for (int rep = 0; rep < 3; ++rep) {
            cudaEventRecord(t0);
            for (int s = 0; s < steps; ++s) {
                if (v == 0) { h_ref<<<rg, rb>>>(g, m, ref); e_ref<<<rg, rb>>>(g, m, ref); }
                else fused<L><<<fg, fb>>>(g, m, s % 2 ? B : A, s % 2 ? A : B);
            }
            cudaEventRecord(t1); CK(cudaEventSynchronize(t1)); float ms; cudaEventElapsedTime(&ms, t0, t1); best = fmin(best, ms);
        }
        printf("  %s: %.1f G cell-steps/s\n", v ? "fused z-marching" : "reference 2 kernels, scalar", double(nx) * nz * shots * steps / (best * 1e-3) / 1e9);
    }
    return 0;
}
