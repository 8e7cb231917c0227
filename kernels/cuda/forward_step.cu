// The forward step's launches (forward_step.cuh): a step, a Born run's
// perturbation step, and whether a node lies in the step's interior.

#include <stdexcept>
#include <type_traits>

#include "forward_step.cuh"

namespace gprfwi::kernels::cuda {

template <typename T, int ORDER, typename Stored>
void step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
          const TmFields<T>& in, const TmFields<T>& out, Stored* keep, const StepSources* sources,
          const StepSamples* samples, const CudaTuning& tuning, Stream stream) {
    constexpr int kThreads = kStepWarps * 32;
    const Interior box = step_interior<T, ORDER>(g, x, z);
    const StepLaunch l = step_launch<T, ORDER>(g, box, Interior{0, 0, 0, 0}, tuning);
    const dim3 grid(l.strip_blocks + l.interior_blocks + l.frame_blocks + sample_blocks(samples), g.n_shots);
    // Ey as two planes (TmFields::ey_hi; single precision, bf16 levels): the upper one is the level
    constexpr bool kCanSplit = std::is_same_v<T, float> && std::is_same_v<Stored, Bf16>;
    const bool split = kCanSplit && out.ey_hi;
    if (split != (in.ey_hi != nullptr)) throw std::logic_error("step: Ey split in one buffer and not the other");
    auto launch = [&](auto split_tag) {
        constexpr bool SPLIT = decltype(split_tag)::value;
        launch_kernel(tuning, step_kernel<T, ORDER, Stored, false, SPLIT>, grid, dim3(kThreads), stream, g, m, x, z,
                      box, l, in, out, keep, samples ? *samples : StepSamples{});
        // the frame's E, and the source term when its points lie in the interior (whose E is done)
        const bool merged = sources && sources->interior && sources->op.n_source_points > 0;
        const int inject_blocks = merged ? blocks_for(sources->op.n_source_points, kThreads) : 0;
        if (l.frame_blocks + inject_blocks > 0) {
            const dim3 e_grid(l.frame_blocks + inject_blocks, g.n_shots);
            launch_kernel(tuning, frame_e_kernel<T, ORDER, Stored, SPLIT>, e_grid, dim3(kThreads), stream, g, m, x, z,
                          in, out, keep, l.frame, l.frame_blocks, merged ? *sources : StepSources{},
                          Interior{0, 0, 0, 0});
        }
        if (sources && !merged)
            inject_sources<T, Stored>(g, sources->op, sources->wavelets, sources->nt, sources->m, out, keep, stream);
    };
    if constexpr (kCanSplit) {
        if (split) {
            launch(std::true_type{});
            return;
        }
    }
    launch(std::false_type{});
}

template <typename T, int ORDER>
void born_step(const GridParams<T>& g, const MaterialView<T>& m, const CpmlAxis<T>& x, const CpmlAxis<T>& z,
               const TmFields<T>& in, const TmFields<T>& out, const StepSamples* samples, const BornScatter<T>& born,
               const CudaTuning& tuning, Stream stream) {
    constexpr int kThreads = kStepWarps * 32;
    const Interior box = step_interior<T, ORDER>(g, x, z);
    const StepLaunch l = step_launch<T, ORDER>(g, box, Interior{0, 0, 0, 0}, tuning);
    const dim3 grid(l.strip_blocks + l.interior_blocks + l.frame_blocks + sample_blocks(samples), g.n_shots);
    launch_kernel(tuning, born_step_kernel<T, ORDER>, grid, dim3(kThreads), stream, g, m, x, z, box, l, in, out,
                  samples ? *samples : StepSamples{}, born);
    if (l.frame_blocks > 0)
        launch_kernel(tuning, born_frame_e_kernel<T, ORDER>, dim3(l.frame_blocks, g.n_shots), dim3(kThreads), stream,
                      g, m, x, z, in, out, l.frame, l.frame_blocks, born);
}

template <typename T, int ORDER>
bool step_interior_contains(const GridParams<T>& g, const CpmlAxis<T>& x, const CpmlAxis<T>& z, std::size_t index) {
    int ix, iz;
    return node_at(g, index, ix, iz) && inside(step_interior<T, ORDER>(g, x, z), ix, iz);
}

#define GPRFWI_INSTANTIATE_ORDER(T, ORDER) \
    template void step<T, ORDER, T>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&, T*, const StepSources*, const StepSamples*, const CudaTuning&, Stream); \
    template void step<T, ORDER, Bf16>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&, Bf16*, const StepSources*, const StepSamples*, const CudaTuning&, Stream); \
    template void born_step<T, ORDER>(const GridParams<T>&, const MaterialView<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, const TmFields<T>&, const TmFields<T>&, const StepSamples*, const BornScatter<T>&, const CudaTuning&, Stream); \
    template bool step_interior_contains<T, ORDER>(const GridParams<T>&, const CpmlAxis<T>&, const CpmlAxis<T>&, std::size_t);
#define GPRFWI_INSTANTIATE_TYPE(T) \
    GPRFWI_INSTANTIATE_ORDER(T, 2) GPRFWI_INSTANTIATE_ORDER(T, 4) GPRFWI_INSTANTIATE_ORDER(T, 6) GPRFWI_INSTANTIATE_ORDER(T, 8)
GPRFWI_INSTANTIATE_TYPE(float)
GPRFWI_INSTANTIATE_TYPE(double)

}  // namespace gprfwi::kernels::cuda
