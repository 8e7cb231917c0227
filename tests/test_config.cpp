// Run files: a valid one is read into the library's types; each malformed one
// stops with a ConfigError that names the file, line and column (or the --set
// at fault), the key path, and what was expected.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gprfwi/background_scan.hpp"
#include "gprfwi/config.hpp"
#include "gprfwi/cpu_propagator.hpp"
#include "gprfwi/example.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/parallel.hpp"
#include "gprfwi/wavelet.hpp"
#include "support.hpp"

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
    const auto path = test::scratch_path(name + ".yaml").string();
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
    EXPECT_EQ(c.model.eps_r(3, 7), 6.0);
    EXPECT_EQ(c.model.mu_r(0, 0), 1.0);
    EXPECT_EQ(c.nt, 100);
    ASSERT_EQ(c.shots.size(), 1u);
    EXPECT_EQ(c.shots[0].receivers[0].x, 0.8);
    EXPECT_EQ(c.propagator.precision, Precision::double_precision);
    EXPECT_EQ(c.propagator.cpml.widths.left, 10);
    EXPECT_EQ(c.output_dir, "out");
    const RunConfig o = load_run_config(path, {"grid.nx=60", "propagator.pml.top=4", "data.observed=obs.h5",
                                               "propagator.shot_groups=3", "propagator.cuda.pair_rows=16",
                                               "propagator.cuda.poison_device_memory=true",
                                               "propagator.cuda.dependent_launch=false"});
    EXPECT_EQ(c.propagator.shot_groups, 0);  // automatic
    EXPECT_EQ(o.propagator.shot_groups, 3);
    EXPECT_EQ(c.propagator.cuda.pair_rows, CudaTuning::kPairsWherePay);
    EXPECT_FALSE(c.propagator.cuda.poison_device_memory);
    EXPECT_EQ(o.propagator.cuda.pair_rows, 16);
    EXPECT_TRUE(o.propagator.cuda.poison_device_memory);
    EXPECT_TRUE(o.propagator.cuda.l2_persist);
    EXPECT_TRUE(c.propagator.cuda.dependent_launch);
    EXPECT_FALSE(o.propagator.cuda.dependent_launch);
    EXPECT_EQ(o.grid.nx, 60);
    EXPECT_EQ(o.propagator.cpml.widths.top, 4);
    EXPECT_EQ(o.propagator.cpml.widths.left, 10);
    // paths in a run file are relative to its folder
    EXPECT_EQ(o.observed.file, (std::filesystem::path(path).parent_path() / "obs.h5").string());
    // what output files record: the file as given, then the overrides
    const std::string record = o.record({"grid.nx=60"});
    EXPECT_EQ(record.rfind(kBase, 0), 0u);
    EXPECT_NE(record.find("\n# --set grid.nx=60"), std::string::npos);
    // ... and, as a second YAML document, the resolved values with their defaults
    const std::vector<YAML::Node> docs = YAML::LoadAll(record);
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[1]["grid"]["nx"].as<int>(), 60);
    EXPECT_EQ(docs[1]["propagator"]["pml"]["top"].as<int>(), 4);
    EXPECT_EQ(docs[1]["propagator"]["pml"]["reflection"].as<double>(), 1e-6);  // a default
    EXPECT_EQ(docs[1]["propagator"]["snapshots"]["compression"].as<std::string>(), "none");
    EXPECT_EQ(docs[1]["survey"]["shots"].as<int>(), 1);
    // what it describes runs
    const Traces t = CpuPropagator(c.propagator).forward(c.model, c.survey());
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
        {"dx_nan", edit("dx: 0.02", "dx: .nan"), {}, "grid.dx: expected a finite number, got '.nan'", ""},
        {"dx_infinite", edit("dx: 0.02", "dx: .inf"), {}, "grid.dx: expected a finite number, got '.inf'", ""},
        {"dx_word", edit("dx: 0.02", "dx: small"), {}, "grid.dx: expected a number, got 'small'", ""},
        {"missing_dz", edit(", dz: 0.02", ""), {}, "grid: missing key 'dz'", ":1:7"},
        {"grid_is_a_list", edit("grid: {nx: 50, nz: 40, dx: 0.02, dz: 0.02}", "grid: [50, 40]"), {}, "grid: expected a mapping", ""},
        {"eps_below_one", edit("eps_r: 6.0", "eps_r: 0.5"), {}, "model.eps_r: expected a number in [1, 1000], got 0.5", ":3:10"},
        {"sigma_negative", edit("sigma: 0.002", "sigma: -1"), {}, "model.sigma: expected a number in [0", ":4:10"},
        {"missing_sigma", edit("  sigma: 0.002\n", ""), {}, "model: missing key 'sigma'", ""},
        {"model_file_missing", edit("  eps_r: 6.0\n", "  file: absent.h5\n  eps_r: 6.0\n"), {}, "model.file: ", ":3:9"},
        {"model_file_wrong_shape", edit("  eps_r: 6.0\n", "  file: model_wrong.h5\n"), {}, "has shape [30, 20], the grid needs [40, 50]", ":3:9"},
        {"model_file_one_dimensional", edit("  eps_r: 6.0\n  sigma: 0.002\n", "  file: eps_only.h5\n"), {}, "dataset /eps_r has shape [4], the grid needs [40, 50]", ""},
        {"model_file_without_eps", edit("  eps_r: 6.0\n  sigma: 0.002\n", "  file: other.h5\n"), {}, "other.h5 has no dataset /eps_r (and model.eps_r is not given)", ""},
        {"model_dataset_missing", edit("eps_r: 6.0", "eps_r: {file: model_ok.h5, dataset: nothing}"), {}, "model.eps_r: ", ":3:10"},
        {"model_dataset_out_of_range", edit("eps_r: 6.0", "eps_r: {file: model_ok.h5, dataset: sigma}"), {}, "sigma[0][0] = 0.01 is outside [1, 1000]", ":3:10"},
        {"model_dataset_unknown_key", edit("eps_r: 6.0", "eps_r: {file: model_ok.h5, datset: eps_r}"), {}, "model.eps_r.datset: unknown key (did you mean 'dataset'?)", ""},
        {"layer_without_top", edit("sigma: 0.002", "sigma: 0.002\n  layers: [{eps_r: 9}]"), {}, "model.layers[0]: missing key 'top'", ""},
        {"layer_without_values", edit("sigma: 0.002", "sigma: 0.002\n  layers: [{top: 0.3}]"), {}, "model.layers[0]: expected at least one of eps_r, sigma, mu_r", ""},
        {"layer_upside_down", edit("sigma: 0.002", "sigma: 0.002\n  layers: [{top: 0.3, bottom: 0.1, eps_r: 9}]"), {}, "model.layers[0].bottom: expected a depth below top", ""},
        {"layer_bad_eps", edit("sigma: 0.002", "sigma: 0.002\n  layers: [{top: 0.3, eps_r: 0.2}]"), {}, "model.layers[0].eps_r: expected a number in [1, 1000]", ""},
        {"shape_unknown_type", edit("sigma: 0.002", "sigma: 0.002\n  shapes: [{type: circel, center: [0.2, 0.2], radius: 0.1, eps_r: 9}]"), {}, "model.shapes[0].type: expected one of circle, rectangle, polygon, got 'circel' (did you mean 'circle'?)", ""},
        {"circle_negative_radius", edit("sigma: 0.002", "sigma: 0.002\n  shapes: [{type: circle, center: [0.2, 0.2], radius: -1, eps_r: 9}]"), {}, "model.shapes[0].radius: expected a number in (0", ""},
        {"rectangle_key_of_circle", edit("sigma: 0.002", "sigma: 0.002\n  shapes: [{type: rectangle, from: [0, 0], to: [0.1, 0.1], radius: 1, eps_r: 9}]"), {}, "model.shapes[0].radius: unknown key", ""},
        {"polygon_two_points", edit("sigma: 0.002", "sigma: 0.002\n  shapes: [{type: polygon, points: [[0, 0], [1, 1]], sigma: 0.1}]"), {}, "model.shapes[0].points: expected at least 3 points", ""},
        {"smoothing_negative", edit("sigma: 0.002", "sigma: 0.002\n  smoothing: -0.1"), {}, "model.smoothing: expected a number in [0", ""},
        {"unknown_model_key", edit("sigma: 0.002", "sigmaa: 0.002"), {}, "model.sigmaa: unknown key (did you mean 'sigma'?)", ":4:3"},
        {"mu_zero", edit("sigma: 0.002", "sigma: 0.002\n  mu_r: 0"), {}, "model.mu_r: expected a number in (0", ""},
        {"wavelet_type", edit("type: ricker", "type: gauss"), {}, "wavelet.type: expected one of ricker, file, got 'gauss'", ":5:17"},
        {"wavelet_file_missing", edit("{type: ricker, frequency: 2.0e8}", "{type: file, file: absent.txt}"), {}, "wavelet.file: ", ":5:29"},
        {"wavelet_file_nan", edit("{type: ricker, frequency: 2.0e8}", "{type: file, file: wavelet_nan.txt}"), {}, "wavelet_nan.txt:3: expected one number per line (finite), got 'nan'", ""},
        {"amplitude_infinite", edit("frequency: 2.0e8}", "frequency: 2.0e8, amplitude: -.Inf}"), {}, "wavelet.amplitude: expected a finite number, got '-.Inf'", ""},
        {"wavelet_file_not_numbers", edit("{type: ricker, frequency: 2.0e8}", "{type: file, file: wavelet_bad.txt}"), {}, "wavelet_bad.txt:3: expected one number per line (finite), got '0.5 0.7'", ""},
        {"wavelet_file_empty", edit("{type: ricker, frequency: 2.0e8}", "{type: file, file: wavelet_empty.txt}"), {}, "wavelet_empty.txt: the wavelet has no samples", ""},
        {"key_not_a_word", b + "? [8.0, 2.6]\n: 1\n", {}, ": expected a key (a word), got a list or mapping as a key", ""},
        {"wavelet_file_too_long", edit("{type: ricker, frequency: 2.0e8}", "{type: file, file: wavelet_long.txt}"), {}, "the wavelet has 150 samples, more than time.nt = 100", ""},
        {"wavelet_file_with_frequency", edit("{type: ricker, frequency: 2.0e8}", "{type: file, file: wavelet.txt, frequency: 1}"), {}, "wavelet.frequency: unknown key", ""},
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
        {"no_shots", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  shots: []\n"), {}, "survey: expected at least one shot", ":8:3"},
        {"shots_not_a_list", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  shots: 3\n"), {}, "survey.shots: expected a list of shots", ""},
        {"crosshole_outside", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  crosshole: {source_x: 0.1, receiver_x: 0.9, sources: {from: 0.1, to: 0.9, count: 3}, receivers: {from: 0.1, to: 0.7, count: 4}}\n"), {}, "survey.crosshole.sources: position (x = 0.1 m, z = 0.9 m) is outside the model", ""},
        {"crosshole_range_without_to", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  crosshole: {source_x: 0.1, receiver_x: 0.9, sources: {from: 0.1, count: 3}, receivers: {from: 0.1, to: 0.7, count: 4}}\n"), {}, "survey.crosshole.sources: missing key 'to' (needed when count > 1)", ""},
        {"crosshole_zero_count", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  crosshole: {source_x: 0.1, receiver_x: 0.9, sources: {from: 0.1, to: 0.5, count: 0}, receivers: {from: 0.1, to: 0.7, count: 4}}\n"), {}, "survey.crosshole.sources.count: expected an integer in [1, 100000], got '0'", ""},
        {"surface_offset_outside", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  surface: {z: 0.0, sources: {from: 0.1, to: 0.8, count: 4}, receivers: {offsets: [0.3]}}\n"), {}, "survey.surface.receivers: position (x = 1.1 m, z = 0 m) is outside the model", ""},
        {"surface_unknown_key", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  surface: {depth: 0.0, sources: {from: 0.1, to: 0.8, count: 4}, receivers: {offsets: [0.3]}}\n"), {}, "survey.surface.depth: unknown key", ""},
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
        {"snapshots_interval_word", edit("pml: {width: 10}", "pml: {width: 10}, snapshots: {interval: often}"), {}, "propagator.snapshots.interval: expected an integer in [1, 100000], got 'often'", ""},
        {"snapshots_compression", edit("pml: {width: 10}", "pml: {width: 10}, snapshots: {compression: fp16}"), {}, "propagator.snapshots.compression: expected one of none, bf16, fp8, got 'fp16'", ""},
        {"snapshots_storage", edit("pml: {width: 10}", "pml: {width: 10}, snapshots: {storage: ram}"), {}, "propagator.snapshots.storage: expected one of auto, device, host, disk", ""},
        {"checkpoint_with_interval", edit("pml: {width: 10}", "pml: {width: 10}, snapshots: {interval: 4, checkpoint: auto}"), {}, "propagator.snapshots.checkpoint: checkpointing is exact and needs snapshots.interval 1", ""},
        {"binomial_word", edit("pml: {width: 10}", "pml: {width: 10}, snapshots: {binomial: many}"), {}, "propagator.snapshots.binomial: expected an integer in [1, 100000], got 'many'", ""},
        {"binomial_with_interval", edit("pml: {width: 10}", "pml: {width: 10}, snapshots: {interval: 2, binomial: auto}"), {}, "propagator.snapshots.binomial: binomial checkpointing is exact and needs snapshots.interval 1", ""},
        {"binomial_with_checkpoint", edit("pml: {width: 10}", "pml: {width: 10}, snapshots: {checkpoint: 20, binomial: 4}"), {}, "give either checkpoint (every C steps) or binomial (S saved states), not both", ""},
        {"pml_reflection_zero", edit("width: 10", "width: 10, reflection: 0"), {}, "propagator.pml.reflection: expected a number in (0, 1]", ""},
        {"batch_negative", edit("stencil: 4", "stencil: 4, shots_per_batch: -2"), {}, "propagator.shots_per_batch: expected an integer in [0", ""},
        {"cuda_pair_rows", edit("stencil: 4", "stencil: 4, cuda: {pair_rows: -3}"), {}, "propagator.cuda.pair_rows: expected an integer in [-2, 100000], got '-3'", ":11:"},
        {"cuda_unknown_key", edit("stencil: 4", "stencil: 4, cuda: {rows: 3}"), {}, "propagator.cuda.rows: unknown key", ":11:"},
        {"shot_groups_too_many", edit("stencil: 4", "stencil: 4, shot_groups: 65"), {}, "propagator.shot_groups: expected an integer in [0, 64], got '65'", ":11:"},
        {"noise_both", edit("output: {dir: out}", "noise: {snr_db: 20, std: 1e-3}\noutput: {dir: out}"), {}, "noise: give either snr_db or std, not both", ":12:8"},
        {"noise_neither", edit("output: {dir: out}", "noise: {seed: 3}\noutput: {dir: out}"), {}, "noise: expected snr_db (dB) or std (V/m)", ""},
        {"noise_seed_negative", edit("output: {dir: out}", "noise: {snr_db: 20, seed: -3}\noutput: {dir: out}"), {}, "noise.seed: expected an integer in [0", ""},
        {"observed_not_a_string", edit("output: {dir: out}", "data: {observed: [1, 2]}\noutput: {dir: out}"), {}, "data.observed: expected a string", ":12:18"},
        {"observed_unknown_key", edit("output: {dir: out}", "data: {observed: {file: obs.h5, timezero: 1.0e-9}}\noutput: {dir: out}"), {}, "data.observed.timezero: unknown key (did you mean 'time_zero'?)", ":12:33"},
        {"observed_without_file", edit("output: {dir: out}", "data: {observed: {time_zero: 1.0e-9}}\noutput: {dir: out}"), {}, "data.observed: missing key 'file'", ""},
        {"observed_extension", edit("output: {dir: out}", "data: {observed: obs.txt}\noutput: {dir: out}"), {}, "cannot tell the format from the extension '.txt'", ":12:18"},
        {"observed_format_word", edit("output: {dir: out}", "data: {observed: {file: obs.dat, format: segy2}}\noutput: {dir: out}"), {}, "data.observed.format: expected one of hdf5, segy, got 'segy2'", ""},
        {"observed_interval_hdf5", edit("output: {dir: out}", "data: {observed: {file: obs.h5, sample_interval: 1.0e-10}}\noutput: {dir: out}"), {}, "data.observed.sample_interval: only for SEG-Y files", ""},
        {"observed_interval_unit", edit("output: {dir: out}", "data: {observed: {file: obs.sgy, sample_interval_unit: ms}}\noutput: {dir: out}"), {}, "data.observed.sample_interval_unit: expected one of microsecond, nanosecond, picosecond", ""},
        {"observed_time_zero_word", edit("output: {dir: out}", "data: {observed: {file: obs.sgy, time_zero: early}}\noutput: {dir: out}"), {}, "data.observed.time_zero: expected a number, got 'early'", ""},
        {"observed_time_zero_list_word", edit("output: {dir: out}", "data: {observed: {file: obs.sgy, time_zero: [1.0e-9, x]}}\noutput: {dir: out}"), {}, "data.observed.time_zero[1]: expected a number", ""},
        {"line_source_both", edit("output: {dir: out}", "data: {observed: {file: obs.sgy, line_source: {velocity: 1.0e8, eps_r: 9}}}\noutput: {dir: out}"), {}, "data.observed.line_source: give either velocity (m/s) or eps_r, not both", ""},
        {"line_source_neither", edit("output: {dir: out}", "data: {observed: {file: obs.sgy, line_source: {}}}\noutput: {dir: out}"), {}, "data.observed.line_source: expected velocity (m/s) or eps_r", ""},
        {"line_source_too_fast", edit("output: {dir: out}", "data: {observed: {file: obs.sgy, line_source: {velocity: 4.0e8}}}\noutput: {dir: out}"), {}, "data.observed.line_source.velocity: expected a number in (0, 2997924", ""},
        {"observed_origin", edit("output: {dir: out}", "data: {observed: {file: obs.sgy, origin: [1]}}\noutput: {dir: out}"), {}, "data.observed.origin: expected [x, z] in metres", ""},
        {"from_data_without_data", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  from_data: true\n"), {}, "survey.from_data: needs data.observed", ":8:14"},
        {"from_data_and_shots", edit("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n", "  from_data: true\n  shots: []\n"), {}, "survey: from_data takes the shots from data.observed: give no other shots", ""},
        {"from_data_missing_file", edit("output: {dir: out}", "data: {observed: absent.sgy}\noutput: {dir: out}").replace(b.find("  shots:"), std::string("  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n").size(), "  from_data: true\n"), {}, "absent.sgy: no such file", ""},
        {"output_segy_word", edit("output: {dir: out}", "output: {dir: out, segy: maybe}"), {}, "output.segy: expected true or false", ""},
        {"not_yaml", edit("grid: {nx: 50, nz: 40, dx: 0.02, dz: 0.02}", "grid: {nx: 50, nz: 40"), {}, "not valid YAML", ""},
        {"top_level_list", "- 1\n- 2\n", {}, "expected a mapping with keys grid, model", ""},
        {"set_without_value", b, {"grid.nx"}, "--set grid.nx: expected key.path=value", ""},
        {"set_bad_yaml", b, {"grid.nx=[1,"}, "--set grid.nx=[1,: the value is not valid YAML", ""},
        {"set_bad_value", b, {"grid.dx=-3"}, "(--set grid.dx=-3): grid.dx: expected a number in (0", ""},
        {"set_unknown_key", b, {"time.ntt=3"}, "(--set time.ntt=3): time.ntt: unknown key (did you mean 'nt'?)", ""},
    };
}

class MalformedRunFile : public ::testing::TestWithParam<Malformed> {};

/// Files the malformed run files name, beside them.
void write_side_files() {
    static bool done = false;
    if (done) return;
    done = true;
    const auto dir = std::filesystem::path(write_run_file("dummy", "")).parent_path();
    Model ok = Model::uniform(Grid{50, 40, 0.02, 0.02}, 5.0, 0.01);
    write_model_h5((dir / "model_ok.h5").string(), ok, "");
    write_model_h5((dir / "model_wrong.h5").string(), Model::uniform(Grid{20, 30, 0.02, 0.02}, 5.0, 0.01), "");
    write_vector_h5((dir / "eps_only.h5").string(), "eps_r", std::vector<double>(4, 1.0), 1.0, "", "");
    write_vector_h5((dir / "other.h5").string(), "other", std::vector<double>(4, 1.0), 1.0, "", "");
    std::ofstream(dir / "wavelet.txt") << "# a wavelet\n0\n1\n0.5\n";
    std::ofstream(dir / "wavelet_bad.txt") << "0\n1\n0.5 0.7\n";
    std::ofstream(dir / "wavelet_nan.txt") << "0\n1\nnan\n";
    std::ofstream(dir / "wavelet_empty.txt") << "# nothing but a comment\n";
    std::ofstream long_file(dir / "wavelet_long.txt");
    for (int i = 0; i < 150; ++i) long_file << i << "\n";
}

TEST_P(MalformedRunFile, StopsWithItsOwnMessage) {
    write_side_files();
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

TEST(RunFile, ModelsFromLayersShapesAndFiles) {
    const std::string text = replaced(kBase, "  eps_r: 6.0\n  sigma: 0.002\n",
                                      "  eps_r: 6.0\n  sigma: 0.002\n"
                                      "  layers: [{top: 0.5, eps_r: 9, sigma: 0.02}, {top: 0.6, bottom: 0.7, mu_r: 2}]\n"
                                      "  shapes:\n"
                                      "    - {type: circle, center: [0.3, 0.2], radius: 0.1, eps_r: 12}\n"
                                      "    - {type: rectangle, from: [0.7, 0.1], to: [0.8, 0.3], sigma: 0.05}\n"
                                      "    - {type: polygon, points: [[0.5, 0.0], [0.6, 0.0], [0.55, 0.1]], eps_r: 3}\n");
    const RunConfig c = load_run_config(write_run_file("shapes", text));
    const Model& m = c.model;
    EXPECT_EQ(m.eps_r(5, 5), 6.0);           // background (0.1, 0.1)
    EXPECT_EQ(m.eps_r(25, 5), 9.0);          // z = 0.5: the layer's top is inside it
    EXPECT_EQ(m.sigma(39, 49), 0.02);        // to the bottom
    EXPECT_EQ(m.mu_r(30, 3), 2.0);           // second layer, z = 0.6
    EXPECT_EQ(m.mu_r(35, 3), 1.0);           // below its bottom (0.7)
    EXPECT_EQ(m.eps_r(24, 5), 6.0);          // just above
    EXPECT_EQ(m.eps_r(10, 15), 12.0);        // circle centre
    EXPECT_EQ(m.eps_r(10, 21), 6.0);         // 0.12 m from the centre
    EXPECT_EQ(m.sigma(10, 37), 0.05);        // rectangle
    EXPECT_EQ(m.eps_r(10, 37), 6.0);         // ... which left eps_r alone
    EXPECT_EQ(m.eps_r(2, 27), 3.0);          // polygon (0.54, 0.04)
    EXPECT_EQ(m.eps_r(8, 27), 6.0);          // below its apex
    // the same model through a file, whole and per parameter
    const auto dir = std::filesystem::path(write_run_file("dummy", "")).parent_path();
    write_model_h5((dir / "shapes_model.h5").string(), m, "");
    const RunConfig f = load_run_config(write_run_file("from_file", replaced(kBase, "  eps_r: 6.0\n  sigma: 0.002\n", "  file: shapes_model.h5\n")));
    EXPECT_EQ(f.model.eps_r.values(), m.eps_r.values());
    EXPECT_EQ(f.model.sigma.values(), m.sigma.values());
    EXPECT_EQ(f.model.mu_r.values(), m.mu_r.values());
    const RunConfig p = load_run_config(write_run_file("per_parameter", replaced(kBase, "sigma: 0.002", "sigma: {file: shapes_model.h5, dataset: sigma}")));
    EXPECT_EQ(p.model.sigma.values(), m.sigma.values());
    EXPECT_EQ(p.model.eps_r(10, 15), 6.0);
    // smoothing keeps a constant constant and spreads a step
    const RunConfig sm = load_run_config(write_run_file("smooth", replaced(text, "  shapes:", "  smoothing: 0.05\n  shapes:")));
    EXPECT_NEAR(sm.model.eps_r(5, 45), 6.0, 1e-12);
    EXPECT_GT(sm.model.eps_r(24, 45), 6.0);
    EXPECT_LT(sm.model.eps_r(25, 45), 9.0);
}

// Numbers as other programs write them: numpy's np.savetxt of a long Ricker
// ends in subnormal samples (-2.181391268132436256e-308), and people write
// 1E-5, +3 and .5; every finite double is read, in wavelet files and in run
// files alike (NaN and infinities are refused: MalformedRunFile).
TEST(RunFile, ReadsEveryFiniteNumberForm) {
    const auto dir = std::filesystem::path(write_run_file("numbers_dummy", "")).parent_path();
    std::ofstream(dir / "wavelet_numpy.txt") << "# np.savetxt\n0.000000000000000000e+00\n1.000000000000000000e+00\n"
                                                "+3\n.5\n1E-5\n-2.181391268132436256e-308\n4.940656458412465442e-324\n";
    const RunConfig w = load_run_config(write_run_file("wavelet_numpy", replaced(kBase, "{type: ricker, frequency: 2.0e8}",
                                                                                     "{type: file, file: wavelet_numpy.txt}")));
    ASSERT_GE(w.wavelet.size(), 7u);
    EXPECT_EQ(w.wavelet[2], 3.0);
    EXPECT_EQ(w.wavelet[3], 0.5);
    EXPECT_EQ(w.wavelet[4], 1e-5);
    EXPECT_EQ(w.wavelet[5], -2.181391268132436256e-308);
    EXPECT_EQ(w.wavelet[6], 4.940656458412465442e-324);  // the least positive double
    const RunConfig y = load_run_config(write_run_file("yaml_numbers", replaced(replaced(kBase, "sigma: 0.002", "sigma: 2.2e-310"),
                                                                                "eps_r: 6.0", "eps_r: +6")));
    EXPECT_EQ(y.model.sigma(0, 0), 2.2e-310);
    EXPECT_EQ(y.model.eps_r(0, 0), 6.0);
}

TEST(RunFile, GeneratedSurveysAndWaveletFiles) {
    const std::string shots = "  shots:\n    - sources: [[0.2, 0.2]]\n      receivers: [[0.8, 0.2]]\n";
    const RunConfig x = load_run_config(write_run_file("crosshole", replaced(kBase, shots,
        "  crosshole: {source_x: 0.1, receiver_x: 0.9, sources: {from: 0.1, to: 0.7, count: 4}, receivers: {from: 0.05, to: 0.75, count: 8}}\n")));
    ASSERT_EQ(x.shots.size(), 4u);
    EXPECT_DOUBLE_EQ(x.shots[3].sources[0].z, 0.7);
    EXPECT_EQ(x.shots[2].sources[0].x, 0.1);
    ASSERT_EQ(x.shots[0].receivers.size(), 8u);
    EXPECT_DOUBLE_EQ(x.shots[0].receivers[7].z, 0.75);
    EXPECT_EQ(x.shots[0].receivers[7].x, 0.9);
    // both ways: the same shots, then as many from the receiver borehole into the source borehole
    const RunConfig b = load_run_config(write_run_file("crosshole_both", replaced(kBase, shots,
        "  crosshole: {source_x: 0.1, receiver_x: 0.9, sources: {from: 0.1, to: 0.7, count: 4}, receivers: {from: 0.05, to: 0.75, count: 8}, both_ways: true}\n")));
    ASSERT_EQ(b.shots.size(), 8u);
    EXPECT_EQ(b.shots[3].sources[0].x, 0.1);
    EXPECT_EQ(b.shots[4].sources[0].x, 0.9);
    EXPECT_DOUBLE_EQ(b.shots[7].sources[0].z, 0.7);
    ASSERT_EQ(b.shots[7].receivers.size(), 8u);
    EXPECT_EQ(b.shots[7].receivers[7].x, 0.1);
    EXPECT_DOUBLE_EQ(b.shots[7].receivers[7].z, 0.75);
    const RunConfig s = load_run_config(write_run_file("surface", replaced(kBase, shots,
        shots + "  surface: {z: 0.02, sources: {from: 0.1, to: 0.6, count: 6}, receivers: {offsets: [0.1, 0.3]}}\n")));
    ASSERT_EQ(s.shots.size(), 7u);  // the listed shot first, then the line
    EXPECT_DOUBLE_EQ(s.shots[6].sources[0].x, 0.6);
    EXPECT_DOUBLE_EQ(s.shots[6].receivers[1].x, 0.9);
    EXPECT_EQ(s.shots[6].receivers[1].z, 0.02);
    const RunConfig fixed = load_run_config(write_run_file("surface_fixed", replaced(kBase, shots,
        "  surface: {sources: {from: 0.1, count: 1}, receivers: {from: 0.0, to: 0.9, count: 10}}\n")));
    ASSERT_EQ(fixed.shots.size(), 1u);
    EXPECT_DOUBLE_EQ(fixed.shots[0].receivers[9].x, 0.9);
    EXPECT_EQ(fixed.shots[0].receivers[9].z, 0.0);

    write_side_files();
    const RunConfig w = load_run_config(write_run_file("wavelet_file", replaced(kBase, "{type: ricker, frequency: 2.0e8}",
                                                                                   "{type: file, file: wavelet.txt, amplitude: 2}")));
    ASSERT_EQ(w.wavelet.size(), 100u);
    EXPECT_EQ(w.wavelet[1], 2.0);
    EXPECT_EQ(w.wavelet[2], 1.0);
    EXPECT_EQ(w.wavelet[3], 0.0);
    EXPECT_EQ(w.survey().shots[0].wavelet, w.wavelet);
}

TEST(RunFile, NoiseIsReproducibleAndScaled) {
    Survey s;
    s.dt = 1e-10;
    s.nt = 4000;
    s.shots.resize(3);
    for (auto& shot : s.shots) shot.receivers.resize(2);
    Traces clean = make_traces(s);
    for (auto& t : clean)
        for (std::size_t i = 0; i < t.samples().size(); ++i) t.samples()[i] = std::sin(0.01 * static_cast<double>(i));
    Traces a = clean, b = clean, c = clean;
    const double std_a = add_noise(a, {20.0, 0.0, 7});
    add_noise(b, {20.0, 0.0, 7});
    add_noise(c, {20.0, 0.0, 8});
    EXPECT_EQ(a[2].samples(), b[2].samples());
    EXPECT_NE(a[2].samples(), c[2].samples());
    EXPECT_NEAR(std_a, std::sqrt(0.5) / 10.0, 2e-3);  // RMS of a sine / 10^(20/20)
    double sum2 = 0;
    std::size_t n = 0;
    for (std::size_t k = 0; k < 3; ++k)
        for (std::size_t i = 0; i < a[k].samples().size(); ++i, ++n) sum2 += std::pow(a[k].samples()[i] - clean[k].samples()[i], 2);
    EXPECT_NEAR(std::sqrt(sum2 / static_cast<double>(n)), std_a, 0.03 * std_a);
    // a shot's noise depends on its index in the survey, not on its neighbours
    Traces last{clean[2]};
    Traces alone = last;
    add_noise(alone, {0.0, std_a, 7});
    Traces all3 = clean;
    add_noise(all3, {0.0, std_a, 7});
    EXPECT_NE(alone[0].samples(), all3[2].samples());  // index 0 vs 2: different streams
    EXPECT_EQ(all3[2].samples(), a[2].samples());
}

TEST(Ranks, ShotsAreSplitInBalancedContiguousBlocks) {
    for (std::size_t shots : {0u, 1u, 5u, 7u, 12u})
        for (int ranks : {1, 2, 3, 4, 9}) {
            std::vector<std::size_t> all;
            std::size_t smallest = shots, largest = 0;
            for (int r = 0; r < ranks; ++r) {
                const auto mine = parallel::shots_of_rank(shots, ranks, r);
                all.insert(all.end(), mine.begin(), mine.end());
                smallest = std::min(smallest, mine.size());
                largest = std::max(largest, mine.size());
            }
            ASSERT_EQ(all.size(), shots);
            for (std::size_t i = 0; i < shots; ++i) EXPECT_EQ(all[i], i);  // each once, in order
            EXPECT_LE(largest - std::min(smallest, largest), 1u) << shots << " shots over " << ranks;
        }
    EXPECT_THROW(parallel::shots_of_rank(3, 2, 2), InvalidArgument);
}

// `inversion.flood: auto` floods the campaigns whose antennas all lie above
// the inverted region (the suite's surface profiles): the low band, the low
// band again from its model flooded for kAutoFloodIterations, then the full
// band of eps_r alone for kAutoFloodedFullBandIterations (one trace a shot)
// or kAutoFloodedWideOffsetFullBandIterations (a shot's offsets spanning the
// inverted ground's depth), smoothed over
// kAutoFloodedFullBandSmoothingShare of its automatic length, and last sigma
// alone below kAutoFloodedSigmaBandOfLowBand of the low band's frequency for
// kAutoFloodedSigmaIterations under the low band's rule; the campaigns with
// antennas in the ground (crosshole, surface to borehole) get sigma alone on
// the low band first, then the low band and the full band (and no stage of
// sigma first where they flood). `flood` on a listed stage needs a stage
// before it, and `inversion.flood` automatic stages.
TEST(Campaign, FloodsTheSurveysFromAbove) {
    const std::string suite = std::string(GPRFWI_SOURCE_DIR) + "/configs/benchmarks/";
    for (const char* name : {"surface-multi-offset", "surface-common-offset", "crosshole-one-sided",
                             "crosshole-both-ways", "surface-to-borehole"}) {
        const Campaign c = load_campaign(suite + name + "/campaign.yaml");
        const std::vector<StageSpec>& st = c.inversion.stages;
        if (std::string(name).rfind("surface-", 0) == 0 && std::string(name) != "surface-to-borehole") {
            ASSERT_EQ(st.size(), 4u) << name;
            EXPECT_EQ(st[1].name, "flood");
            EXPECT_TRUE(st[1].flood);
            EXPECT_FALSE(st[0].flood || st[2].flood || st[3].flood);
            EXPECT_EQ(st[1].max_frequency_hz, st[0].max_frequency_hz);
            EXPECT_EQ(st[1].iterations, kAutoFloodIterations);
            EXPECT_EQ(st[1].min_relative_decrease, st[0].min_relative_decrease);
            // the multi-offset profile's shots record on a fixed spread of 7.5 m over 2.45 m of ground,
            // the common-offset one's at one offset
            EXPECT_EQ(st[2].iterations, std::string(name) == "surface-multi-offset" ? kAutoFloodedWideOffsetFullBandIterations
                                                                                     : kAutoFloodedFullBandIterations) << name;
            EXPECT_TRUE(st[2].invert_eps_r && !st[2].invert_sigma);
            EXPECT_EQ(st[2].min_relative_decrease, 0.0) << name << ": the flooded full band runs its whole length";
            EXPECT_EQ(st[2].min_iterations, 0) << name;
            EXPECT_EQ(st[2].min_relative_change, 0.0) << name;
            EXPECT_DOUBLE_EQ(st[2].smoothing_m, kAutoFloodedFullBandSmoothingShare * kAutoFullBandSmoothingShare *
                                                    c.inversion.smoothing_m) << name;
            EXPECT_EQ(st[3].name, "sigma");
            EXPECT_TRUE(!st[3].invert_eps_r && st[3].invert_sigma);
            EXPECT_DOUBLE_EQ(st[3].max_frequency_hz, kAutoFloodedSigmaBandOfLowBand * st[0].max_frequency_hz);
            EXPECT_EQ(st[3].iterations, kAutoFloodedSigmaIterations);
            EXPECT_EQ(st[3].min_relative_decrease, st[0].min_relative_decrease);
            EXPECT_EQ(st[3].decrease_window, st[0].decrease_window);
            EXPECT_EQ(st[3].smoothing_m, st[0].smoothing_m);
            EXPECT_EQ(st[3].smoothing_sigma_m, st[0].smoothing_sigma_m);
            const Campaign off = load_campaign(suite + name + "/campaign.yaml", {"inversion.flood=false"});
            ASSERT_EQ(off.inversion.stages.size(), 2u) << name << ": from above, no stage of sigma first";
            EXPECT_DOUBLE_EQ(off.inversion.stages[1].smoothing_m, kAutoFullBandSmoothingShare * off.inversion.smoothing_m);
            // a campaign's own smoothing stays the full band's, flooded or not
            const Campaign own = load_campaign(suite + name + "/campaign.yaml", {"inversion.smoothing={eps_r: 0.1, sigma: 0.2}"});
            ASSERT_EQ(own.inversion.stages.size(), 4u) << name;
            EXPECT_LT(own.inversion.stages[2].smoothing_m, 0.0) << "the campaign's smoothing";
        } else {  // sigma alone on the low band first, then the low band and the full band
            ASSERT_EQ(st.size(), 3u) << name;
            EXPECT_EQ(st[0].name, "low_sigma");
            EXPECT_TRUE(!st[0].invert_eps_r && st[0].invert_sigma);
            EXPECT_FALSE(st[0].flood || st[1].flood || st[2].flood) << name;
            EXPECT_DOUBLE_EQ(st[2].smoothing_m, kAutoFullBandSmoothingShare * c.inversion.smoothing_m) << name;
            const Campaign on = load_campaign(suite + name + "/campaign.yaml", {"inversion.flood=true"});
            ASSERT_EQ(on.inversion.stages.size(), 4u) << name;
            EXPECT_EQ(on.inversion.stages[0].name, "low") << "a flooded campaign starts with the low band";
            const Campaign off = load_campaign(suite + name + "/campaign.yaml", {"inversion.sigma_first=false"});
            ASSERT_EQ(off.inversion.stages.size(), 2u) << name;
            EXPECT_EQ(off.inversion.stages[0].name, "low");
        }
    }
    // the count follows the span of a shot's offsets against the inverted ground's depth (2.475 m):
    // a moving array of offsets 0.75 m apart sees the ground from about one angle, a fixed spread of
    // four receivers or two offsets 2.5 m apart from several
    const std::string profile = suite + "surface-common-offset/campaign.yaml";
    auto full_band = [&](const std::string& file, const std::vector<std::string>& sets) {
        return load_campaign(file, sets).inversion.stages.at(2).iterations;
    };
    EXPECT_EQ(full_band(profile, {"survey.surface.sources.to=6.5", "survey.surface.receivers.offsets=[0.5, 0.75, 1.0, 1.25]"}),
              kAutoFloodedFullBandIterations);
    EXPECT_EQ(full_band(profile, {"survey.surface.sources.to=4.5", "survey.surface.receivers.offsets=[0.5, 3.0]"}),
              kAutoFloodedWideOffsetFullBandIterations);
    EXPECT_EQ(full_band(suite + "surface-multi-offset/campaign.yaml", {"survey.surface.receivers.count=4"}),
              kAutoFloodedWideOffsetFullBandIterations);
    EXPECT_EQ(full_band(profile, {"survey.surface.sources.to=4.95", "survey.surface.receivers.offsets=[0.5, 2.8]"}),
              kAutoFloodedFullBandIterations);  // 2.3 m: short of the depth

    const std::string base = suite + "surface-multi-offset/campaign.yaml";
    const std::string listed = "inversion.stages=[{name: a, parameters: [eps_r], iterations: 2}, "
                               "{name: b, parameters: [eps_r], iterations: 2, flood: true}]";
    const Campaign two = load_campaign(base, {listed});
    ASSERT_EQ(two.inversion.stages.size(), 2u);
    EXPECT_TRUE(two.inversion.stages[1].flood);
    EXPECT_THROW(load_campaign(base, {listed, "inversion.flood=true"}), ConfigError);
    EXPECT_THROW(load_campaign(base, {listed, "inversion.sigma_first=true"}), ConfigError);
    EXPECT_THROW(load_campaign(base, {"inversion.sigma_first=maybe"}), ConfigError);
    // asked for from above: sigma alone on the low band before the flooded stages
    const Campaign first = load_campaign(base, {"inversion.sigma_first=true"});
    ASSERT_EQ(first.inversion.stages.size(), 5u);
    EXPECT_EQ(first.inversion.stages[0].name, "low_sigma");
    EXPECT_TRUE(!first.inversion.stages[0].invert_eps_r && !first.inversion.stages[0].flood);
    EXPECT_EQ(first.inversion.stages[1].name, "low");
    EXPECT_TRUE(first.inversion.stages[2].flood);
    EXPECT_THROW(load_campaign(base, {"inversion.stages=[{name: a, parameters: [eps_r], iterations: 2, flood: true}]"}),
                 ConfigError);
}

TEST(RunFile, ExampleRunFileIsTheBuiltInExample) {
    const RunConfig c = load_run_config(std::string(GPRFWI_SOURCE_DIR) + "/configs/example.yaml");
    const Model m = example_model();
    EXPECT_EQ(c.model.eps_r.values(), m.eps_r.values());
    EXPECT_EQ(c.model.sigma.values(), m.sigma.values());
    EXPECT_EQ(c.model.mu_r.values(), m.mu_r.values());
    const Survey a = c.survey(), b = example_survey();
    EXPECT_EQ(a.dt, b.dt);
    EXPECT_EQ(a.nt, b.nt);
    ASSERT_EQ(a.shots.size(), b.shots.size());
    for (std::size_t s = 0; s < a.shots.size(); ++s) {
        EXPECT_EQ(a.shots[s].wavelet, b.shots[s].wavelet);
        EXPECT_NEAR(a.shots[s].sources[0].position.z, b.shots[s].sources[0].position.z, 1e-12);
        EXPECT_EQ(a.shots[s].sources[0].position.x, b.shots[s].sources[0].position.x);
        ASSERT_EQ(a.shots[s].receivers.size(), b.shots[s].receivers.size());
        for (std::size_t r = 0; r < a.shots[s].receivers.size(); ++r) {
            EXPECT_NEAR(a.shots[s].receivers[r].z, b.shots[s].receivers[r].z, 1e-12);
            EXPECT_EQ(a.shots[s].receivers[r].x, b.shots[s].receivers[r].x);
        }
    }
}

TEST(Campaign, InversionSectionIsReadAndChecked) {
    const std::string base = std::string(kBase) + R"(data: {observed: obs.h5}
inversion:
  bounds: {eps_r: [2.0, 20.0], sigma: [1.0e-4, 0.05]}
  misfit: envelope
  stages:
    - {name: low, max_frequency: 1.0e8, parameters: [eps_r], iterations: 5, estimate_wavelet: true}
    - {name: both, parameters: [eps_r, sigma], iterations: 7, min_relative_decrease: 0.01, max_seconds: 60, smoothing: 0}
  regularization: {sigma: {tv: 0.5}}
  illumination: 0.05
  smoothing: 0.1
  taper: {radius: 0.05}
  mask: [{type: rectangle, from: [0, 0], to: [0.98, 0.04]}]
  petsc_options: "-tao_ls_type armijo"
  save: {gradients: yes}
  wavelet_water_level: 0.05
)";
    const Campaign c = load_campaign(write_run_file("campaign", base));
    const InversionSpec& s = c.inversion;
    EXPECT_EQ(s.eps_r_min, 2.0);
    EXPECT_EQ(s.sigma_max, 0.05);
    EXPECT_EQ(s.misfit, MisfitKind::envelope);
    ASSERT_EQ(s.stages.size(), 2u);
    EXPECT_TRUE(s.stages[0].invert_eps_r);
    EXPECT_FALSE(s.stages[0].invert_sigma);
    EXPECT_EQ(s.stages[0].max_frequency_hz, 1.0e8);
    EXPECT_TRUE(s.stages[0].estimate_wavelet);
    EXPECT_FALSE(s.stages[1].estimate_wavelet);
    EXPECT_FALSE(s.stages[0].project_wavelet) << "the envelope misfit is not quadratic in the data";
    {  // the wavelet projected out where it is estimated, or kept from an estimate, unless the campaign says
        const Campaign q = load_campaign(write_run_file("campaign", base), {"inversion.misfit=relative"});
        EXPECT_TRUE(q.inversion.stages[0].project_wavelet);
        EXPECT_TRUE(q.inversion.stages[1].project_wavelet) << "the second stage keeps the first one's estimate";
        const Campaign off = load_campaign(write_run_file("campaign", base),
                                           {"inversion.misfit=l2", "inversion.wavelet_projection=false"});
        EXPECT_FALSE(off.inversion.stages[0].project_wavelet);
        EXPECT_FALSE(off.inversion.stages[1].project_wavelet);
        const Campaign known = load_campaign(
            write_run_file("campaign", base),
            {"inversion.misfit=relative", "inversion.stages=[{name: a, parameters: [eps_r], iterations: 3}]"});
        EXPECT_FALSE(known.inversion.stages[0].project_wavelet) << "a known wavelet";
        const Campaign on = load_campaign(
            write_run_file("campaign", base),
            {"inversion.misfit=relative", "inversion.wavelet_projection=true",
             "inversion.stages=[{name: a, parameters: [eps_r], iterations: 3}]"});
        EXPECT_TRUE(on.inversion.stages[0].project_wavelet) << "asked for";
    }
    {  // the outermost nodes follow their inner neighbours unless the campaign says
        EXPECT_EQ(s.edges, EdgeRule::follow);
        const std::string f = write_run_file("campaign", base);
        EXPECT_EQ(load_campaign(f, {"inversion.edges=fixed"}).inversion.edges, EdgeRule::fixed);
        EXPECT_EQ(load_campaign(f, {"inversion.edges=free"}).inversion.edges, EdgeRule::free);
        EXPECT_EQ(load_campaign(f, {"inversion.fix_edges=true"}).inversion.edges, EdgeRule::fixed) << "older spelling";
        EXPECT_EQ(load_campaign(f, {"inversion.fix_edges=false"}).inversion.edges, EdgeRule::free);
        try {
            load_campaign(f, {"inversion.edges=held"});
            ADD_FAILURE() << "an unknown rule";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("inversion.edges: expected one of follow, fixed, free"), std::string::npos)
                << e.what();
        }
        EXPECT_THROW(load_campaign(f, {"inversion.edges=fixed", "inversion.fix_edges=true"}), ConfigError);
    }
    EXPECT_EQ(s.wavelet_water_level, 0.05);
    EXPECT_EQ(s.illumination_stabilization, 0.05);
    EXPECT_EQ(s.smoothing_m, 0.1);
    EXPECT_EQ(s.smoothing_sigma_m, 0.1) << "one length smooths both";
    EXPECT_LT(s.stages[0].smoothing_m, 0.0) << "the campaign's smoothing";
    EXPECT_LT(s.stages[0].smoothing_sigma_m, 0.0) << "the campaign's smoothing";
    EXPECT_EQ(s.stages[1].smoothing_m, 0.0) << "off in this stage";
    EXPECT_EQ(s.stages[1].smoothing_sigma_m, 0.0) << "off in this stage";
    EXPECT_TRUE(s.stages[1].invert_sigma);
    EXPECT_EQ(s.stages[1].iterations, 7);
    EXPECT_EQ(s.stages[1].min_iterations, 0) << "the rule from the first iteration";
    {
        const Campaign late = load_campaign(
            write_run_file("campaign", base),
            {"inversion.stages=[{name: a, parameters: [eps_r], iterations: 9, min_relative_decrease: 0.02, "
             "decrease_window: 4, min_iterations: 6, min_relative_change: 0.001}]"});
        EXPECT_EQ(late.inversion.stages[0].min_iterations, 6);
        EXPECT_EQ(late.inversion.stages[0].min_relative_change, 0.001);
    }
    EXPECT_EQ(s.stages[1].min_relative_change, 0.0) << "off unless given";
    EXPECT_EQ(s.regularize_sigma.tv, 0.5);
    EXPECT_EQ(s.taper_points.size(), 2u);  // the source and the receiver
    EXPECT_EQ(s.taper_radius_m, 0.05);
    EXPECT_TRUE(s.taper_fill) << "the antennas' nodes take their neighbours' mean unless the campaign says";
    {
        const Campaign unfilled = load_campaign(write_run_file("campaign", base), {"inversion.taper={fill: false}"});
        EXPECT_FALSE(unfilled.inversion.taper_fill);
        EXPECT_GT(unfilled.inversion.taper_radius_m, 0.0) << "the radius left to auto";
        EXPECT_EQ(unfilled.inversion.taper_points.size(), 2u);
    }
    EXPECT_EQ(s.mask.size(), 1u);
    EXPECT_TRUE(s.save_gradients);
    EXPECT_EQ(s.petsc_options, "-tao_ls_type armijo");
    EXPECT_EQ(s.method, InversionMethod::lbfgs);
    EXPECT_EQ(s.max_propagations, 0) << "no budget unless one is set";
    EXPECT_FALSE(s.newton_preconditioner.has_value()) << "auto";
    EXPECT_FALSE(s.stages[0].method.has_value());
    {  // Newton-type methods, per campaign and per stage
        const Campaign n = load_campaign(write_run_file("campaign", base),
                                         {"inversion.misfit=relative", "inversion.method=gauss_newton",
                                          "inversion.newton={cg_iterations: 4, cg_tolerance: 0.3, preconditioner: lbfgs}", "inversion.max_propagations=600",
                                          "inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, method: newton}]"});
        EXPECT_EQ(n.inversion.method, InversionMethod::gauss_newton);
        EXPECT_EQ(n.inversion.newton_cg_iterations, 4);
        EXPECT_EQ(n.inversion.newton_cg_tolerance, 0.3);
        EXPECT_EQ(n.inversion.max_propagations, 600);
        EXPECT_EQ(n.inversion.newton_preconditioner, NewtonPreconditioner::lbfgs);
        ASSERT_EQ(n.inversion.stages.size(), 1u);
        EXPECT_EQ(n.inversion.stages[0].method, InversionMethod::newton);
    }
    // the run sections still read as a plain run file
    EXPECT_EQ(load_run_config(write_run_file("campaign_as_run", base)).grid.nx, 50);

    const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
        {{"inversion.bounds.eps_r=[5, 2]"}, "inversion.bounds.eps_r: expected lower < upper, got [5, 2]"},
        {{"inversion.bounds.sigma=[0, 0.1]"}, "inversion.bounds.sigma[0]: expected a number in (0, 10000], got 0"},
        {{"inversion.misfit=l1"}, "inversion.misfit: expected one of l2, normalized, relative, envelope, got 'l1' (did you mean 'l2'?)"},
        {{"inversion.stages=[{name: a, parameters: [eps], iterations: 3}]"}, "inversion.stages[0].parameters[0]: expected one of eps_r, sigma, got 'eps'"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, min_iterations: 2}]"},
         "inversion.stages[0].min_iterations: applies to the rule on the misfit: give min_relative_decrease too"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, min_relative_decrease: 0.1, min_iterations: 4}]"},
         "inversion.stages[0].min_iterations: expected an integer in [0, 3], got '4'"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, min_relative_change: 0.01}]"},
         "inversion.stages[0].min_relative_change: applies to the rule on the misfit: give min_relative_decrease too"},
        {{"inversion.stages=[{name: a, parameters: [eps_r, eps_r], iterations: 3}]"}, "'eps_r' is listed twice"},
        {{"inversion.stages=[{name: a, parameters: [eps_r]}]"}, "inversion.stages[0]: missing key 'iterations'"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, max_frequency: 2.0e10}]"}, "is not below the Nyquist frequency"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3}, {name: a, parameters: [sigma], iterations: 3}]"}, "'a' names stage 1 too"},
        {{"inversion.stages=[{name: 'a b', parameters: [eps_r], iterations: 3}]"}, "expected a name without spaces"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, iteration: 4}]"}, "inversion.stages[0].iteration: unknown key (did you mean 'iterations'?)"},
        {{"inversion.stages=[]"}, "inversion.stages: expected a non-empty list of stages"},
        {{"inversion.save.models=maybe"}, "inversion.save.models: expected true or false, got 'maybe'"},
        {{"inversion.wavelet_water_level=0"}, "inversion.wavelet_water_level: expected a number in (0, 1], got 0"},
        {{"inversion.illumination=0"}, "inversion.illumination: expected a number in (0, 1], got 0"},
        {{"inversion.smoothing=-0.1"}, "inversion.smoothing: expected a number in [0"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, smoothing: wide}]"}, "inversion.stages[0].smoothing: expected a number, got 'wide'"},
        {{"inversion.taper.radius=-1"}, "inversion.taper.radius: expected a number in [0"},
        {{"inversion.taper.fill=sometimes"}, "inversion.taper.fill: expected true or false"},
        {{"wavelet.amplitude=0"}, "wavelet: an inversion needs a wavelet with energy; this one is zero at every sample"},
        {{"inversion.true_model=absent.h5"}, "inversion.true_model: "},
        {{"inversion.regularisation={}"}, "inversion.regularisation: unknown key (did you mean 'regularization'?)"},
        {{"inversion.scan=[eps]"}, "inversion.scan[0]: expected one of eps_r, sigma, got 'eps'"},
        {{"inversion.scan=[sigma, sigma]"}, "inversion.scan[1]: 'sigma' is listed twice"},
        {{"inversion.scan=yes"}, "inversion.scan: expected none, auto or a list of parameters"},
        {{"inversion.method=bfgs"}, "inversion.method: expected one of lbfgs, gauss_newton, newton, got 'bfgs'"},
        {{"inversion.method=newton"}, "inversion.misfit: the envelope misfit has no Hessian yet"},
        {{"inversion.stages=[{name: a, parameters: [eps_r], iterations: 3, method: gauss_newton}]"},
         "inversion.misfit: the envelope misfit has no Hessian yet"},
        {{"inversion.newton={cg_iterations: 0}"}, "inversion.newton.cg_iterations: expected an integer in [1, 1000]"},
        {{"inversion.newton={preconditioner: jacobi}"}, "inversion.newton.preconditioner: expected one of smoothing, lbfgs, got 'jacobi'"},
        {{"inversion.max_propagations=0"}, "inversion.max_propagations: expected an integer in [1, 1000000000]"},
        {{"inversion.wavelet_projection=true"},
         "inversion.wavelet_projection: the envelope misfit is not quadratic in the data"},
        {{"inversion.wavelet_projection=sometimes"}, "inversion.wavelet_projection: expected true or false"},
    };
    for (const auto& [overrides, expected] : bad) {
        try {
            load_campaign(write_run_file("campaign", base), overrides);
            ADD_FAILURE() << "no error for " << overrides[0];
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
        }
    }
    try {  // a campaign without observed data
        load_campaign(write_run_file("campaign_no_data", replaced(base, "data: {observed: obs.h5}\n", "")));
        ADD_FAILURE() << "no error without data.observed";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("an inversion needs observed data"), std::string::npos) << e.what();
    }
}

// A campaign that names only data, survey, starting model and bounds gets
// the defaults of docs/inversion.md, "Defaults"; each can be given instead.
TEST(Campaign, DefaultsFollowTheWavelengthAndTheModelSize) {
    const std::string base = std::string(kBase) + R"(data: {observed: obs.h5}
inversion:
  bounds: {eps_r: [2.0, 20.0], sigma: [1.0e-4, 0.05]}
)";
    const Campaign c = load_campaign(write_run_file("campaign_defaults", base));
    const InversionSpec& s = c.inversion;
    EXPECT_EQ(s.misfit, MisfitKind::relative);
    ASSERT_GT(s.smoothing_m, 0.0);
    const double wavelength = s.smoothing_m / kAutoSmoothingWavelengths;
    EXPECT_NEAR(s.smoothing_sigma_m, kAutoSigmaSmoothingWavelengths * wavelength, 1e-12);
    const Grid& g = c.run.grid;
    const double area = (g.nx - 1) * g.dx * (g.nz - 1) * g.dz;
    EXPECT_NEAR(s.regularize_sigma.tv, kAutoTotalVariation * wavelength / area, 1e-15);
    EXPECT_EQ(s.regularize_sigma.tikhonov, 0.0);
    EXPECT_TRUE(s.sigma_tv_follows_sensitivity) << "the automatic sigma weight follows the survey's sensitivity";
    EXPECT_NEAR(s.regularize_eps_r.tv, kAutoTotalVariation * wavelength / area, 1e-15);
    EXPECT_EQ(s.regularize_eps_r.tikhonov, 0.0);
    EXPECT_FALSE(s.scan.eps_r || s.scan.sigma) << "no background scan unless asked for";
    EXPECT_NEAR(s.taper_radius_m, std::max(kAutoTaperWavelengths * wavelength, std::max(g.dx, g.dz)), 1e-12);
    // the taper reaches at least the antennas' nearest nodes: a cell where a wavelength spans few
    EXPECT_EQ(automatic_settings(10 * g.dx, g).taper_radius_m, std::max(g.dx, g.dz));
    EXPECT_NEAR(automatic_settings(100 * g.dx, g).taper_radius_m, kAutoTaperWavelengths * 100 * g.dx, 1e-12);

    const Campaign given = load_campaign(write_run_file("campaign_given", base),
                                         {"inversion.regularization={sigma: {tikhonov: 0.01}}", "inversion.smoothing={sigma: 0.3}",
                                          "inversion.misfit=l2"});
    EXPECT_EQ(given.inversion.regularize_sigma.tv, 0.0) << "a given sigma regularisation replaces the default";
    EXPECT_EQ(given.inversion.regularize_sigma.tikhonov, 0.01);
    EXPECT_FALSE(given.inversion.sigma_tv_follows_sensitivity) << "a given sigma regularisation is taken as given";
    EXPECT_EQ(given.inversion.regularize_eps_r.tv, s.regularize_eps_r.tv) << "eps_r's regularisation stays auto";
    EXPECT_EQ(given.inversion.smoothing_sigma_m, 0.3);
    EXPECT_EQ(given.inversion.smoothing_m, s.smoothing_m) << "eps_r's smoothing stays auto";
    EXPECT_EQ(given.inversion.misfit, MisfitKind::l2);
    const Campaign off = load_campaign(write_run_file("campaign_off", base),
                                       {"inversion.regularization={sigma: {tv: 0}, eps_r: {tikhonov: 0.002}}"});
    EXPECT_EQ(off.inversion.regularize_sigma.tv, 0.0);
    EXPECT_EQ(off.inversion.regularize_eps_r.tv, 0.0) << "a given eps_r regularisation replaces the default";
    EXPECT_EQ(off.inversion.regularize_eps_r.tikhonov, 0.002);

    // the background scan: the parameters asked for, on half the dominant frequency, a step from the record
    const Campaign scan = load_campaign(write_run_file("campaign_scan", base), {"inversion.scan=[sigma, eps_r]"});
    EXPECT_TRUE(scan.inversion.scan.eps_r && scan.inversion.scan.sigma);
    const double f_dominant = dominant_frequency(c.run.wavelet, c.run.dt_s);
    EXPECT_NEAR(scan.inversion.scan.max_frequency_hz, kScanBandOfDominant * f_dominant, 1e-6 * f_dominant);
    EXPECT_NEAR(scan.inversion.scan.eps_r_step,
                std::min(std::log(1.25), 1.0 / (scan.inversion.scan.max_frequency_hz * c.run.nt * c.run.dt_s)), 1e-12);
    // the stages (antennas in the ground): sigma alone on the low band, then eps_r and sigma on the low
    // band, then on all data
    ASSERT_EQ(s.stages.size(), 3u);
    const StageSpec &first = s.stages[0], &low = s.stages[1], &full = s.stages[2];
    EXPECT_EQ(first.name, "low_sigma");
    EXPECT_TRUE(!first.invert_eps_r && first.invert_sigma);
    EXPECT_NEAR(low.max_frequency_hz, kAutoLowBandOfDominant * f_dominant, 1e-6 * f_dominant);
    EXPECT_EQ(full.max_frequency_hz, 0.0);
    EXPECT_TRUE(low.invert_eps_r && low.invert_sigma && full.invert_eps_r && full.invert_sigma);
    // the low band stops where its misfit settles; the full band runs its iterations, and on while its misfit
    // still falls (docs/inversion.md, "Defaults")
    EXPECT_EQ(low.min_relative_decrease, 0.005);
    EXPECT_EQ(low.decrease_window, 5);
    EXPECT_EQ(low.min_iterations, 0);
    EXPECT_EQ(full.min_iterations, kAutoFullBandIterations);
    EXPECT_EQ(full.min_relative_decrease, kAutoFullBandMinDecrease);
    EXPECT_EQ(full.decrease_window, kAutoFullBandDecreaseWindow);
    EXPECT_EQ(full.min_relative_change, kAutoFullBandMinChange) << "and on while the model still moves";
    EXPECT_EQ(low.min_relative_change, 0.0);
    EXPECT_EQ(full.iterations, kAutoFullBandMaxIterations);
    EXPECT_LT(full.min_iterations, full.iterations);
    // sigma's stage is the low band's in all but eps_r
    EXPECT_EQ(first.max_frequency_hz, low.max_frequency_hz);
    EXPECT_EQ(first.iterations, low.iterations);
    EXPECT_EQ(first.min_relative_decrease, low.min_relative_decrease);
    EXPECT_EQ(first.decrease_window, low.decrease_window);
    EXPECT_EQ(first.smoothing_m, low.smoothing_m);
    EXPECT_EQ(first.smoothing_sigma_m, low.smoothing_sigma_m);
    EXPECT_EQ(first.estimate_wavelet, low.estimate_wavelet);
    const Campaign estimated = load_campaign(write_run_file("campaign_estimated", base), {"inversion.estimate_wavelet=true"});
    ASSERT_EQ(estimated.inversion.stages.size(), 3u);
    EXPECT_TRUE(estimated.inversion.stages[0].estimate_wavelet && estimated.inversion.stages[0].project_wavelet);
    const Campaign none = load_campaign(write_run_file("campaign_scan_none", base), {"inversion.scan=none"});
    EXPECT_FALSE(none.inversion.scan.eps_r || none.inversion.scan.sigma);
}

// `stages: auto` is logged written out as a list, which inversion.stages
// reads back to the same stages, numbers to the last bit: a user edits one
// thing of the automatic stages and keeps the rest.
TEST(Campaign, AutomaticStagesWrittenOutReadBackTheSame) {
    const std::string base = std::string(kBase) + R"(data: {observed: obs.h5}
inversion:
  bounds: {eps_r: [2.0, 20.0], sigma: [1.0e-4, 0.05]}
)";
    const std::string prefix = "stages auto, written out (inversion.stages reads this list back to the same stages): ";
    // the run file and the --set lines on it; the last a model a tenth of a
    // metre across, whose automatic smoothing (metres: the record's band) is
    // far longer than the model and must read back all the same
    const std::string tiny = replaced(replaced(replaced(base, "dx: 0.02, dz: 0.02", "dx: 0.002, dz: 0.002"), "[[0.2, 0.2]]",
                                         "[[0.02, 0.02]]"),
                                "[[0.8, 0.2]]", "[[0.08, 0.02]]");
    const std::vector<std::pair<std::string, std::vector<std::string>>> variants{
        {base, {}}, {base, {"inversion.estimate_wavelet=true"}}, {base, {"inversion.flood=true"}},
        {base, {"inversion.sigma_first=false"}}, {tiny, {}}};
    for (const auto& [text, sets] : variants) {
        const Campaign automatic = load_campaign(write_run_file("campaign_auto_stages", text), sets);
        if (text == tiny) {
            ASSERT_GT(automatic.inversion.smoothing_sigma_m, 10 * 0.1) << "not a model far shorter than its smoothing";
        }
        std::string list;
        for (const std::string& d : automatic.inversion.defaults)
            if (d.rfind(prefix, 0) == 0) list = d.substr(prefix.size());
        ASSERT_FALSE(list.empty()) << "no written-out stages among the logged defaults";
        // (inversion.flood and sigma_first belong to stages: auto; listed stages carry their own keys)
        std::vector<std::string> listed;
        for (const std::string& set : sets)
            if (set.rfind("inversion.flood=", 0) != 0 && set.rfind("inversion.sigma_first=", 0) != 0) listed.push_back(set);
        listed.push_back("inversion.stages=" + list);
        const Campaign back = load_campaign(write_run_file("campaign_listed_stages", text), listed);
        const std::vector<StageSpec>& a = automatic.inversion.stages;
        const std::vector<StageSpec>& b = back.inversion.stages;
        std::size_t count = 3;  // low_sigma, low, full
        if (!sets.empty() && sets[0] == "inversion.flood=true") count = 4;  // low, flood, full, sigma
        if (!sets.empty() && sets[0] == "inversion.sigma_first=false") count = 2;
        ASSERT_EQ(a.size(), count) << list;
        ASSERT_EQ(b.size(), a.size()) << list;
        for (std::size_t i = 0; i < a.size(); ++i) {
            SCOPED_TRACE(a[i].name + " in " + list);
            EXPECT_EQ(b[i].name, a[i].name);
            EXPECT_EQ(b[i].max_frequency_hz, a[i].max_frequency_hz);
            EXPECT_EQ(b[i].invert_eps_r, a[i].invert_eps_r);
            EXPECT_EQ(b[i].invert_sigma, a[i].invert_sigma);
            EXPECT_EQ(b[i].iterations, a[i].iterations);
            EXPECT_EQ(b[i].min_relative_decrease, a[i].min_relative_decrease);
            if (a[i].min_relative_decrease > 0) {
                EXPECT_EQ(b[i].decrease_window, a[i].decrease_window);
                EXPECT_EQ(b[i].min_iterations, a[i].min_iterations);
                EXPECT_EQ(b[i].min_relative_change, a[i].min_relative_change);
            }
            EXPECT_EQ(b[i].gradient_tolerance, a[i].gradient_tolerance);
            EXPECT_EQ(b[i].max_seconds, a[i].max_seconds);
            EXPECT_EQ(b[i].max_evaluations, a[i].max_evaluations);
            EXPECT_EQ(b[i].estimate_wavelet, a[i].estimate_wavelet);
            EXPECT_EQ(b[i].project_wavelet, a[i].project_wavelet);
            EXPECT_EQ(b[i].smoothing_m, a[i].smoothing_m);
            EXPECT_EQ(b[i].smoothing_sigma_m, a[i].smoothing_sigma_m);
            EXPECT_EQ(b[i].method, a[i].method);
            EXPECT_EQ(b[i].flood, a[i].flood);
        }
        EXPECT_EQ(back.inversion.smoothing_m, automatic.inversion.smoothing_m);
        EXPECT_EQ(back.inversion.smoothing_sigma_m, automatic.inversion.smoothing_sigma_m);

        // what the campaign's output files record: the inversion as resolved, beside the run's values
        const std::vector<YAML::Node> docs = YAML::LoadAll(automatic.record({}));
        ASSERT_EQ(docs.size(), 2u);
        const YAML::Node inv = docs[1]["inversion"];
        ASSERT_TRUE(inv.IsMap()) << automatic.record({});
        EXPECT_EQ(docs[1]["grid"]["nx"].as<int>(), automatic.run.grid.nx) << "the run's values stay";
        ASSERT_EQ(inv["stages"].size(), a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            EXPECT_EQ(inv["stages"][i]["name"].as<std::string>(), a[i].name);
            EXPECT_EQ(inv["stages"][i]["iterations"].as<int>(), a[i].iterations);
        }
        EXPECT_EQ(inv["smoothing"]["eps_r"].as<double>(), automatic.inversion.smoothing_m);
        EXPECT_EQ(inv["regularization"]["eps_r"]["tv"].as<double>(), automatic.inversion.regularize_eps_r.tv);
        EXPECT_EQ(inv["regularization"]["sigma_share_follows_sensitivity"].as<bool>(), true);
        EXPECT_EQ(inv["taper"]["radius"].as<double>(), automatic.inversion.taper_radius_m);
        EXPECT_EQ(inv["bounds"]["sigma"][1].as<double>(), 0.05);
        // each number in the shortest text that reads back to it (yaml-cpp's own writes 0.05 as 0.050000000000000003)
        EXPECT_EQ(YAML::Dump(inv["bounds"]["sigma"][1]), "0.05");
        EXPECT_EQ(YAML::Dump(docs[1]["grid"]["dx"]), text == tiny ? "0.002" : "0.02");
        EXPECT_EQ(inv["misfit"].as<std::string>(), "relative");
        ASSERT_EQ(inv["auto"].size(), automatic.inversion.defaults.size());
        EXPECT_EQ(inv["auto"][0].as<std::string>(), automatic.inversion.defaults[0]);
    }
}

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
