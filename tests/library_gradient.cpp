// Test helper: the misfit and gradient of a run file computed by direct
// library calls (no MPI, no batching, the CPU propagator), written in the
// layout of `gprfwi gradient`, so that a test can compare the two.
//   library_gradient RUN.yaml OUT.h5 [key.path=value ...]

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "gprfwi/config.hpp"
#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/hdf5_io.hpp"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: library_gradient RUN.yaml OUT.h5 [key.path=value ...]\n");
        return 2;
    }
    try {
        const std::vector<std::string> overrides(argv + 3, argv + argc);
        const gprfwi::RunConfig c = gprfwi::load_run_config(argv[1], overrides);
        const gprfwi::Survey survey = c.survey();
        gprfwi::PropagatorOptions opt = gprfwi::fix_survey_wide_options(c.propagator, c.model, survey);
        const gprfwi::Traces observed = gprfwi::read_traces_h5(c.observed.file, survey);
        const gprfwi::GradientResult g = gprfwi::CpuPropagator(opt).gradient(c.model, survey, observed);
        gprfwi::write_gradient_h5(argv[2], c.grid, g.misfit, g.grad_eps_r, g.grad_sigma, "");
        std::printf("misfit %.17g\n", g.misfit);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "library_gradient: %s\n", e.what());
        return 1;
    }
    return 0;
}
