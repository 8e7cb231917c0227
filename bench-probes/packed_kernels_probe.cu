// Microbenchmark: current forward kernels vs x-vectorised (4 nodes per thread).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cstring>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

template <int O> struct St;
template <> struct St<2> { static __host__ __device__ constexpr double c(int) { return 1.0; } };
template <> struct St<4> { static __host__ __device__ constexpr double c(int k) { return k == 1 ? 9.0 / 8 : -1.0 / 24; } };
template <> struct St<8> { static __host__ __device__ constexpr double c(int k) { return k == 1 ? 1225.0/1024 : k == 2 ? -245.0/3072 : k == 3 ? 49.0/5120 : -5.0/7168; } };
template <typename T, int O> __device__ __forceinline__ T coef(int k) { return static_cast<T>(St<O>::c(k + 1)); }

struct G { int nx, nz, stride; size_t shot_stride, origin; int n_shots; float inv_dx, inv_dz; };
struct M { const float *ca, *cb, *cq; };
struct A { const float *ik_int, *a_int, *b_int, *ik_half, *a_half, *b_half; int lo, hi; };
struct F { float *ey, *hx, *hz, *pex, *pez, *phx, *phz; };

__device__ __forceinline__ bool in_strip(const A& a, int i, int n) {
    const int lo = a.lo < n ? a.lo : n; const int hi = a.hi > lo ? a.hi : lo; return i < lo || i >= hi;
}

template <int ORDER>
__global__ void h0(G g, M m, A x, A z, F f) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const size_t c = g.origin + (size_t)iz * stride + ix, o = c + blockIdx.z * g.shot_stride;
    const float* __restrict__ ey = f.ey + o;
    float dx = 0, dz = 0;
#pragma unroll
    for (int k = 0; k < ORDER / 2; ++k) {
        dx += coef<float, ORDER>(k) * (ey[k + 1] - ey[-k]);
        dz += coef<float, ORDER>(k) * (ey[(k + 1) * stride] - ey[-k * stride]);
    }
    const float hx_old = f.hx[o], hz_old = f.hz[o], cq = m.cq[c];
    dx *= g.inv_dx; dz *= g.inv_dz;
    if (in_strip(x, ix, g.nx)) { const float psi = x.b_half[ix] * f.pex[o] + x.a_half[ix] * dx; f.pex[o] = psi; dx = dx * x.ik_half[ix] + psi; }
    if (in_strip(z, iz, g.nz)) { const float psi = z.b_half[iz] * f.pez[o] + z.a_half[iz] * dz; f.pez[o] = psi; dz = dz * z.ik_half[iz] + psi; }
    f.hx[o] = hx_old - cq * dz;
    f.hz[o] = hz_old + cq * dx;
}
template <int ORDER>
__global__ void e0(G g, M m, A x, A z, F f) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const size_t c = g.origin + (size_t)iz * stride + ix, o = c + blockIdx.z * g.shot_stride;
    const float* __restrict__ hx = f.hx + o; const float* __restrict__ hz = f.hz + o;
    float dx = 0, dz = 0;
#pragma unroll
    for (int k = 0; k < ORDER / 2; ++k) {
        dx += coef<float, ORDER>(k) * (hz[k] - hz[-k - 1]);
        dz += coef<float, ORDER>(k) * (hx[k * stride] - hx[-(k + 1) * stride]);
    }
    const float ey_old = f.ey[o], ca = m.ca[c], cb = m.cb[c];
    dx *= g.inv_dx; dz *= g.inv_dz;
    if (in_strip(x, ix, g.nx)) { const float psi = x.b_int[ix] * f.phx[o] + x.a_int[ix] * dx; f.phx[o] = psi; dx = dx * x.ik_int[ix] + psi; }
    if (in_strip(z, iz, g.nz)) { const float psi = z.b_int[iz] * f.phz[o] + z.a_int[iz] * dz; f.phz[o] = psi; dz = dz * z.ik_int[iz] + psi; }
    f.ey[o] = ca * ey_old + cb * (dx - dz);
}

// ---- 4 nodes per thread (x), float4 loads; needs stride % 4 == 0 and origin % 4 == 0
__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ float& el(float4& v, int j) { return (&v.x)[j]; }

template <int ORDER>
__global__ void h1(G g, M m, A x, A z, F f) {
    constexpr int R = ORDER / 2;
    const int ix0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix0 >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const size_t c = g.origin + (size_t)iz * stride + ix0, o = c + blockIdx.z * g.shot_stride;
    const float* ey = f.ey + o;
    float e[12];  // ey[-4 .. 7]
    { float4 a = ld4(ey - 4), b = ld4(ey), d = ld4(ey + 4);
      e[0]=a.x;e[1]=a.y;e[2]=a.z;e[3]=a.w;e[4]=b.x;e[5]=b.y;e[6]=b.z;e[7]=b.w;e[8]=d.x;e[9]=d.y;e[10]=d.z;e[11]=d.w; }
    float4 up[R], dn[R];
#pragma unroll
    for (int k = 0; k < R; ++k) { up[k] = ld4(ey + (k + 1) * stride); dn[k] = ld4(ey - k * stride); }
    float4 hx = ld4(f.hx + o), hz = ld4(f.hz + o), cq = ld4(m.cq + c);
    const bool zp = in_strip(z, iz, g.nz);
    float4 pz; if (zp) pz = ld4(f.pez + o);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float dx = 0, dz = 0;
#pragma unroll
        for (int k = 0; k < R; ++k) {
            dx += coef<float, ORDER>(k) * (e[4 + j + k + 1] - e[4 + j - k]);
            dz += coef<float, ORDER>(k) * (el(up[k], j) - el(dn[k], j));
        }
        dx *= g.inv_dx; dz *= g.inv_dz;
        const int ix = ix0 + j;
        if (in_strip(x, ix, g.nx) && ix < g.nx) { const float psi = x.b_half[ix] * f.pex[o + j] + x.a_half[ix] * dx; f.pex[o + j] = psi; dx = dx * x.ik_half[ix] + psi; }
        if (zp) { const float psi = z.b_half[iz] * el(pz, j) + z.a_half[iz] * dz; el(pz, j) = psi; dz = dz * z.ik_half[iz] + psi; }
        el(hx, j) = el(hx, j) - el(cq, j) * dz;
        el(hz, j) = el(hz, j) + el(cq, j) * dx;
    }
    if (ix0 + 4 <= g.nx) { st4(f.hx + o, hx); st4(f.hz + o, hz); if (zp) st4(f.pez + o, pz); }
    else for (int j = 0; ix0 + j < g.nx; ++j) { f.hx[o + j] = el(hx, j); f.hz[o + j] = el(hz, j); if (zp) f.pez[o + j] = el(pz, j); }
}
template <int ORDER>
__global__ void e1(G g, M m, A x, A z, F f) {
    constexpr int R = ORDER / 2;
    const int ix0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix0 >= g.nx || iz >= g.nz) return;
    const int stride = g.stride;
    const size_t c = g.origin + (size_t)iz * stride + ix0, o = c + blockIdx.z * g.shot_stride;
    const float* hzp = f.hz + o; const float* hxp = f.hx + o;
    float h[12];  // hz[-4 .. 7]
    { float4 a = ld4(hzp - 4), b = ld4(hzp), d = ld4(hzp + 4);
      h[0]=a.x;h[1]=a.y;h[2]=a.z;h[3]=a.w;h[4]=b.x;h[5]=b.y;h[6]=b.z;h[7]=b.w;h[8]=d.x;h[9]=d.y;h[10]=d.z;h[11]=d.w; }
    float4 up[R], dn[R];
#pragma unroll
    for (int k = 0; k < R; ++k) { up[k] = ld4(hxp + k * stride); dn[k] = ld4(hxp - (k + 1) * stride); }
    float4 ey = ld4(f.ey + o), ca = ld4(m.ca + c), cb = ld4(m.cb + c);
    const bool zp = in_strip(z, iz, g.nz);
    float4 pz; if (zp) pz = ld4(f.phz + o);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float dx = 0, dz = 0;
#pragma unroll
        for (int k = 0; k < R; ++k) {
            dx += coef<float, ORDER>(k) * (h[4 + j + k] - h[4 + j - k - 1]);
            dz += coef<float, ORDER>(k) * (el(up[k], j) - el(dn[k], j));
        }
        dx *= g.inv_dx; dz *= g.inv_dz;
        const int ix = ix0 + j;
        if (in_strip(x, ix, g.nx) && ix < g.nx) { const float psi = x.b_int[ix] * f.phx[o + j] + x.a_int[ix] * dx; f.phx[o + j] = psi; dx = dx * x.ik_int[ix] + psi; }
        if (zp) { const float psi = z.b_int[iz] * el(pz, j) + z.a_int[iz] * dz; el(pz, j) = psi; dz = dz * z.ik_int[iz] + psi; }
        el(ey, j) = el(ca, j) * el(ey, j) + el(cb, j) * (dx - dz);
    }
    if (ix0 + 4 <= g.nx) { st4(f.ey + o, ey); if (zp) st4(f.phz + o, pz); }
    else for (int j = 0; ix0 + j < g.nx; ++j) { f.ey[o + j] = el(ey, j); if (zp) f.phz[o + j] = el(pz, j); }
}

float* dalloc(size_t n) { float* p; CK(cudaMalloc(&p, n * 4)); CK(cudaMemset(p, 0, n * 4)); return p; }
float* dup(const std::vector<float>& h) { float* p = dalloc(h.size()); CK(cudaMemcpy(p, h.data(), h.size() * 4, cudaMemcpyHostToDevice)); return p; }

A make_axis(int n, int w) {
    std::vector<float> ik(n, 1.f), a(n, 0.f), b(n, 1.f);
    for (int i = 0; i < n; ++i) { int d = i < w ? w - i : (i >= n - w ? i - (n - w - 1) : 0); if (d) { double r = double(d) / w; ik[i] = 1.f / (1 + 2 * r * r); b[i] = float(exp(-0.3 * r * r)); a[i] = float(-0.1 * r * r); } }
    A ax{dup(ik), dup(a), dup(b), dup(ik), dup(a), dup(b), w, n - w};
    return ax;
}

int main(int argc, char** argv) {
    const int n = atoi(argv[1]), shots = atoi(argv[2]), steps = atoi(argv[3]), bx = argc > 4 ? atoi(argv[4]) : 32, by = argc > 5 ? atoi(argv[5]) : 8;
    const int pml = 20, nx = n + 2 * pml, nz = nx;
    int stride = nx + 8; stride = (stride + 3) / 4 * 4;
    G g{nx, nz, stride, (size_t)stride * (nz + 8), (size_t)4 * stride + 4, shots, 1.f / 0.01f, 1.f / 0.01f};
    // node (0,0) at column 4: origin%4 == 0 when stride%4 == 0
    const size_t cells = g.shot_stride, tot = cells * shots;
    std::vector<float> ca(cells, 0.f), cb(cells, 0.f), cq(cells, 0.f);
    for (int iz = 0; iz < nz; ++iz) for (int ix = 0; ix < nx; ++ix) { size_t i = g.origin + (size_t)iz * stride + ix; ca[i] = 0.99f - 1e-3f * ((ix * 7 + iz * 3) % 10); cb[i] = 1e-3f * (1 + (ix + iz) % 5); cq[i] = 1e-3f; }
    M m{dup(ca), dup(cb), dup(cq)};
    A x = make_axis(nx, pml), z = make_axis(nz, pml);
    F f[2];
    for (auto& ff : f) ff = F{dalloc(tot), dalloc(tot), dalloc(tot), dalloc(tot), dalloc(tot), dalloc(tot), dalloc(tot)};
    auto src = [&](F& ff, int s) { // a spike in every shot
        for (int sh = 0; sh < shots; ++sh) { float v = 1.f; size_t i = sh * cells + g.origin + (size_t)(nz / 2 + sh) * stride + nx / 3 + s % 5; float old; CK(cudaMemcpy(&old, ff.ey + i, 4, cudaMemcpyDeviceToHost)); old += v; CK(cudaMemcpy(ff.ey + i, &old, 4, cudaMemcpyHostToDevice)); } };
    const dim3 b0(bx, by), gr0((nx + bx - 1) / bx, (nz + by - 1) / by, shots);
    const dim3 gr1((nx / 4 + bx) / bx, (nz + by - 1) / by, shots);
    // correctness: 60 steps each, compare
    for (int v = 0; v < 2; ++v) {
        for (int s = 0; s < 60; ++s) {
            if (s < 10) src(f[v], s);
            if (v == 0) { h0<4><<<gr0, b0>>>(g, m, x, z, f[v]); e0<4><<<gr0, b0>>>(g, m, x, z, f[v]); }
            else { h1<4><<<gr1, b0>>>(g, m, x, z, f[v]); e1<4><<<gr1, b0>>>(g, m, x, z, f[v]); }
        }
    }
    CK(cudaDeviceSynchronize());
    std::vector<float> a(tot), b(tot);
    CK(cudaMemcpy(a.data(), f[0].ey, tot * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(b.data(), f[1].ey, tot * 4, cudaMemcpyDeviceToHost));
    size_t diff = 0; double mx = 0; for (size_t i = 0; i < tot; ++i) { if (a[i] != b[i]) ++diff; mx = fmax(mx, fabs(a[i])); }
    printf("n=%d shots=%d block %dx%d: bitwise differences %zu (max |ey| %g)\n", n, shots, bx, by, diff, mx);
    cudaEvent_t t0, t1; cudaEventCreate(&t0); cudaEventCreate(&t1);
    for (int v = 0; v < 2; ++v) {
        float best = 1e9;
        for (int rep = 0; rep < 3; ++rep) {
            cudaEventRecord(t0);
            for (int s = 0; s < steps; ++s) {
                if (v == 0) { h0<4><<<gr0, b0>>>(g, m, x, z, f[v]); e0<4><<<gr0, b0>>>(g, m, x, z, f[v]); }
                else { h1<4><<<gr1, b0>>>(g, m, x, z, f[v]); e1<4><<<gr1, b0>>>(g, m, x, z, f[v]); }
            }
            cudaEventRecord(t1); CK(cudaEventSynchronize(t1)); float ms; cudaEventElapsedTime(&ms, t0, t1); best = fmin(best, ms);
        }
        printf("  v%d: %.1f G cell-steps/s\n", v, double(nx) * nz * shots * steps / (best * 1e-3) / 1e9);
    }
    return 0;
}
