// The CUDA entry points of a build without CUDA.

#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/memory_plan.hpp"

namespace gprfwi {

namespace {
[[noreturn]] void not_compiled() {
    throw NotCompiled("the CUDA backend is not compiled into this gprfwi; rebuild with a CUDA toolkit "
                      "(nvcc on the PATH or in /usr/local/cuda) or use backend 'cpu'");
}
}  // namespace

bool cuda_backend_compiled() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_runtime_version() { return "not compiled"; }
std::vector<std::string> cuda_device_names() { return {}; }
int default_cuda_device() { return 0; }
std::unique_ptr<Propagator> make_cuda_propagator(const PropagatorOptions&) { not_compiled(); }
double cuda_copy_bandwidth(std::size_t) { not_compiled(); }
MemoryEstimate cuda_memory_plan(const PropagationSetup&, const PropagatorOptions&, bool, bool) { not_compiled(); }

}  // namespace gprfwi
