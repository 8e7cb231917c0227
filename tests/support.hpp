#pragma once
// Shared builders for the tests: reproducible heterogeneous models, surveys
// and random traces, and small vector helpers.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gprfwi/cuda_backend.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

/// Skips the calling test, saying why, unless the CUDA backend is built and a
/// GPU is visible (the GPU tests run on the GPU machine).
#define GPRFWI_SKIP_WITHOUT_GPU()                                                                             \
    do {                                                                                                     \
        if (!::gprfwi::cuda_backend_compiled()) GTEST_SKIP() << "CUDA backend not compiled into this build"; \
        if (::gprfwi::cuda_device_count() == 0)                                                              \
            GTEST_SKIP() << "no CUDA GPU visible (no driver or device): GPU tests run on the GPU machine";   \
    } while (0)

namespace gprfwi::test {

/// A smooth heterogeneous lossy model: eps_r in about [3, 12], sigma in about
/// [0.001, 0.02] S/m, built from a few Gaussian blobs (seeded).
Model heterogeneous_model(const Grid& g, std::uint32_t seed);

/// A survey of `n_shots` shots on grid g, each with `n_src` sources and
/// `n_rec` receivers at random (off-grid) positions at least `margin` nodes
/// inside the model, Ricker wavelets of peak `f_hz`, and dt = dt_factor * the
/// CFL limit for eps_r_min.
Survey random_survey(const Grid& g, int n_shots, int n_src, int n_rec, int nt, double f_hz,
                     double dt, std::uint32_t seed, double margin = 2.0);

/// CFL limit of `order` on grid g for a medium with smallest eps_r.
double cfl_limit(const Grid& g, double eps_r_min, int order);

/// Traces of white noise shaped like the survey.
Traces random_traces(const Survey& s, std::uint32_t seed);

/// Wavelets of white noise.
Survey with_random_wavelets(Survey s, std::uint32_t seed);

double dot(const Traces& a, const Traces& b);

/// A smooth random model direction over the whole model, edges included:
/// sinusoids of a few wavelengths across it, of amplitude about `eps_scale`
/// and `sigma_scale` (S/m), offset so that their means are not zero (seeded).
ModelDirection smooth_direction(const Grid& g, double eps_scale, double sigma_scale, std::uint32_t seed);

/// m + h * v.
Model perturbed(const Model& m, const ModelDirection& v, double h);

/// <v, (eps_r, sigma)>: the sum over the nodes of both parameters.
double dot(const ModelDirection& v, const Array2D& eps_r, const Array2D& sigma);
double norm(const Traces& a);

/// Relative L2 difference ||a - b|| / ||b||.
double relative_difference(const Traces& a, const Traces& b);

PropagatorOptions double_options(int order, int pml);

/// One call of a propagator: forward, or gradient against `observed`, with
/// or without the illumination.
struct Call {
    std::string what;
    Model model;
    Survey survey;
    Traces observed;
    bool gradient = true;
    bool illumination = false;
};

/// Calls that change, from one to the next, everything a propagator keeps
/// between calls: the model, the receivers and wavelets, fewer and then more
/// shots than at first, a longer record, the illumination, forward-only
/// calls between gradients, another grid and back (stencil `order`). The
/// records are `steps_divisor` times shorter than the 160 to 200 steps they
/// have by default (the sanitizer build's 5x slower steps; the buffers that
/// a call keeps or grows are the same).
std::vector<Call> changing_calls(int order, int steps_divisor = 1);

/// The traces' samples, shot after shot, receiver after receiver.
std::vector<double> flat(const Traces& t);

/// What a call returned, flattened.
struct CallResult {
    std::vector<double> traces, grad_eps_r, grad_sigma, grad_wavelet, illumination;
    double misfit = 0;
};
CallResult run_call(Propagator& p, const Call& c);

/// GoogleTest expectations that a and b are bitwise equal (`what` in the messages).
void expect_bitwise_equal(const CallResult& a, const CallResult& b, const std::string& what);

/// The process's resident memory, bytes (Linux: /proc/self/statm).
std::size_t resident_bytes();

/// `name` in a folder of this test process's own under the system's
/// temporary folder (CTest runs each test in a process of its own, side by
/// side), made on first use and removed, with all it holds, when the process
/// exits normally.
std::filesystem::path scratch_path(const std::string& name);

}  // namespace gprfwi::test
