#pragma once
// Run files (YAML): read, validated key by key, into the library's types.
// Every error names the file, line and column, the key path and what was
// expected; unknown keys get a did-you-mean hint and the allowed keys.

#include <string>
#include <vector>

#include "gprfwi/error.hpp"
#include "gprfwi/grid.hpp"
#include "gprfwi/model.hpp"
#include "gprfwi/propagator.hpp"
#include "gprfwi/survey.hpp"

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

/// A validated run file. Units: metres, seconds, hertz, siemens per metre, amperes.
struct RunConfig {
    std::string file;
    Grid grid;
    double eps_r = 0, sigma = 0, mu_r = 1;  // constant model
    double wavelet_frequency_hz = 0, wavelet_delay_s = -1, wavelet_amplitude_a = 1;  // Ricker
    double dt_s = 0;
    int nt = 0;
    std::vector<ShotSpec> shots;
    PropagatorOptions propagator;
    std::string observed;  // data.observed, empty when absent
    std::string output_dir = "run";

    Model model() const;
    Survey survey() const;
    /// The run file as given, with each override appended as a `# --set` line:
    /// what output files record as their `config`.
    std::string record(const std::vector<std::string>& overrides) const;
};

/// Reads and validates `path`, after applying `--set key.path=value` overrides.
/// Throws ConfigError (file:line:col, key path, what was expected) or, for a
/// file that cannot be read or parsed, ConfigError with the parser's position.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// The allowed word closest to `word` (edit distance at most 2), or "".
std::string closest_word(const std::string& word, const std::vector<std::string>& allowed);

}  // namespace gprfwi
