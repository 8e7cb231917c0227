// The CUDA propagator: the EnginePropagator whose engines are CudaEngines
// (cuda_engine.cuh) on the device it binds, and the backend's queries
// (devices, runtime, copy bandwidth) of lib/gprfwi/cuda_backend.hpp.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda_engine.cuh"
#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/dispatch.hpp"
#include "gprfwi/memory_plan.hpp"
#include "gprfwi/parallel.hpp"

namespace gprfwi {

namespace {

class CudaPropagator final : public EnginePropagator {
public:
    explicit CudaPropagator(const PropagatorOptions& o) : EnginePropagator(o) {
        options_.validate();
        const int count = cuda_device_count();
        if (count == 0)
            throw Error("backend 'cuda' was requested but no usable CUDA GPU was found (no driver, no device, or "
                        "CUDA_VISIBLE_DEVICES hides them)");
        device_ = options_.device >= 0 ? options_.device : default_cuda_device();
        if (device_ >= count)
            throw InvalidArgument("CUDA device " + std::to_string(device_) + " requested, but only " +
                                  std::to_string(count) + " are visible");
        name_ = cuda_messages::device_label(device_, device_name(device_));
        // dependent launches where the GPU has them (compute capability 9.0 and later); every engine reads them here
        int major = 0;
        GPRFWI_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_));
        options_.cuda.dependent_launch = options_.cuda.dependent_launch && major >= 9;
        // the device's context made now, as the propagator starts, not in its first call
        GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
        GPRFWI_CUDA_CHECK(cudaFree(nullptr));
    }
    ~CudaPropagator() override { drop_workspace(); }  // (its engines count their memory in tally_)
    std::string name() const override { return name_; }
    std::size_t peak_device_bytes() const override { return tally_.peak(); }

protected:
    std::unique_ptr<Engine> make_engine(const PropagationSetup& setup, const PropagatorOptions& options) override {
        return dispatch_kernel_types(options, [&]<typename T, int ORDER, typename Stored>() -> std::unique_ptr<Engine> {
            return std::make_unique<CudaEngine<T, ORDER, Stored>>(setup, options, device_, tally_);
        });
    }
    /// Each engine has a stream of its own: the shot groups' time loops run at once.
    BackendKind backend() const override { return BackendKind::cuda; }
    bool concurrent_groups() const override { return true; }
    /// The time loops run on the GPU: the host compares a model with the kept copy meanwhile.
    bool loops_leave_host_free() const override { return true; }

private:
    int device_ = 0;
    std::string name_;
    DeviceTally tally_;
};

}  // namespace

bool cuda_backend_compiled() { return true; }

int cuda_device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky-free error of a missing driver
        return 0;
    }
    return n;
}

std::string cuda_runtime_version() {
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    if (cudaDriverGetVersion(&driver) != cudaSuccess) cudaGetLastError();
    auto text = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    return text(runtime) + (driver ? " (driver " + text(driver) + ")" : " (no driver)");
}

std::vector<std::string> cuda_device_names() {
    std::vector<std::string> names;
    for (int d = 0; d < cuda_device_count(); ++d) names.push_back(device_name(d));
    return names;
}

int default_cuda_device() {
    const int count = cuda_device_count();
    // inside an MPI run, the rank's place on its node (MPI_Comm_split_type)
    if (parallel::place().size > 1) return count > 0 ? parallel::place().local_rank % count : 0;
    for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"})
        if (const char* v = std::getenv(var)) return count > 0 ? std::atoi(v) % count : 0;
    return 0;
}

MemoryEstimate cuda_memory_plan(const PropagationSetup& group, const PropagatorOptions& options, bool gradient,
                                bool levels_on_device) {
    return dispatch_kernel_types(options, [&]<typename T, int ORDER, typename Stored>() {
        return CudaEngine<T, ORDER, Stored>::plan(group, options, gradient, levels_on_device);
    });
}

std::unique_ptr<Propagator> make_cuda_propagator(const PropagatorOptions& options) {
    return std::make_unique<CudaPropagator>(options);
}

double cuda_copy_bandwidth(std::size_t bytes) {
    DeviceTally tally;
    DeviceBytes held(tally, false);
    DeviceArray<char> a, b;
    a.resize(bytes, held);
    b.resize(bytes, held);
    GPRFWI_CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
    cudaEvent_t start, stop;
    GPRFWI_CUDA_CHECK(cudaEventCreate(&start));
    GPRFWI_CUDA_CHECK(cudaEventCreate(&stop));
    float best_ms = 1e30f;
    for (int rep = 0; rep < 12; ++rep) {
        GPRFWI_CUDA_CHECK(cudaEventRecord(start));
        GPRFWI_CUDA_CHECK(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
        GPRFWI_CUDA_CHECK(cudaEventRecord(stop));
        GPRFWI_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        GPRFWI_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (rep >= 2) best_ms = std::min(best_ms, ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return 2.0 * static_cast<double>(bytes) / (best_ms * 1e-3);
}

}  // namespace gprfwi
