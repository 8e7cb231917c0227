#pragma once
// The memory plans: what each backend's engines allocate for a forward or a
// gradient call, array by array, from the call's batch (its PropagationSetup)
// and options. One plan a backend, read by everything that speaks of memory:
// Propagator::estimate_memory (`gprfwi bench`), `gprfwi check`, and on a GPU
// the out-of-memory check that an engine makes before it allocates. The
// tests hold each plan to what its engines then hold
// (Propagator::workspace_bytes). Born runs and second-order adjoints
// allocate more than a gradient: the CPU's Hessian plan counts them (the
// batches a CPU rank runs fit them), the GPU's plans do not.

#include "gprfwi/propagator.hpp"
#include "gprfwi/setup.hpp"

namespace gprfwi {

/// The plan of a batch on `backend` (automatic: as make_propagator picks),
/// summed over the engines it runs as: on a GPU an engine a shot group
/// (resolve_shot_groups), on the CPU one. On a GPU the kept levels are
/// counted on the device unless options.snapshots.storage puts them in host
/// memory or on disk (automatic storage moves them to the host only where
/// the device lacks the room, which a plan cannot know).
MemoryEstimate plan_batch_memory(const PropagationSetup& batch, const PropagatorOptions& options, bool gradient,
                                 BackendKind backend);

/// What a CPU engine holds for a call over `batch`, and the call's traces.
MemoryEstimate cpu_memory_plan(const PropagationSetup& batch, const PropagatorOptions& options, bool gradient);

/// What a CPU engine holds for a Hessian-vector product of `kind` over
/// `batch` (the Born run and, for a full product, the second-order adjoint
/// beside a gradient's arrays), and the call's traces.
MemoryEstimate cpu_hessian_memory_plan(const PropagationSetup& batch, const PropagatorOptions& options, HessianKind kind);

/// What a CUDA engine holds on its device for a call over `group` (one shot
/// group), with the kept levels on the device or in host memory (a ring of
/// device slots). Throws NotCompiled in a build without CUDA.
MemoryEstimate cuda_memory_plan(const PropagationSetup& group, const PropagatorOptions& options, bool gradient,
                                bool levels_on_device);

}  // namespace gprfwi
