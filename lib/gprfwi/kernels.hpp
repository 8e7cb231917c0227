#pragma once
// Declarations of the propagator kernels. The time loop calls only these;
// kernels/cpu/ implements them with OpenMP loops (the reference backend) and
// kernels/cuda/ on the GPU.
//
// All arrays use the PaddedGrid layout (rows of `stride`, zero halo of
// kMaxHalo nodes that no kernel writes). A batch of shots stores shot s of an
// array at offset s * shot_stride.
//
// Forward step (PHYSICS.md), for every padded node:
//   psi_ey_z = b_z,h*psi_ey_z + a_z,h*Dz+[Ey];   Hx -= cq*(Dz+[Ey]/kappa_z,h + psi_ey_z)
//   psi_ey_x = b_x,h*psi_ey_x + a_x,h*Dx+[Ey];   Hz += cq*(Dx+[Ey]/kappa_x,h + psi_ey_x)
//   psi_hz_x = b_x*psi_hz_x + a_x*Dx-[Hz];       psi_hx_z = b_z*psi_hx_z + a_z*Dz-[Hx]
//   Ey = ca*Ey + cb*(Dx-[Hz]/kappa_x + psi_hz_x - Dz-[Hx]/kappa_z - psi_hx_z)
// followed by the source term Ey -= cb*I*w/(dx*dz) at the source weights.
//
// Adjoint step: the transpose of the above, in reverse order, using
// Dx+^T = -Dx- (see stencil.hpp). With lambda_* the adjoint fields and mu_*
// the adjoints of the CPML memory variables:
//   pass 1 (E nodes):  t = cb*lambda_ey
//                      m_x = mu_hz_x + t;  q_x = t/kappa_x + a_x*m_x;  mu_hz_x = b_x*m_x
//                      m_z = mu_hx_z - t;  q_z = -t/kappa_z + a_z*m_z; mu_hx_z = b_z*m_z
//                      lambda_ey = ca*lambda_ey
//   pass 2 (H nodes):  lambda_hz -= Dx+[q_x];  lambda_hx -= Dz+[q_z]
//                      s_x = cq*lambda_hz:  m = mu_ey_x + s_x; p_x = s_x/kappa_x,h + a_x,h*m; mu_ey_x = b_x,h*m
//                      s_z = -cq*lambda_hx: m = mu_ey_z + s_z; p_z = s_z/kappa_z,h + a_z,h*m; mu_ey_z = b_z,h*m
//   pass 3 (E nodes):  lambda_ey -= Dx-[p_x] + Dz-[p_z]
// Imaging (before pass 1, which scales lambda_ey), with weight w_img, summed
// over the batch's shots in shot order into one accumulator per node:
//   g_ey_prev += w_img * lambda_ey^{n+1} * Ey^n        (= dJ/dca)
//   g_ey_next += w_img * lambda_ey^{n+1} * Ey^{n+1}    (dJ/dcb = (g_ey_next - ca*g_ey_prev)/cb)

#include <cstddef>
#include <cstdint>

#include "gprfwi/cuda_tuning.hpp"
#include "gprfwi/storage.hpp"

namespace gprfwi::kernels {

/// Grid sizes and inverse spacings (1/m).
template <typename T>
struct GridParams {
    int nx = 0, nz = 0;           // padded nodes
    int stride = 0;               // values per stored row
    std::size_t shot_stride = 0;  // values per shot
    std::size_t origin = 0;       // storage index of node (0, 0)
    int n_shots = 0;
    T inv_dx = 0, inv_dz = 0;
};

/// ca, cb at E nodes and cq at H nodes (shared by all shots).
template <typename T>
struct MaterialView {
    const T* ca;
    const T* cb;
    const T* cq;
    /// Non-zero when every node's cq has this value (a non-magnetic model):
    /// the CUDA step's interior then reads no cq.
    T cq_uniform = 0;
};

/// CPML profile along one axis, as in CpmlAxisProfile.
template <typename T>
struct CpmlAxis {
    const T* inv_kappa_int;
    const T* a_int;
    const T* b_int;
    const T* inv_kappa_half;
    const T* a_half;
    const T* b_half;
    int strip_low_end;     // psi may be non-zero for nodes < strip_low_end
    int strip_high_begin;  // ... and for nodes >= strip_high_begin
};

/// Electric and magnetic fields with their CPML memory variables.
/// psi_ey_x, psi_ey_z live at Hz and Hx nodes; psi_hz_x, psi_hx_z at Ey nodes.
/// On the GPU, the forward of a gradient with bf16 levels in single precision
/// may keep Ey as two 16-bit planes: its upper halves in `ey_hi` (the kept
/// level itself, storage.hpp), its lower halves in the first half of `ey`'s
/// bytes; null otherwise.
template <typename T>
struct TmFields {
    T* ey;
    T* hx;
    T* hz;
    T* psi_ey_x;
    T* psi_ey_z;
    T* psi_hz_x;
    T* psi_hx_z;
    std::uint16_t* ey_hi = nullptr;
};

/// Intermediate adjoint quantities q (at E nodes) and p (at H nodes).
template <typename T>
struct AdjointScratch {
    T* q_x;
    T* q_z;
    T* p_x;
    T* p_z;
};

/// The stored Ey levels an imaging step reads (shots one shot stride apart),
/// with its accumulation weight, and the accumulators: one value per node
/// (shot_stride values), to which each step adds its shots in shot order. A
/// level that is not stored (Ey^0 = 0, or skipped by a snapshot interval) is
/// nullptr.
template <typename T, typename Stored>
struct ImagingView {
    const Stored* ey_prev;  // Ey^n
    const Stored* ey_next;  // Ey^{n+1}
    double weight;
    double* g_ey_prev;  // per node
    double* g_ey_next;
    const double* scale_prev = nullptr;  // per shot, for scaled storage (fp8)
    const double* scale_next = nullptr;
    /// When non-null, per node: += w * (Ey^{n+1})^2 of every shot, the forward
    /// field's energy that illumination preconditioning divides by.
    double* illumination = nullptr;
};

/// The Born (tangent-linear) step's scattering term: the perturbation
/// (dca, dcb) of the coefficients acting on the background field. With
/// r = dcb/cb (0 where cb is 0, the halo), after the perturbed fields' own H
/// and E updates (no source term):
///   dEy^{n+1} += dca*Ey^n + r*(Ey^{n+1} - ca*Ey^n)
/// where Ey^{n+1} - ca*Ey^n = cb*(curlH - J) includes the source term, whose
/// weights hold cb. The per-node arrays are shared by the shots.
template <typename T>
struct BornScatter {
    const T* ca;
    const T* dca;
    const T* dcb_over_cb;
    const T* ey_prev;  // Ey^n, batch
    const T* ey_next;  // Ey^{n+1}, batch
    T* d_ey;           // dEy, batch
};

/// What the second-order adjoint's pass 1 adds to the first-order pass 1 on
/// its fields (the transpose of the Born scattering, driven by the first-
/// order adjoint field lambda_ey^{n+1}, read before its own pass 1):
///   t = cb*lambda2 + dcb*lambda_ey;   lambda2 <- ca*lambda2 + dca*lambda_ey
template <typename T>
struct BornCoupling {
    const T* dca;        // per node
    const T* dcb;        // per node
    const T* lambda_ey;  // batch
};

namespace cpu {

/// BornScatter's update for every shot.
template <typename T>
void born_scatter(const GridParams<T>& g, const BornScatter<T>& b);

/// Adjoint pass 1 of the second-order adjoint (BornCoupling).
template <typename T>
void second_order_e_prepare(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                            const CpmlAxis<T>& z, const TmFields<T>& adj, const AdjointScratch<T>& s,
                            const BornCoupling<T>& lin);

/// H^{n-1/2} -> H^{n+1/2} for every shot. Reads Ey; ~(3 + 2 psi) loads, 2 stores per cell.
template <typename T, int ORDER>
void update_h(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
              const CpmlAxis<T>& z, const TmFields<T>& f);

/// Ey^n -> Ey^{n+1} (without the source term) for every shot.
template <typename T, int ORDER>
void update_e(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
              const CpmlAxis<T>& z, const TmFields<T>& f);

/// The imaging condition of one adjoint step (before pass 1), of shots
/// [shot_begin, shot_end) (a shot group's, into its own sums).
template <typename T, typename Stored>
void imaging_condition(const GridParams<T>& g, const T* lambda_ey, const ImagingView<T, Stored>& img, int shot_begin,
                       int shot_end);

/// Adjoint pass 1.
template <typename T>
void adjoint_e_prepare(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                       const CpmlAxis<T>& z, const TmFields<T>& adj, const AdjointScratch<T>& s);

/// Adjoint pass 2.
template <typename T, int ORDER>
void adjoint_h(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
               const CpmlAxis<T>& z, const TmFields<T>& adj, const AdjointScratch<T>& s);

/// Adjoint pass 3.
template <typename T, int ORDER>
void adjoint_e_finish(const GridParams<T>& g, const TmFields<T>& adj, const AdjointScratch<T>& s);

}  // namespace cpu

/// Sparse point operators of a batch, flattened for the GPU.
struct SparseOperators {
    // source term: Ey[shot][index] += weight * wavelet[shot][m]
    int n_source_points = 0;
    const int* source_shot;
    const std::size_t* source_index;
    const double* source_weight;
    // receiver rows (one per shot and receiver), CSR over their weights
    int n_rows = 0;
    const int* row_shot;
    const int* row_begin;            // n_rows + 1
    const std::size_t* row_index;
    const double* row_weight;
    // the transpose of the sampling, grouped by node: node j adds, in order,
    // weight * adjoint_source[row] for its entries [node_begin[j], node_begin[j+1])
    int n_nodes = 0;
    const int* node_shot;
    const std::size_t* node_index;
    const int* node_begin;           // n_nodes + 1
    const int* node_row;
    const double* node_weight;
    // the source term's transpose, per shot, CSR over the shot's source points
    int n_shots = 0;
    const int* shot_source_begin;    // n_shots + 1, into the source arrays
};

namespace cuda {

/// cudaStream_t without including the CUDA headers.
using Stream = struct CUstream_st*;

/// A forward step's source term, inject_sources' arguments. `interior`: every
/// source point lies in the step's interior (step_interior_contains), so that
/// step may add the term in its last launch instead of one of its own.
struct StepSources {
    SparseOperators op;
    const double* wavelets;
    int nt;
    int m;
    bool interior;
};

/// Receiver samples taken by a step, beside its own work, of the Ey it reads
/// (the previous step's result): sample_receivers' arguments.
struct StepSamples {
    SparseOperators op;
    double* traces;
    int nt;
    int m;
};

/// cpu::update_h then cpu::update_e, then the source term when `sources` is
/// non-null, reading Ey, Hx, Hz and psi_ey_z from `in` and writing them to
/// `out`, which must be other arrays (warps recompute rows their neighbours
/// own); the other CPML memories, the same arrays in both, are updated in
/// place. Also writes Ey^{n+1} to `keep` (a kept level) when non-null, and
/// samples `in.ey` into the traces when `samples` is non-null. With
/// `out.ey_hi` (and `in.ey_hi`: single precision, bf16 levels) Ey is two
/// planes and `out.ey_hi` is the kept level, `keep` then unused.
template <typename T, int ORDER, typename Stored>
void step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
          const TmFields<T>& in, const TmFields<T>& out, Stored* keep, const StepSources* sources,
          const StepSamples* samples, const CudaTuning& tuning, Stream stream);

/// A Born run's perturbation step: step<T, ORDER, T> without sources or a
/// kept level, each Ey^{n+1} then taking the scattering term `born` (its
/// d_ey unused: `out.ey` is the perturbation's Ey), bitwise as
/// cpu::born_scatter after the step.
template <typename T, int ORDER>
void born_step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
               const TmFields<T>& in, const TmFields<T>& out, const StepSamples* samples, const BornScatter<T>& born,
               const CudaTuning& tuning, Stream stream);

/// Two steps (n -> n + 2) of step<T, ORDER, T> (no level stored besides), from
/// `in` through `mid` (the first step's fields, another buffer like `out`:
/// its own Ey, Hx, Hz and psi_ey_z, the other memories shared) into `out`;
/// deep in the interior the two steps are one pass over the fields. Ey of
/// both steps is written at every node, so `mid.ey` and `out.ey` may be kept
/// levels (a gradient's forward whose levels are its Ey). The
/// sources (`first` of step n, `second` of n + 1) must lie in the interior
/// (StepSources::interior). Samples `in.ey` when `samples_in` is non-null and
/// `mid.ey` always.
template <typename T, int ORDER>
void step_pair(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
               const TmFields<T>& in, const TmFields<T>& mid, const TmFields<T>& out, const StepSources& first,
               const StepSources& second, const StepSamples* samples_in, const StepSamples& samples_mid,
               const CudaTuning& tuning, Stream stream);

/// Whether the forward steps in pairs (step_pair) on this grid: where they
/// pay (large grids, stencils 2 and 4), or as `tuning.pair_rows` asks.
template <typename T, int ORDER>
bool step_pair_applies(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, const CudaTuning& tuning);

/// The share of the grid's nodes that step_pair steps two a pass.
template <typename T, int ORDER>
double step_pair_share(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z);

/// Whether the node at storage index `index` (of a shot) lies in the
/// interior of step<T, ORDER>: the nodes updated in its first launch, whose
/// stencils reach no CPML node.
template <typename T, int ORDER>
bool step_interior_contains(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, std::size_t index);

/// f's Ey += source weights * wavelet[m] (wavelets [shot][nt_internal]); updates `keep` too
/// (with f.ey_hi, Ey is two planes, the upper one the level: `keep` unused).
template <typename T, typename Stored>
void inject_sources(const GridParams<T>& g, const SparseOperators& op, const double* wavelets,
                    int nt_internal, int m, const TmFields<T>& f, Stored* keep, Stream stream);

/// traces[row][m] = receiver weights . f's Ey (traces [row][nt_internal]; two planes with f.ey_hi).
template <typename T>
void sample_receivers(const GridParams<T>& g, const SparseOperators& op, const TmFields<T>& f, double* traces,
                      int nt_internal, int m, Stream stream);

/// lambda_ey += receiver weights * adjoint_source[row][m], per node in CPU order.
template <typename T>
void inject_adjoint_sources(const GridParams<T>& g, const SparseOperators& op, const double* adjoint_source,
                            int nt_internal, int m, T* lambda_ey, const CudaTuning& tuning, Stream stream);

/// The sparse work of adjoint step m beside its own: grad_wavelet[shot][m] =
/// source weights . the lambda_ey it reads (with step m's adjoint source
/// added); when m > 0, also step m - 1's adjoint source added to the
/// lambda_ey it writes, which that step then must not add again
/// (inject_adjoint_sources' arguments; the receiver nodes in (shot, index)
/// order, and `frame_first_node` the map of adjoint_frame_pack: per shot and
/// pack of the adjoint step's frame, the first receiver node in it, or -1).
struct AdjointSparse {
    SparseOperators op;
    double* grad_wavelet;          // [shot][nt_internal]
    const double* adjoint_source;  // [row][nt_internal]
    int nt;
    int m;
    const int* frame_first_node;  // [shot][frame pack]
};

/// Imaging in pairs of adjoint steps: a launch images its own step m at
/// the rows `first_row`, `first_row + row_step`, ... only, and at those of
/// them with iz % 2 == later_parity first step m + 1, which the launch
/// before left there (`later`: its levels, none where ey_prev and ey_next
/// are nullptr; weight and accumulators: the step's own) with the lambda_ey
/// that launch read, `later_lambda`. Each node's accumulators are so read
/// and written once for two steps, and still take the steps in the CPU's
/// order. The caller keeps later_lambda unwritten by the launch (a third
/// lambda_ey array) and has every row take every step once: the rows of
/// m's parity in the launch of step m, all rows in the last launch whose
/// levels are resident.
template <typename T, typename Stored>
struct PairedImaging {
    int first_row = 0, row_step = 1;
    int later_parity = 0;
    ImagingView<T, Stored> later{};
    const T* later_lambda = nullptr;
};

/// Adjoint step m: cpu::imaging_condition (when `img` is non-null and reads
/// a level; at the rows of `pair`, after the step it left there, when
/// non-null), then cpu::adjoint_e_prepare, adjoint_h and adjoint_e_finish,
/// reading lambda_ey, lambda_hx, lambda_hz, psi_hx_z and psi_ey_z from `in`
/// and writing them to `out`, which must be other arrays (the other CPML
/// memories, the same arrays in both, in place), and the sparse work of
/// `sparse`; `s` (q and p) is used only near CPML strips too wide for the
/// step's tiles (x strips of more than ~150 float or ~70 double columns).
template <typename T, int ORDER, typename Stored>
void adjoint_step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
                  const TmFields<T>& in, const TmFields<T>& out, const AdjointScratch<T>& s,
                  const ImagingView<T, Stored>* img, const PairedImaging<T, Stored>* pair,
                  const AdjointSparse& sparse, const CudaTuning& tuning, Stream stream);

/// One step of the second-order adjoint's coupled field f, in place, as the
/// CPU runs it: cpu::second_order_e_prepare (reading `coupling`'s
/// lambda_ey), adjoint_h and adjoint_e_finish, each a launch over the whole
/// grid. `s` (q and p, zero halos) is written and read in full. (The
/// adjoint it couples to takes the fused adjoint_step.)
template <typename T, int ORDER>
void second_order_passes(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x,
                         const CpmlAxis<T>& z, const TmFields<T>& f, const AdjointScratch<T>& s,
                         const BornCoupling<T>& coupling, Stream stream);

/// The second-order adjoint's derivative sums at one step, per node in the
/// CPU's order (cpu's second and third imaging_condition calls): dlambda_ey
/// with e's levels (Ey), then lambda_ey with de's (dEy, of the same steps),
/// into e's accumulators. Nothing where e has no level.
template <typename T, typename Stored>
void second_order_imaging(const GridParams<T>& g, const T* lambda_ey, const T* dlambda_ey,
                          const ImagingView<T, Stored>& e, const ImagingView<T, Stored>& de, Stream stream);

/// Whether adjoint_step<T, ORDER> uses the scratch arrays q and p and the
/// map of frame receiver nodes (AdjointSparse::frame_first_node): only when
/// its x strips are too wide for its tiles. Reads only the axes' strips.
template <typename T, int ORDER>
bool adjoint_uses_scratch(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z);

/// The packs (of 16 bytes) of adjoint_step<T, ORDER>'s frame, the nodes its
/// first launch does not finish when its x strips are too wide for tiles,
/// in one shot; and the frame pack that holds the node at storage index
/// `index` (of a shot), or -1 for a node of the interior.
template <typename T, int ORDER>
int adjoint_frame_packs(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z);
template <typename T, int ORDER>
int adjoint_frame_pack(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, std::size_t index);

/// Zeroes every stored value outside the grid's nodes (the halo rows and
/// columns, and the rows' padding) of `copies` consecutive shot arrays of
/// `value_bytes`-byte values (1, 2, 4 or 8) from `base`: what the steps read
/// beyond the grid's edges and never write.
template <typename T>
void zero_halos(const GridParams<T>& g, void* base, int value_bytes, std::size_t copies, Stream stream);

/// level = Ey in the storage type (bf16 or T itself), for the whole batch.
template <typename T, typename Stored>
void store_level(const GridParams<T>& g, const T* ey, Stored* level, Stream stream);

/// Keeps Ey as fp8 in `level`, with scales[shot] = max |Ey| / 448 of each shot
/// (1 for a zero field); `max_scratch` holds n_shots values.
template <typename T>
void keep_level_fp8(const GridParams<T>& g, const T* ey, Fp8* level, double* scales,
                    unsigned long long* max_scratch, Stream stream);

/// Sets flags[shot] to `stamp` where any value of the shot's Ey in `f` is
/// NaN or Inf (flags may be mapped host memory; the others are left as they
/// are); with f.ey_hi, Ey is two planes and only the upper one is read.
template <typename T>
void flag_non_finite(const GridParams<T>& g, const TmFields<T>& f, int* flags, int stamp, const CudaTuning& tuning,
                     Stream stream);

}  // namespace cuda
}  // namespace gprfwi::kernels
