#pragma once
// Run files (YAML): read, validated key by key, into the library's types.
// Every error names the file, line and column, the key path and what was
// expected; unknown keys get a did-you-mean hint and the allowed keys. Files
// the run file names (models, wavelets) are read and checked while loading,
// so a run file that loads is one that runs.

#include <cstdint>
#include <string>
#include <vector>

#include "gprfwi/error.hpp"
#include "gprfwi/field_data.hpp"
#include "gprfwi/grid.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/model_builder.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/survey.hpp"
#include "gprfwi/traces.hpp"

namespace gprfwi {

/// A run file that does not say what gprfwi expects.
class ConfigError : public InvalidArgument {
public:
    using InvalidArgument::InvalidArgument;
};

struct ShotSpec {
    std::vector<Position> sources;    // m
    std::vector<Position> receivers;  // m
};

/// Gaussian noise added to synthetic data (`gprfwi forward`), reproducible:
/// shot s draws from a generator seeded with (seed, s), whatever the rank count.
struct NoiseSpec {
    double snr_db = 0;   // > 0: noise RMS = data RMS (all shots) / 10^(snr_db/20)
    double std_vm = 0;   // > 0: noise standard deviation in V/m
    std::uint64_t seed = 0;
    bool enabled() const { return snr_db > 0 || std_vm > 0; }
};

/// Adds the noise to traces of the whole survey (shot s drawn from a
/// generator seeded with (seed, s)); returns the noise standard deviation used, V/m.
double add_noise(Traces& traces, const NoiseSpec& noise);

/// A validated run file. Units: metres, seconds, hertz, siemens per metre, amperes.
struct RunConfig {
    std::string file;
    Grid grid;
    Model model;                  // built and checked while loading
    std::string model_summary;    // how it was built, for logs
    std::vector<double> wavelet;  // source current, A, nt samples at (n + 1/2) dt
    std::string wavelet_summary;
    double dt_s = 0;
    int nt = 0;
    std::vector<ShotSpec> shots;
    PropagatorOptions propagator;
    int shots_per_batch = 0;  // per rank and device; 0: all of a rank's shots at once
    NoiseSpec noise;
    ObservedSpec observed;  // data.observed (file resolved against the run file's folder; empty when absent)
    std::string output_dir = "run";
    bool output_segy = false;    // output.segy: forward also writes synthetic.sgy
    bool has_inversion = false;  // the file has an `inversion` section (load_campaign reads it)

    Survey survey() const;
    /// What output files record as their `config`: two YAML documents, the run
    /// file as given (each override appended as a `# --set` line), then
    /// resolved().
    std::string record(const std::vector<std::string>& overrides) const;
    /// Every value the run uses, defaults included, as YAML (the model and
    /// survey summarised: their arrays and positions are in the data files).
    std::string resolved() const;
};

/// Reads and validates `path`, after applying `--set key.path=value` overrides.
/// Throws ConfigError (file:line:col, key path, what was expected) or, for a
/// file that cannot be read or parsed, ConfigError with the parser's position.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// A run file with an `inversion` section (docs/configuration.md): the run
/// sections describe the starting model, the survey and the observed data.
struct Campaign {
    RunConfig run;
    InversionSpec inversion;

    /// RunConfig::record with the inversion as resolved in the second
    /// document (`inversion:` bounds, misfit, the stages written out as a
    /// list that inversion.stages reads back, smoothing, regularisation,
    /// taper, and `auto`: each automatic choice in words), so that a model
    /// file says what its campaign's `auto` meant.
    std::string record(const std::vector<std::string>& overrides) const;
};
Campaign load_campaign(const std::string& path, const std::vector<std::string>& overrides = {});

/// The allowed word closest to `word` (edit distance at most 2), or "".
std::string closest_word(const std::string& word, const std::vector<std::string>& allowed);

/// Reads a wavelet file: text (one sample per line, `#` comments) or HDF5
/// (a 1D dataset; its `dt` attribute, when present, must equal dt). Pads with
/// zeros to nt samples; throws Error naming the file when it holds more.
std::vector<double> read_wavelet_file(const std::string& path, const std::string& dataset, double dt, int nt);

}  // namespace gprfwi
