// Run files: a valid one is read into the library's types; each malformed one
// stops with a ConfigError that names the file, line and column (or the --set
// at fault), the key path, and what was expected.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gprfwi/config.hpp"
#include "gprfwi/cpu_propagator.hpp"

namespace gprfwi {
namespace {

const char* kBase = R"(grid: {nx: 50, nz: 40, dx: 0.02, dz: 0.02}
model:
  eps_r: 6.0
  sigma: 0.002
wavelet: {type: ricker, frequency: 2.0e8}
time: {dt: 4.0e-11, nt: 100}
survey:
  shots:
    - sources: [[0.2, 0.2]]
      receivers: [[0.8, 0.2]]
propagator: {backend: cpu, precision: double, stencil: 4, pml: {width: 10}}
output: {dir: out}
)";

std::string write_run_file(const std::string& name, const std::string& text) {
    const auto dir = std::filesystem::temp_directory_path() / ("gprfwi-config-tests-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = (dir / (name + ".yaml")).string();
    std::ofstream(path) << text;
    return path;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    if (at == std::string::npos) throw std::logic_error("test edit not found: " + from);
    return text.replace(at, from.size(), to);
}

TEST(RunFile, ValidFileIsReadWithItsValuesAndOverrides) {
    const auto path = write_run_file("valid", kBase);
    const RunConfig c = load_run_config(path);
    EXPECT_EQ(c.grid.nx, 50);
    EXPECT_EQ(c.grid.dz, 0.02);
    EXPECT_EQ(c.eps_r, 6.0);
    EXPECT_EQ(c.mu_r, 1.0);
    EXPECT_EQ(c.nt, 100);
    ASSERT_EQ(c.shots.size(), 1u);
    EXPECT_EQ(c.shots[0].receivers[0].x, 0.8);
    EXPECT_EQ(c.propagator.precision, Precision::double_precision);
    EXPECT_EQ(c.propagator.cpml.widths.left, 10);
    EXPECT_EQ(c.output_dir, "out");
    const RunConfig o = load_run_config(path, {"grid.nx=60", "propagator.pml.top=4", "data.observed=obs.h5"});
    EXPECT_EQ(o.grid.nx, 60);
    EXPECT_EQ(o.propagator.cpml.widths.top, 4);
    EXPECT_EQ(o.propagator.cpml.widths.left, 10);
    EXPECT_EQ(o.observed, "obs.h5");
    // what output files record: the file as given, then the overrides
    const std::string record = o.record({"grid.nx=60"});
    EXPECT_EQ(record.rfind(kBase, 0), 0u);
    EXPECT_NE(record.find("\n# --set grid.nx=60"), std::string::npos);
    // what it describes runs
    const Traces t = CpuPropagator(c.propagator).forward(c.model(), c.survey());
    EXPECT_EQ(t[0].nt(), 100);
}

struct Malformed {
    const char* name;
    std::string text;                    // the run file
    std::vector<std::string> overrides;  // --set
    const char* expected;                // in the message
    const char* location;                // "file:line:" part, "" to skip
};

std::vector<Malformed> malformed_cases() {
    const std::string b = kBase;
    auto edit = [&](const char* from, const char* to) { return replaced(b, from, to); };
    return {
        {"unknown_top_key", edit("output: {dir: out}", "outputs: {dir: out}"), {}, "outputs: unknown key (did you mean 'output'?)", ":12:1"},
        {"unknown_grid_key", edit("nx: 50", "nxx: 50"), {}, "grid.nxx: unknown key (did you mean 'nx'?)", ":1:8"},
        {"missing_grid", edit("grid: {nx: 50, nz: 40, dx: 0.02, dz: 0.02}\n", ""), {}, "missing key 'grid'", ""},
        {"nx_word", edit("nx: 50", "nx: fifty"), {}, "grid.nx: expected an integer in [2, 100000], got 'fifty'", ":1:12"},
        {"nx_fraction", edit("nx: 50", "nx: 50.5"), {}, "grid.nx: expected an integer", ":1:12"},
        {"nx_one", edit("nx: 50", "nx: 1"), {}, "grid.nx: expected an integer in [2, 100000], got '1'", ""},
        {"nx_huge", edit("nx: 50", "nx: 1000000000"), {}, "grid.nx: expected an integer in [2, 100000]", ""},
        {"grid_too_many_nodes", edit("nx: 50, nz: 40", "nx: 100000, nz: 100000"), {}, "more than 2e9", ":1:7"},
        {"dx_zero", edit("dx: 0.02", "dx: 0"), {}, "grid.dx: expected a number in (0, 1000000], got 0", ""},
        {"dx_negative", edit("dx: 0.02", "dx: -0.02"), {}, "grid.dx: expected a number in (0", ""},
        {"dx_nan", edit("dx: 0.02", "dx: .nan"), {}, "grid.dx: expected a number in (0", ""},
        {"dx_infinite", edit("dx: 0.02", "dx: .inf"), {}, "grid.dx: expected a number in (0", ""},
        {"dx_word", edit("dx: 0.02", "dx: small"), {}, "grid.dx: expected a number, got 'small'", ""},
        {"missing_dz", edit(", dz: 0.02", ""), {}, "grid: missing key 'dz'", ":1:7"},
        {"grid_is_a_list", edit("grid: {nx: 50, nz: 40, dx: 0.02, dz: 0.02}", "grid: [50, 40]"), {}, "grid: expected a mapping", ""},
        {"eps_below_one", edit("eps_r: 6.0", "eps_r: 0.5"), {}, "model.eps_r: expected a number in [1, 1000], got 0.5", ":3:10"},
        {"sigma_negative", edit("sigma: 0.002", "sigma: -1"), {}, "model.sigma: expected a number in [0", ":4:10"},
        {"missing_sigma", edit("  sigma: 0.002\n", ""), {}, "model: missing key 'sigma'", ""},
        {"model_from_file", edit("  eps_r: 6.0\n", "  file: m.h5\n  eps_r: 6.0\n"), {}, "models from files need HDF5", ""},
        {"unknown_model_key", edit("sigma: 0.002", "sigmaa: 0.002"), {}, "model.sigmaa: unknown key (did you mean 'sigma'?)", ":4:3"},
        {"mu_zero", edit("sigma: 0.002", "sigma: 0.002\n  mu_r: 0"), {}, "model.mu_r: expected a number in (0", ""},
        {"wavelet_type", edit("type: ricker", "type: gauss"), {}, "wavelet.type: expected one of ricker, got 'gauss'", ":5:17"},
        {"wavelet_type_typo", edit("type: ricker", "type: rickr"), {}, "(did you mean 'ricker'?)", ""},
        {"frequency_zero", edit("frequency: 2.0e8", "frequency: 0"), {}, "wavelet.frequency: expected a number in (0", ""},
        {"frequency_above_nyquist", edit("frequency: 2.0e8", "frequency: 1.0e11"), {}, "above the Nyquist frequency", ""},
        {"missing_wavelet_type", edit("type: ricker, ", ""), {}, "wavelet: missing key 'type'", ""},
        {"amplitude_word", edit("frequency: 2.0e8}", "frequency: 2.0e8, amplitude: loud}"), {}, "wavelet.amplitude: expected a number, got 'loud'", ""},
        {"dt_zero", edit("dt: 4.0e-11", "dt: 0"), {}, "time.dt: expected a number in (0, 1]", ":6:12"},
        {"dt_negative", edit("dt: 4.0e-11", "dt: -4.0e-11"), {}, "time.dt: expected a number in (0, 1]", ""},
        {"nt_zero", edit("nt: 100", "nt: 0"), {}, "time.nt: expected an integer in [1, 100000000], got '0'", ""},
        {"nt_huge", edit("nt: 100", "nt: 1000000000000"), {}, "time.nt: expected an integer in [1, 100000000]", ""},
        {"nt_fraction", edit("nt: 100", "nt: 3.5"), {}, "time.nt: expected an integer", ""},
        {"missing_nt", edit(", nt: 100", ""), {}, "time: missing key 'nt'", ""},
        {"no_shots", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  shots: []\n"), {}, "survey.shots: expected a non-empty list of shots", ""},
        {"shots_not_a_list", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  shots: 3\n"), {}, "survey.shots: expected a non-empty list", ""},
        {"source_outside", edit("[[0.2, 0.2]]", "[[5.0, 0.2]]"), {}, "survey.shots[0].sources[0]: position (x = 5 m, z = 0.2 m) is outside the model [0, 0.98] m x [0, 0.78] m", ":9:17"},
        {"receiver_above_surface", edit("[[0.8, 0.2]]", "[[0.8, -0.1]]"), {}, "survey.shots[0].receivers[0]: position (x = 0.8 m, z = -0.1 m) is outside the model", ""},
        {"source_not_a_pair", edit("[[0.2, 0.2]]", "[[0.2]]"), {}, "survey.shots[0].sources[0]: expected a position [x, z] in metres", ""},
        {"source_coordinate_word", edit("[[0.2, 0.2]]", "[[0.2, deep]]"), {}, "survey.shots[0].sources[0][1]: expected a number, got 'deep'", ""},
        {"missing_sources", edit("    - sources: [[0.2, 0.2]]\n      receivers", "    - receivers"), {}, "survey.shots[0]: missing key 'sources'", ""},
        {"empty_sources", edit("sources: [[0.2, 0.2]]", "sources: []"), {}, "survey.shots[0].sources: expected at least one position", ""},
        {"unknown_shot_key", edit("receivers: [[0.8, 0.2]]", "receiver: [[0.8, 0.2]]"), {}, "survey.shots[0].receiver: unknown key (did you mean 'receivers'?)", ":10:7"},
        {"backend_gpu", edit("backend: cpu", "backend: gpu"), {}, "propagator.backend: expected one of auto, cpu, cuda, got 'gpu' (did you mean 'cpu'?)", ":11:23"},
        {"precision_half", edit("precision: double", "precision: half"), {}, "propagator.precision: expected one of single, double, got 'half'", ""},
        {"stencil_five", edit("stencil: 4", "stencil: 5"), {}, "propagator.stencil: expected 2, 4, 6 or 8, got 5", ""},
        {"stencil_ten", edit("stencil: 4", "stencil: 10"), {}, "propagator.stencil: expected an integer in [2, 8]", ""},
        {"pml_negative", edit("width: 10", "width: -1"), {}, "propagator.pml.width: expected an integer in [0, 1000], got '-1'", ""},
        {"pml_typo", edit("width: 10", "widht: 10"), {}, "propagator.pml.widht: unknown key (did you mean 'width'?)", ""},
        {"observed_not_a_string", edit("output: {dir: out}", "data: {observed: [1, 2]}\noutput: {dir: out}"), {}, "data.observed: expected a string", ":12:18"},
        {"not_yaml", edit("grid: {nx: 50, nz: 40, dx: 0.02, dz: 0.02}", "grid: {nx: 50, nz: 40"), {}, "not valid YAML", ""},
        {"top_level_list", "- 1\n- 2\n", {}, "expected a mapping with keys grid, model", ""},
        {"set_without_value", b, {"grid.nx"}, "--set grid.nx: expected key.path=value", ""},
        {"set_bad_yaml", b, {"grid.nx=[1,"}, "--set grid.nx=[1,: the value is not valid YAML", ""},
        {"set_bad_value", b, {"grid.dx=-3"}, "(--set grid.dx=-3): grid.dx: expected a number in (0", ""},
        {"set_unknown_key", b, {"time.ntt=3"}, "(--set time.ntt=3): time.ntt: unknown key (did you mean 'nt'?)", ""},
    };
}

class MalformedRunFile : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedRunFile, StopsWithItsOwnMessage) {
    const Malformed& m = GetParam();
    const auto path = write_run_file(m.name, m.text);
    try {
        load_run_config(path, m.overrides);
        FAIL() << "no error for " << m.name;
    } catch (const ConfigError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(m.expected), std::string::npos) << msg;
        EXPECT_EQ(msg.rfind(path, 0), 0u) << "the message must start with the file: " << msg;
        if (*m.location) {
            EXPECT_NE(msg.find(path + m.location), std::string::npos) << msg;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, MalformedRunFile, ::testing::ValuesIn(malformed_cases()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(RunFile, MissingFileIsReported) {
    try {
        load_run_config("/nonexistent/run.yaml");
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/run.yaml: cannot open the run file"), std::string::npos);
    }
}

TEST(RunFile, ClosestWordSuggestsOnlyNearMisses) {
    EXPECT_EQ(closest_word("nxx", {"nx", "nz", "dx"}), "nx");
    EXPECT_EQ(closest_word("frequncy", {"type", "frequency"}), "frequency");
    EXPECT_EQ(closest_word("colour", {"nx", "nz"}), "");
}

}  // namespace
}  // namespace gprfwi
