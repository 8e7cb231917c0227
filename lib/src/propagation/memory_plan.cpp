// A batch's memory plan: the backend's plan of each engine it runs as
// (memory_plan.hpp), split into engines as EnginePropagator binds them.

#include "gprfwi/memory_plan.hpp"

#include "gprfwi/engine.hpp"

namespace gprfwi {

MemoryEstimate plan_batch_memory(const PropagationSetup& batch, const PropagatorOptions& options, bool gradient,
                                 BackendKind backend) {
    backend = resolve_backend(backend);
    if (backend == BackendKind::cpu) return cpu_memory_plan(batch, options, gradient);
    const auto storage = options.snapshots.storage;
    const bool on_device = storage != SnapshotStorage::host && storage != SnapshotStorage::disk;
    const int groups = resolve_shot_groups(options, batch.shots.size(), batch.grid);
    if (groups == 1) return cuda_memory_plan(batch, options, gradient, on_device);
    // an engine a group, each with options of one group (EnginePropagator::ShotGroups::bind)
    PropagatorOptions group_options = options;
    group_options.shot_groups = 1;
    MemoryEstimate all;
    for (int g = 0; g < groups; ++g) {
        const std::size_t first = shot_group_begin(batch.shots.size(), groups, g);
        const std::size_t count = shot_group_begin(batch.shots.size(), groups, g + 1) - first;
        all += cuda_memory_plan(batch.shot_range(first, count), group_options, gradient, on_device);
    }
    return all;
}

}  // namespace gprfwi
