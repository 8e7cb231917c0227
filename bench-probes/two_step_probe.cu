// Probe: temporal blocking of the forward step's marching warps, two time
// steps a pass (order 4, float, no CPML; the engine's interior kernel,
// kernels/cuda/fdtd.cu marching_step_warp, is the one-step form).
//
// A warp owns a band of columns (4 a lane) and marches down a segment of L
// rows. Four stages run at staggered rows of one loop, each from registers:
//   P1  Hx^{n+1/2} at row i+R-1 (the Ey^n rows i .. i+2R-1 it holds)
//   P2  Hz^{n+1/2} and Ey^{n+1} at row i
//   P3  Hx^{n+3/2} at row i-R (from the Ey^{n+1} rows P2 left)
//   P4  Hz^{n+3/2} and Ey^{n+2} at row i-2R+1
// so the fields are read once and written once for two steps (24 bytes a
// node for two steps instead of 48, plus the coefficients). The price: each
// segment recomputes 6R-3 rows above it (its first stages start early), and
// 2 lanes at each edge of the warp only supply neighbours (x reach of two
// steps: 4R-2 columns), so a warp owns 28 of its 32 lanes' columns, not 30.
// Ey^{n+1} can be stored too (kept levels, receivers).
//
// Checks one two-step pass bitwise against two steps of the reference
// kernels from random fields, then times repeated passes against the
// one-step marching kernel (bench-probes/fused_step_probe.cu's) and the
// device-to-device copy bandwidth, in the same run.
//   nvcc -O3 -arch=sm_90 -fmad=false -std=c++17 -o two_step two_step_probe.cu
//   ./two_step N SHOTS STEPS      (e.g. 1000 8 2000, 4000 1 1000)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>
#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));          \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

constexpr int R = 2;  // order 4
__device__ __forceinline__ float coef(int k) { return k == 0 ? (float)(9.0 / 8) : (float)(-1.0 / 24); }

struct G {
    int nx, nz, stride;
    size_t shot_stride, origin;
    float inv_dx, inv_dz;
};
struct F {
    float *ey, *hx, *hz;
};
struct M {
    const float *ca, *cb, *cq;
};
struct Box {
    int xa, xb, za, zb;
};

// reference: one node per thread, the CPU's loop bodies
__global__ void h_ref(G g, M m, F f) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const size_t c = g.origin + (size_t)iz * g.stride + ix, o = c + blockIdx.z * g.shot_stride;
    const int s = g.stride;
    const float* ey = f.ey + o;
    float dx = 0, dz = 0;
    for (int k = 0; k < R; ++k) {
        dx += coef(k) * (ey[k + 1] - ey[-k]);
        dz += coef(k) * (ey[(k + 1) * s] - ey[-k * s]);
    }
    dx *= g.inv_dx;
    dz *= g.inv_dz;
    f.hx[o] = f.hx[o] - m.cq[c] * dz;
    f.hz[o] = f.hz[o] + m.cq[c] * dx;
}
__global__ void e_ref(G g, M m, F f) {
    const int ix = blockIdx.x * blockDim.x + threadIdx.x, iz = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix >= g.nx || iz >= g.nz) return;
    const size_t c = g.origin + (size_t)iz * g.stride + ix, o = c + blockIdx.z * g.shot_stride;
    const int s = g.stride;
    const float* hx = f.hx + o;
    const float* hz = f.hz + o;
    float dx = 0, dz = 0;
    for (int k = 0; k < R; ++k) {
        dx += coef(k) * (hz[k] - hz[-k - 1]);
        dz += coef(k) * (hx[k * s] - hx[-(k + 1) * s]);
    }
    dx *= g.inv_dx;
    dz *= g.inv_dz;
    f.ey[o] = m.ca[c] * f.ey[o] + m.cb[c] * (dx - dz);
}

struct P4f {
    float v[4];
};
__device__ __forceinline__ P4f ld(const float* p) { return *reinterpret_cast<const P4f*>(p); }
__device__ __forceinline__ void st(float* p, const P4f& v) { *reinterpret_cast<P4f*>(p) = v; }

// this lane's 4 values and one lane's each side: w[4 + j] is column j of this lane
__device__ __forceinline__ void window(const P4f& v, float (&w)[12]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        w[4 + j] = v.v[j];
        w[j] = __shfl_up_sync(0xffffffffu, v.v[j], 1);
        w[8 + j] = __shfl_down_sync(0xffffffffu, v.v[j], 1);
    }
}
// Hx' = Hx - cq * Dz+[Ey] from the Ey rows q-R+1 .. q+R
__device__ __forceinline__ P4f hx_new(const G& g, const P4f& hx, const P4f& cq, const P4f* e) {
    P4f h;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float dz = 0;
#pragma unroll
        for (int k = 0; k < R; ++k) dz += coef(k) * (e[R + k].v[j] - e[R - 1 - k].v[j]);
        dz *= g.inv_dz;
        h.v[j] = hx.v[j] - cq.v[j] * dz;
    }
    return h;
}
// Hz' = Hz + cq * Dx+[Ey] at this row
__device__ __forceinline__ P4f hz_new(const G& g, const P4f& hz, const P4f& cq, const P4f& ey) {
    float e[12];
    window(ey, e);
    P4f h;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float dx = 0;
#pragma unroll
        for (int k = 0; k < R; ++k) dx += coef(k) * (e[4 + j + k + 1] - e[4 + j - k]);
        dx *= g.inv_dx;
        h.v[j] = hz.v[j] + cq.v[j] * dx;
    }
    return h;
}
// Ey' = ca * Ey + cb * (Dx-[Hz] - Dz-[Hx]), hx the Hx rows r-R .. r+R-1
__device__ __forceinline__ P4f ey_new(const G& g, const P4f& ey, const P4f& ca, const P4f& cb, const P4f& hz,
                                      const P4f* hx) {
    float h[12];
    window(hz, h);
    P4f e;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        float dx = 0, dz = 0;
#pragma unroll
        for (int k = 0; k < R; ++k) {
            dx += coef(k) * (h[4 + j + k] - h[4 + j - k - 1]);
            dz += coef(k) * (hx[R + k].v[j] - hx[R - 1 - k].v[j]);
        }
        dx *= g.inv_dx;
        dz *= g.inv_dz;
        e.v[j] = ca.v[j] * ey.v[j] + cb.v[j] * (dx - dz);
    }
    return e;
}

template <int HL>
struct Lane {
    bool active, owner;
    int z0, z1;
    ptrdiff_t col;
    size_t shot;
    __device__ Lane(const G& g, const Box& b, int L) {
        constexpr int U = 32 - 2 * HL;
        const int bands = (b.xb - b.xa + 4 * U - 1) / (4 * U);
        const int item = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, seg = item / bands, band = item - seg * bands;
        z0 = b.za + seg * L;
        z1 = min(z0 + L, b.zb);
        active = z0 < z1;
        const int lane = threadIdx.x & 31, c0 = b.xa + band * 4 * U + (lane - HL) * 4;
        owner = lane >= HL && lane < 32 - HL && c0 < b.xb;
        col = (ptrdiff_t)g.origin + c0;
        shot = blockIdx.y * g.shot_stride;
    }
    __device__ ptrdiff_t at(const G& g, int r) const { return col + (ptrdiff_t)r * g.stride; }
};

// one step (the engine's interior form)
template <int L>
__global__ void __launch_bounds__(128) one_step(G g, M m, Box b, F in, F out) {
    const Lane<1> w(g, b, L);
    if (!w.active) return;
    auto e_row = [&](int r) { return ld(in.ey + w.shot + w.at(g, r)); };
    P4f ew[2 * R], hw[2 * R];
#pragma unroll
    for (int i = 0; i < 2 * R - 1; ++i) ew[i] = e_row(w.z0 - 2 * R + 1 + i);
#pragma unroll
    for (int t = 0; t < 2 * R - 1; ++t) {
        ew[2 * R - 1] = e_row(w.z0 + t);
        const int q = w.z0 - R + t;
        hw[t] = hx_new(g, ld(in.hx + w.shot + w.at(g, q)), ld(m.cq + w.at(g, q)), ew);
#pragma unroll
        for (int i = 0; i < 2 * R - 1; ++i) ew[i] = ew[i + 1];
    }
    for (int r = w.z0; r < w.z1; ++r) {
        ew[2 * R - 1] = e_row(r + 2 * R - 1);
        const int q = r + R - 1;
        const P4f hxo = ld(in.hx + w.shot + w.at(g, q)), cqq = ld(m.cq + w.at(g, q));
        const P4f hzo = ld(in.hz + w.shot + w.at(g, r)), cq = ld(m.cq + w.at(g, r));
        const P4f ca = ld(m.ca + w.at(g, r)), cb = ld(m.cb + w.at(g, r));
        hw[2 * R - 1] = hx_new(g, hxo, cqq, ew);
        const P4f hz = hz_new(g, hzo, cq, ew[0]);
        const P4f ey = ey_new(g, ew[0], ca, cb, hz, hw);
        if (w.owner) {
            const size_t o = w.shot + w.at(g, r);
            st(out.hx + o, hw[R]);  // row r (hw holds r-R .. r+R-1)
            st(out.hz + o, hz);
            st(out.ey + o, ey);
        }
#pragma unroll
        for (int i = 0; i < 2 * R - 1; ++i) ew[i] = ew[i + 1], hw[i] = hw[i + 1];
    }
}

// the loads of one iteration of two_step (row i)
struct RowLoads {
    P4f ey, hx, cqh, hz, cq, ca, cb;
};

// two steps a pass; e1 (may be null) receives Ey^{n+1} at the owned nodes.
// PF: the next iteration's loads are issued before this one's arithmetic.
// MINB: blocks an SM the registers must allow (0: no bound).
template <int L, bool PF, int MINB>
__global__ void __launch_bounds__(128, MINB) two_step(G g, M m, Box b, F in, F out, float* e1) {
    const Lane<2> w(g, b, L);
    if (!w.active) return;
    auto e_row = [&](int r) { return ld(in.ey + w.shot + w.at(g, r)); };
    auto coef_row = [&](const float* a, int r) { return ld(a + w.at(g, r)); };
    auto row_loads = [&](int i) {
        const int q = i + R - 1;
        return RowLoads{e_row(i + 2 * R - 1), ld(in.hx + w.shot + w.at(g, q)), coef_row(m.cq, q),
                        ld(in.hz + w.shot + w.at(g, i)), coef_row(m.cq, i), coef_row(m.ca, i), coef_row(m.cb, i)};
    };
    P4f ew[2 * R];    // Ey^n rows i .. i+2R-1
    P4f hw[2 * R];    // Hx^{n+1/2} rows i-R .. i+R-1
    P4f zl[2 * R];    // Hz^{n+1/2} rows i-2R+1 .. i
    P4f e1w[2 * R];   // Ey^{n+1} rows i-2R+1 .. i
    P4f h2w[2 * R];   // Hx^{n+3/2} rows i-3R+1 .. i-R
    const int first = w.z0 - 4 * R + 2, last = w.z1 + 2 * R - 2;
#pragma unroll
    for (int k = 0; k < 2 * R - 1; ++k) ew[k] = e_row(first + k);
    RowLoads next{};
    if (PF) next = row_loads(first);
    for (int i = first; i <= last; ++i) {
        RowLoads cur;
        if (PF) {
            cur = next;
            if (i < last) next = row_loads(i + 1);
        } else {
            cur = row_loads(i);
        }
        ew[2 * R - 1] = cur.ey;
        // P1
        hw[2 * R - 1] = hx_new(g, cur.hx, cur.cqh, ew);
        // P2
        if (i >= w.z0 - 2 * R + 1) {
            zl[2 * R - 1] = hz_new(g, cur.hz, cur.cq, ew[0]);
            e1w[2 * R - 1] = ey_new(g, ew[0], cur.ca, cur.cb, zl[2 * R - 1], hw);
            if (e1 && w.owner && i >= w.z0 && i < w.z1) st(e1 + w.shot + w.at(g, i), e1w[2 * R - 1]);
        }
        // P3
        if (i >= w.z0) {
            const int a = i - R;
            h2w[2 * R - 1] = hx_new(g, hw[0], coef_row(m.cq, a), e1w);
            if (w.owner && a >= w.z0) st(out.hx + w.shot + w.at(g, a), h2w[2 * R - 1]);
        }
        // P4
        if (i >= w.z0 + 2 * R - 1) {
            const int r = i - 2 * R + 1;
            const P4f cq = coef_row(m.cq, r), ca = coef_row(m.ca, r), cb = coef_row(m.cb, r);
            const P4f hz = hz_new(g, zl[0], cq, e1w[0]);
            const P4f ey = ey_new(g, e1w[0], ca, cb, hz, h2w);
            if (w.owner) {
                const size_t o = w.shot + w.at(g, r);
                st(out.hz + o, hz);
                st(out.ey + o, ey);
            }
        }
#pragma unroll
        for (int k = 0; k < 2 * R - 1; ++k) {
            ew[k] = ew[k + 1];
            hw[k] = hw[k + 1];
            zl[k] = zl[k + 1];
            e1w[k] = e1w[k + 1];
            h2w[k] = h2w[k + 1];
        }
    }
}

__global__ void copy_kernel(const float4* a, float4* b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = a[i];
}

float* dalloc(size_t n) {
    float* p;
    CK(cudaMalloc(&p, n * 4));
    CK(cudaMemset(p, 0, n * 4));
    return p;
}
void upload(float* d, const std::vector<float>& h) { CK(cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice)); }
std::vector<float> download(const float* d, size_t n) {
    std::vector<float> h(n);
    CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
    return h;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        printf("usage: %s N SHOTS STEPS\n", argv[0]);
        return 2;
    }
    const int n = atoi(argv[1]), shots = atoi(argv[2]), steps = atoi(argv[3]) / 2 * 2;
    const int nx = n + 40, nz = n + 40;  // the engine's padded grid at CPML 20
    const int pad = 16;
    const int stride = (nx + 2 * pad + 3) / 4 * 4;
    G g{nx, nz, stride, (size_t)stride * (nz + 2 * pad), (size_t)pad * stride + pad, 1.f / 0.01f, 1.f / 0.01f};
    const size_t cells = g.shot_stride, tot = cells * shots;
    // the marched box: 8 columns and rows in from the grid's edges (whose
    // nodes the warps' halos read as the zero halo would be)
    const Box box1{0, nx, 0, nz}, box2{8, (nx - 8) / 4 * 4, 8, nz - 8};
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> ca(cells, 0.f), cb(cells, 0.f), cq(cells, 0.f);
    for (int iz = 0; iz < nz; ++iz)
        for (int ix = 0; ix < nx; ++ix) {
            const size_t i = g.origin + (size_t)iz * stride + ix;
            ca[i] = 0.99f - 1e-3f * ((ix * 7 + iz * 3) % 10);
            cb[i] = 1e-3f * (1 + (ix + iz) % 5);
            cq[i] = 1e-3f * (1 + (ix * 3 + iz) % 3);
        }
    float *dca = dalloc(cells), *dcb = dalloc(cells), *dcq = dalloc(cells);
    upload(dca, ca);
    upload(dcb, cb);
    upload(dcq, cq);
    const M m{dca, dcb, dcq};
    F ref{dalloc(tot), dalloc(tot), dalloc(tot)}, A{dalloc(tot), dalloc(tot), dalloc(tot)},
        B{dalloc(tot), dalloc(tot), dalloc(tot)};
    float* e1 = dalloc(tot);
    // random fields inside the grid (the halo stays zero)
    std::vector<float> init[3];
    for (auto& v : init) {
        v.assign(tot, 0.f);
        for (int s = 0; s < shots; ++s)
            for (int iz = 0; iz < nz; ++iz)
                for (int ix = 0; ix < nx; ++ix) v[s * cells + g.origin + (size_t)iz * stride + ix] = u(rng);
    }
    upload(ref.ey, init[0]), upload(ref.hx, init[1]), upload(ref.hz, init[2]);
    upload(A.ey, init[0]), upload(A.hx, init[1]), upload(A.hz, init[2]);
    const dim3 rb(32, 8), rg((nx + 31) / 32, (nz + 7) / 8, shots);
    auto grid_for = [&](const Box& b, int hl, int L) {
        const int u = 4 * (32 - 2 * hl), bands = (b.xb - b.xa + u - 1) / u;
        return dim3((bands * ((b.zb - b.za + L - 1) / L) + 3) / 4, shots);
    };
    // check: Ey^{n+1} and the fields at n+2 in the box, against two reference steps
    constexpr int LC = 32;
    two_step<LC, false, 0><<<grid_for(box2, 2, LC), 128>>>(g, m, box2, A, B, e1);
    h_ref<<<rg, rb>>>(g, m, ref);
    e_ref<<<rg, rb>>>(g, m, ref);
    CK(cudaDeviceSynchronize());
    const auto r1 = download(ref.ey, tot), t1 = download(e1, tot);
    h_ref<<<rg, rb>>>(g, m, ref);
    e_ref<<<rg, rb>>>(g, m, ref);
    CK(cudaDeviceSynchronize());
    const std::vector<float> ra[3] = {download(ref.ey, tot), download(ref.hx, tot), download(ref.hz, tot)};
    const std::vector<float> ta[3] = {download(B.ey, tot), download(B.hx, tot), download(B.hz, tot)};
    size_t differ[4] = {0, 0, 0, 0}, nodes = 0;
    for (int s = 0; s < shots; ++s)
        for (int iz = box2.za; iz < box2.zb; ++iz)
            for (int ix = box2.xa; ix < box2.xb; ++ix) {
                const size_t i = s * cells + g.origin + (size_t)iz * stride + ix;
                ++nodes;
                differ[0] += r1[i] != t1[i];
                for (int f = 0; f < 3; ++f) differ[f + 1] += ra[f][i] != ta[f][i];
            }
    printf("n=%d shots=%d: one two-step pass against two reference steps, %zu nodes: Ey^{n+1} %zu, Ey %zu, Hx %zu, "
           "Hz %zu differ\n",
           n, shots, nodes, differ[0], differ[1], differ[2], differ[3]);
    // timing
    cudaEvent_t a0, a1;
    cudaEventCreate(&a0);
    cudaEventCreate(&a1);
    auto time = [&](auto&& body) {
        float best = 1e30f;
        for (int rep = 0; rep < 3; ++rep) {
            cudaEventRecord(a0);
            body();
            cudaEventRecord(a1);
            CK(cudaEventSynchronize(a1));
            float ms;
            cudaEventElapsedTime(&ms, a0, a1);
            best = fminf(best, ms);
        }
        CK(cudaGetLastError());
        return best * 1e-3;
    };
    const double copy_s = time([&] { copy_kernel<<<1320, 512>>>((const float4*)A.hx, (float4*)B.hx, tot / 4); });
    printf("  copy bandwidth %.2f TB/s\n", 2.0 * tot * 4 / copy_s / 1e12);
    const double box1_cells = double(nx) * nz * shots;
    const double box2_cells = double(box2.xb - box2.xa) * (box2.zb - box2.za) * shots;
    auto report = [&](const char* what, double cells_per_step, double s) {
        printf("  %-44s %6.1f G cell-steps/s\n", what, cells_per_step * steps / s / 1e9);
    };
    report("one step a pass, 16-row segments", box1_cells,
           time([&] {
               for (int s = 0; s < steps; ++s) one_step<16><<<grid_for(box1, 1, 16), 128>>>(g, m, box1, s % 2 ? B : A, s % 2 ? A : B);
           }));
    auto two = [&](auto L, auto PF, auto MINB, bool keep) {
        constexpr int rows = decltype(L)::value, minb = decltype(MINB)::value;
        constexpr bool pf = decltype(PF)::value;
        char what[96];
        snprintf(what, sizeof what, "two steps a pass, %d-row segments%s%s%s", rows, pf ? ", prefetch" : "",
                 minb ? (minb == 5 ? ", 5 blocks/SM" : ", 3 blocks/SM") : "", keep ? ", Ey^{n+1} stored" : "");
        report(what, box2_cells, time([&] {
                   for (int s = 0; s < steps / 2; ++s)
                       two_step<rows, pf, minb><<<grid_for(box2, 2, rows), 128>>>(g, m, box2, s % 2 ? B : A,
                                                                                   s % 2 ? A : B, keep ? e1 : nullptr);
               }));
    };
    using std::integral_constant;
    using I16 = integral_constant<int, 16>;
    using I32 = integral_constant<int, 32>;
    using I64 = integral_constant<int, 64>;
    using No = std::false_type;
    using Yes = std::true_type;
    using B0 = integral_constant<int, 0>;
    using B3 = integral_constant<int, 3>;
    using B5 = integral_constant<int, 5>;
    two(I16{}, No{}, B0{}, false);
    two(I32{}, No{}, B0{}, false);
    two(I64{}, No{}, B0{}, false);
    two(I16{}, No{}, B5{}, false);
    two(I32{}, No{}, B5{}, false);
    two(I64{}, No{}, B5{}, false);
    two(I16{}, Yes{}, B0{}, false);
    two(I32{}, Yes{}, B0{}, false);
    two(I64{}, Yes{}, B0{}, false);
    two(I16{}, Yes{}, B3{}, false);
    two(I32{}, Yes{}, B3{}, false);
    two(I32{}, Yes{}, B0{}, true);
    two(I64{}, Yes{}, B0{}, true);
    return 0;
}
