#pragma once
// The propagator interface the application calls: forward traces, misfit and
// gradient, and a memory estimate, for a batch of shots that share one model.
// Backends (CPU now, CUDA next) hide behind it.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/cpml.hpp"
#include "gprfwi/cuda_tuning.hpp"
#include "gprfwi/misfit.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/names.hpp"
#include "gprfwi/point_weights.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

enum class Precision { single, double_precision };
enum class BackendKind { automatic, cpu, cuda };
/// How forward wavefields are kept for the gradient: their storage type...
enum class SnapshotCompression { none, bf16, fp8 };
/// ... and where a GPU backend keeps them: in its own memory, in pinned host
/// memory (copied on a second stream, overlapped with the time loop), or
/// `automatic`: the device when they fit, else the host; or in a scratch
/// folder on disk. The CPU backend keeps them in host memory whatever this says.
enum class SnapshotStorage { automatic, device, host, disk };

inline constexpr NameTable<Precision, 2> kPrecisionNames{
    "precision", {{{Precision::single, "single"}, {Precision::double_precision, "double"}}}};
inline constexpr NameTable<BackendKind, 3> kBackendNames{
    "backend", {{{BackendKind::automatic, "auto"}, {BackendKind::cpu, "cpu"}, {BackendKind::cuda, "cuda"}}}};
inline constexpr NameTable<SnapshotCompression, 3> kCompressionNames{
    "snapshot compression",
    {{{SnapshotCompression::none, "none"}, {SnapshotCompression::bf16, "bf16"}, {SnapshotCompression::fp8, "fp8"}}}};
inline constexpr NameTable<SnapshotStorage, 4> kStorageNames{"snapshot storage",
                                                             {{{SnapshotStorage::automatic, "auto"},
                                                               {SnapshotStorage::device, "device"},
                                                               {SnapshotStorage::host, "host"},
                                                               {SnapshotStorage::disk, "disk"}}}};

Precision parse_precision(const std::string& name);
BackendKind parse_backend(const std::string& name);
SnapshotCompression parse_compression(const std::string& name);
SnapshotStorage parse_storage(const std::string& name);
const char* to_string(SnapshotStorage s);
const char* to_string(Precision p);
const char* to_string(BackendKind b);
const char* to_string(SnapshotCompression c);
/// The backend a run with `requested` gets here: `automatic` is CUDA where a
/// GPU is visible, else the CPU.
BackendKind resolve_backend(BackendKind requested);

struct SnapshotOptions {
    /// Keep the forward field every `interval` internal steps. 1 is exact;
    /// larger values approximate the time integral of the imaging condition
    /// (opt-in; the error is documented in docs/gradient.md). 0 selects
    /// auto_snapshot_interval() for the batch.
    int interval = 1;
    /// Storage type of the kept fields. bf16 halves (float) or quarters
    /// (double) the memory; fp8 (E4M3 with a scale per level and shot)
    /// quarters it (float); both approximate, opt-in.
    SnapshotCompression compression = SnapshotCompression::none;
    SnapshotStorage storage = SnapshotStorage::automatic;
    /// Folder for `disk` storage (a subfolder per run is made there and always
    /// removed); empty selects $TMPDIR, else /tmp.
    std::string scratch_dir;
    /// Exact gradient in bounded memory: 0 keeps every level (as above); C > 0
    /// keeps the full forward state every C internal steps instead, and the
    /// adjoint recomputes each segment's levels from its checkpoint (two-level
    /// checkpointing: one extra forward run, memory for nt/C states and C
    /// levels); -1 picks C = sqrt(7 nt), which balances the two. Needs
    /// interval 1.
    int checkpoint_steps = 0;
    /// Exact gradient in O(log nt) memory: S > 0 saved forward states,
    /// scheduled by binomial checkpointing (lib/gprfwi/checkpoint_schedule.hpp:
    /// every level recomputed from the nearest saved state, about log2(nt)/2
    /// extra forward runs with S = log2 nt); -1 picks S = ceil(log2 nt); 0
    /// off. Needs interval 1 and excludes checkpoint_steps.
    int binomial_slots = 0;
};

/// When a call compares its model with the copy of a model that came again,
/// which its workspace keeps (PropagationSetup::build): `before` its time
/// loops, or `during` them: where a sample of the nodes agrees
/// (same_bits_sampled), the loops start with the kept coefficients while the
/// host compares the rest, and the call runs again with the model's own
/// coefficients where it finds a difference; its results are the same
/// either way. `automatic`: during, where the backend's loops leave the
/// host's cores free (a GPU), else before.
enum class ModelComparison { automatic, before, during };

/// The most shot groups a batch may run as (PropagatorOptions::shot_groups).
inline constexpr int kMaxShotGroups = 64;

struct PropagatorOptions {
    BackendKind backend = BackendKind::automatic;
    Precision precision = Precision::single;
    int stencil_order = 4;  // 2, 4, 6 or 8
    CpmlOptions cpml;
    PointInterpolation interpolation = PointInterpolation::sinc;
    SnapshotOptions snapshots;
    /// When the survey's dt exceeds the CFL limit: take internal sub-steps
    /// (true) or throw UnstableTimeStep (false).
    bool allow_substeps = true;
    /// Check the wavefields for NaN/Inf every this many internal steps (0: only
    /// at the first and last step).
    int blowup_check_interval = 64;
    /// CUDA device; < 0 selects the MPI local rank modulo the device count.
    int device = -1;
    /// Called from the time loops' host thread every 256 internal steps and at
    /// the last, with the phase ("forward" or "adjoint"), the steps done and
    /// the steps in all; empty: no reports. For progress displays.
    std::function<void(const char* phase, int done, int total)> progress;
    /// Shot groups a batch runs as (resolve_shot_groups in engine.hpp): 0
    /// automatic, else that many (at most one a shot). On a GPU the groups'
    /// time loops run at once; the groups change only the order in which a
    /// gradient adds the shots' terms, the same on every backend.
    int shot_groups = 0;
    /// gradient() also returns the forward field's energy per model node
    /// (GradientResult::illumination), for illumination preconditioning.
    bool illumination = false;
    ModelComparison model_comparison = ModelComparison::automatic;
    /// The CUDA backend's knobs, for measurements and tests (docs/gpu.md).
    CudaTuning cuda;

    void validate() const;
};

/// The internal time axis chosen for a model and survey.
struct TimeStepping {
    double dt_user = 0;      // s
    double dt_max = 0;       // s, CFL limit of the stencil on this grid and model
    int ratio = 1;           // internal steps per user sample
    double dt_internal = 0;  // s
    int nt_internal = 0;
};

/// The largest snapshot interval that keeps the imaging product (up to twice
/// the highest frequency of the wavelets, where their spectra fall to 1% of
/// the peak) above its Nyquist rate: floor(1 / (4 f_max dt_internal)), at
/// least 1. Code that splits a survey into batches evaluates it on the whole
/// survey and sets the interval, so batches agree.
int auto_snapshot_interval(const Survey& survey, double dt_internal);

/// `options` with the choices that default to per-batch values fixed from the
/// whole model and survey: the CPML reference velocity (fastest velocity of
/// the model), its tuning frequency (largest dominant frequency of the
/// wavelets) and an automatic snapshot interval. Call it once, before
/// splitting shots into batches (or ranks) or updating the model, so that
/// every batch computes the same function and the gradient stays exact.
PropagatorOptions fix_survey_wide_options(PropagatorOptions options, const Model& model, const Survey& survey);

/// dt_max = 1 / (v_max * sqrt(1/dx^2 + 1/dz^2) * sum|c_k|); ratio = ceil(dt/dt_max).
/// Throws UnstableTimeStep (showing the limit) when dt > dt_max and
/// sub-steps are not allowed.
TimeStepping plan_time_stepping(const Model& model, const Survey& survey, int stencil_order,
                                bool allow_substeps);
/// The same from sizes alone: min eps_r*mu_r of the model, dt in s, nt samples.
TimeStepping plan_time_stepping(const Grid& grid, double min_eps_mu, double dt, int nt, int stencil_order,
                                bool allow_substeps);

struct GradientResult {
    double misfit = 0.0;
    Array2D grad_eps_r;  // dJ/d eps_r on the model grid [nz][nx]
    Array2D grad_sigma;  // dJ/d sigma, per S/m
    std::vector<std::vector<double>> grad_wavelet;  // dJ/d wavelet[shot][n], per A
    Traces synthetic;
    /// With options.illumination: sum over shots and internal steps n of
    /// (Ey^{n+1})^2 * (snapshot interval) per model node, (V/m)^2 (edge nodes
    /// hold their CPML strips too); else empty.
    Array2D illumination;
};

/// A model perturbation, or a direction in model space, on the model grid
/// [nz][nx]: d eps_r (dimensionless) and d sigma (S/m).
struct ModelDirection {
    Array2D eps_r, sigma;
};

/// The Hessian a product applies: the misfit's full second derivative with
/// respect to (eps_r, sigma), or its Gauss-Newton part J^T H_d J (J the
/// traces' derivative, H_d the misfit's Hessian in data space).
enum class HessianKind { full, gauss_newton };

struct HessianResult {
    double misfit = 0;
    Array2D hv_eps_r;  // (H v) per model node, per unit eps_r
    Array2D hv_sigma;  // per S/m
    Traces synthetic;  // the traces at the model
    Traces born;       // their derivative along v (J v)
};

/// Wall-clock seconds of the phases of the last forward or gradient call.
struct RunTimings {
    double setup_s = 0;    // coefficients, CPML, weights, device allocation and upload
    double build_s = 0;    // ... of which on the host: coefficients, CPML, weights (PropagationSetup)
    double forward_s = 0;  // forward time loop, traces back to the host
    double adjoint_s = 0;  // adjoint time loop, gradients back to the host
    double other_s = 0;    // misfit, resampling, chain rule, folding
    std::string level_storage;  // where the kept forward levels lived
    int imaging_steps = 1;      // adjoint steps the imaging condition took at once (EngineNotes)
    double forward_paired_share = 0;  // of the nodes, stepped two a pass (EngineNotes)
    int shot_groups = 1;              // the batch's shot groups (resolve_shot_groups)
    /// A Hessian-vector product read its background from the levels kept by
    /// the product before it at the same model (no forward steps).
    bool background_kept = false;
    /// The call took the last call's coefficients as they were: its model
    /// came again (PropagationSetup::build).
    bool coefficients_kept = false;
    /// The call's loops ran twice: they started with the coefficients kept
    /// for a model whose sample agreed with the call's, and the comparison
    /// during them found a difference (PropagatorOptions::model_comparison).
    bool ran_again = false;
};

/// The memory a call holds, from its backend's memory plan (memory_plan.hpp):
/// on a GPU its device memory, on the CPU the host memory of its engine and
/// of the call's traces.
struct MemoryEstimate {
    std::size_t fields_bytes = 0;     // wavefields, memory variables, coefficients, CPML, point operators
    std::size_t snapshot_bytes = 0;   // forward levels kept for the gradient, checkpoints
    std::size_t traces_bytes = 0;     // traces and wavelets at the internal rate
    /// Kept levels a GPU holds in page-locked host memory (storage: host; with
    /// storage: disk, the slots they pass through), not in total().
    std::size_t host_snapshot_bytes = 0;
    std::size_t total() const { return fields_bytes + snapshot_bytes + traces_bytes; }
    MemoryEstimate& operator+=(const MemoryEstimate& o) {
        fields_bytes += o.fields_bytes;
        snapshot_bytes += o.snapshot_bytes;
        traces_bytes += o.traces_bytes;
        host_snapshot_bytes += o.host_snapshot_bytes;
        return *this;
    }
};

class Propagator {
public:
    virtual ~Propagator() = default;
    virtual std::string name() const = 0;
    const PropagatorOptions& options() const { return options_; }
    /// Whether gradient() also computes the illumination (options.illumination).
    void set_illumination(bool on) { options_.illumination = on; }

    /// Ey traces of every shot.
    virtual Traces forward(const Model& model, const Survey& survey) = 0;

    /// Misfit of the synthetic data and its exact gradient with respect to
    /// eps_r, sigma and the wavelets.
    virtual GradientResult gradient(const Model& model, const Survey& survey, const Misfit& misfit) = 0;

    /// The same with J = 1/2 * sum (synthetic - observed)^2.
    GradientResult gradient(const Model& model, const Survey& survey, const Traces& observed);

    /// Born (tangent-linear) modelling: the derivative of the Ey traces of
    /// every shot along the model perturbation dm, J dm, exact for the
    /// discrete propagator (the transpose of gradient()'s map from the data
    /// to the model).
    virtual Traces born(const Model& model, const Survey& survey, const ModelDirection& dm) = 0;

    /// The misfit and the product of its Hessian with respect to eps_r and
    /// sigma (full or Gauss-Newton) with the direction v: one Born run beside
    /// the forward, then the (second-order) adjoint. Full products need every
    /// level kept (no checkpointing; on the CUDA backend all on the device,
    /// with the Born run's as many again: InvalidArgument for host or disk
    /// levels).
    virtual HessianResult hessian(const Model& model, const Survey& survey, const Misfit& misfit,
                                  const ModelDirection& v, HessianKind kind) = 0;

    /// Makes ready what a forward (gradient = false) or gradient call on this
    /// model's grid and this survey's shapes would make at its start (device
    /// memory, page-locked buffers, engines, the first uploads), so that the
    /// call pays only what a warm call pays. A caller runs it beside its own
    /// work before its first call (the command line while it reads the
    /// observed data); the call may then bring another model or survey, and
    /// its results do not depend on what was reserved. The base does nothing.
    virtual void reserve(const Model& model, const Survey& survey, bool gradient);

    /// Bytes a forward (gradient = false) or gradient run of this batch
    /// needs: its backend's memory plan (memory_plan.hpp).
    virtual MemoryEstimate estimate_memory(const Model& model, const Survey& survey,
                                           bool gradient) const = 0;

    /// Largest device memory one run of this propagator has held (0 on the CPU).
    virtual std::size_t peak_device_bytes() const { return 0; }
    /// The memory its workspace holds now (a GPU's device memory; the CPU
    /// engine's host memory), which a call's memory plan counts.
    virtual std::size_t workspace_bytes() const { return 0; }

    /// Phases of the last forward or gradient call.
    const RunTimings& last_timings() const { return timings_; }

protected:
    explicit Propagator(const PropagatorOptions& options) : options_(options) {}
    PropagatorOptions options_;
    RunTimings timings_;
};

/// The propagator for options.backend; `automatic` picks CUDA when a usable
/// GPU is present and the backend is compiled, else the CPU.
std::unique_ptr<Propagator> make_propagator(const PropagatorOptions& options);

/// Whether this build contains the CUDA backend.
bool cuda_backend_compiled();

}  // namespace gprfwi
