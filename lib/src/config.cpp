// The run-file reader: a small schema walk over the YAML tree. Each reader
// function checks one key's type and range and reports failures where the
// user can find them: file:line:col, the key path, what was expected.

#include "gprfwi/config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "gprfwi/wavelet.hpp"

namespace gprfwi {

std::string closest_word(const std::string& word, const std::vector<std::string>& allowed) {
    std::string best;
    std::size_t best_d = 3;
    for (const std::string& a : allowed) {
        std::vector<std::size_t> prev(a.size() + 1), cur(a.size() + 1);
        for (std::size_t j = 0; j <= a.size(); ++j) prev[j] = j;
        for (std::size_t i = 1; i <= word.size(); ++i) {
            cur[0] = i;
            for (std::size_t j = 1; j <= a.size(); ++j)
                cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] == a[j - 1] ? 0 : 1)});
            std::swap(prev, cur);
        }
        if (prev[a.size()] < best_d) {
            best_d = prev[a.size()];
            best = a;
        }
    }
    return best;
}

namespace {

// Hostile-size limits: far beyond any 2D GPR model, far below overflow.
constexpr long long kMaxNodesPerAxis = 100000;
constexpr long long kMaxSamples = 100000000;
constexpr std::size_t kMaxShots = 100000, kMaxPointsPerShot = 100000;

class Reader {
public:
    /// `overridden`: key path -> the --set text that gave it its value.
    Reader(std::string file, std::map<std::string, std::string> overridden)
        : file_(std::move(file)), overridden_(std::move(overridden)) {}

    [[noreturn]] void fail(const YAML::Node& n, const std::string& path, const std::string& what) const {
        throw ConfigError(fmt::format("{}: {}: {}", where(n, path), path, what));
    }

    /// file:line:col of the node, or the --set that put it there.
    std::string where(const YAML::Node& n, const std::string& path) const {
        for (std::string p = path; !p.empty();) {  // the path, then each parent
            if (const auto it = overridden_.find(p); it != overridden_.end()) return file_ + " (--set " + it->second + ")";
            const auto cut = p.find_last_of(".[");
            if (cut == std::string::npos) break;
            p.resize(cut);
        }
        const YAML::Mark m = n.Mark();
        if (m.is_null() || m.line < 0) return file_ + " (--set)";
        return fmt::format("{}:{}:{}", file_, m.line + 1, m.column + 1);
    }

    /// A mapping whose keys are all in `allowed`.
    void map(const YAML::Node& n, const std::string& path, const std::vector<std::string>& allowed) const {
        if (!n.IsMap()) fail(n, path, "expected a mapping with keys " + join(allowed));
        for (auto it = n.begin(); it != n.end(); ++it) {
            const std::string key = it->first.as<std::string>();
            if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
            const std::string hint = closest_word(key, allowed);
            fail(it->first, dotted(path, key),
                 fmt::format("unknown key{}; allowed keys: {}", hint.empty() ? "" : " (did you mean '" + hint + "'?)",
                             join(allowed)));
        }
    }

    YAML::Node required(const YAML::Node& map, const std::string& path, const std::string& key) const {
        const YAML::Node n = map[key];
        if (!n) fail(map, path, "missing key '" + key + "'");
        return n;
    }

    double number(const YAML::Node& n, const std::string& path, double lo, double hi, bool lo_open = false) const {
        if (!n.IsScalar()) fail(n, path, fmt::format("expected a number in {}{}, {}]", lo_open ? "(" : "[", lo, hi));
        double v;
        try {
            v = n.as<double>();
        } catch (const YAML::Exception&) {
            fail(n, path, fmt::format("expected a number, got '{}'", n.Scalar()));
        }
        if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo))
            fail(n, path, fmt::format("expected a number in {}{}, {}], got {}", lo_open ? "(" : "[", lo, hi, n.Scalar()));
        return v;
    }

    long long integer(const YAML::Node& n, const std::string& path, long long lo, long long hi) const {
        if (n.IsScalar()) {
            try {
                const long long v = n.as<long long>();
                if (v >= lo && v <= hi) return v;
            } catch (const YAML::Exception&) {
            }
        }
        fail(n, path, fmt::format("expected an integer in [{}, {}], got '{}'", lo, hi, n.IsScalar() ? n.Scalar() : "a non-scalar"));
    }

    std::string text(const YAML::Node& n, const std::string& path, const std::vector<std::string>& choices = {}) const {
        if (!n.IsScalar()) fail(n, path, "expected a string");
        const std::string v = n.Scalar();
        if (!choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end()) {
            const std::string hint = closest_word(v, choices);
            fail(n, path, fmt::format("expected one of {}, got '{}'{}", join(choices), v,
                                      hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
        }
        return v;
    }

    /// [x, z] in metres, inside the model.
    Position position(const YAML::Node& n, const std::string& path, const Grid& g) const {
        if (!n.IsSequence() || n.size() != 2) fail(n, path, "expected a position [x, z] in metres");
        const Position p{number(n[0], path + "[0]", -1e30, 1e30), number(n[1], path + "[1]", -1e30, 1e30)};
        const double tx = 1e-9 * g.dx, tz = 1e-9 * g.dz;
        if (p.x < -tx || p.x > g.width_m() + tx || p.z < -tz || p.z > g.depth_m() + tz)
            fail(n, path, fmt::format("position (x = {} m, z = {} m) is outside the model [0, {}] m x [0, {}] m",
                                      p.x, p.z, g.width_m(), g.depth_m()));
        return p;
    }

    std::vector<Position> positions(const YAML::Node& n, const std::string& path, const Grid& g, bool non_empty) const {
        if (!n.IsSequence()) fail(n, path, "expected a list of positions [[x, z], ...]");
        if (non_empty && n.size() == 0) fail(n, path, "expected at least one position");
        if (n.size() > kMaxPointsPerShot) fail(n, path, fmt::format("more than {} positions", kMaxPointsPerShot));
        std::vector<Position> out;
        for (std::size_t i = 0; i < n.size(); ++i) out.push_back(position(n[i], fmt::format("{}[{}]", path, i), g));
        return out;
    }

    static std::string dotted(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

private:
    static std::string join(const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
    }
    std::string file_;
    std::map<std::string, std::string> overridden_;
};

/// Applies `key.path=value` to the tree (the value parsed as YAML); returns key.path.
std::string apply_override(YAML::Node root, const std::string& text, const std::string& file) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ConfigError(fmt::format("{}: --set {}: expected key.path=value", file, text));
    std::vector<std::string> keys;
    std::string key;
    for (char ch : text.substr(0, eq)) {
        if (ch == '.') {
            keys.push_back(key);
            key.clear();
        } else {
            key += ch;
        }
    }
    keys.push_back(key);
    YAML::Node cur;
    cur.reset(root);
    for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
        if (!cur[keys[i]] || !cur[keys[i]].IsMap()) cur[keys[i]] = YAML::Node(YAML::NodeType::Map);
        YAML::Node next = cur[keys[i]];
        cur.reset(next);
    }
    try {
        cur[keys.back()] = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
        throw ConfigError(fmt::format("{}: --set {}: the value is not valid YAML ({})", file, text, e.msg));
    }
    return text.substr(0, eq);
}

}  // namespace

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
    std::ifstream in(path);
    if (!in) throw ConfigError(fmt::format("{}: cannot open the run file", path));
    YAML::Node root;
    try {
        root = YAML::Load(in);
    } catch (const YAML::Exception& e) {
        throw ConfigError(fmt::format("{}:{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
    }
    if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    std::map<std::string, std::string> overridden;
    for (const auto& o : overrides) overridden[apply_override(root, o, path)] = o;

    const Reader r(path, overridden);
    RunConfig c;
    c.file = path;
    r.map(root, "", {"grid", "model", "wavelet", "time", "survey", "propagator", "data", "output"});

    const YAML::Node grid = r.required(root, "", "grid");
    r.map(grid, "grid", {"nx", "nz", "dx", "dz"});
    c.grid.nx = static_cast<int>(r.integer(r.required(grid, "grid", "nx"), "grid.nx", 2, kMaxNodesPerAxis));
    c.grid.nz = static_cast<int>(r.integer(r.required(grid, "grid", "nz"), "grid.nz", 2, kMaxNodesPerAxis));
    c.grid.dx = r.number(r.required(grid, "grid", "dx"), "grid.dx", 0, 1e6, true);
    c.grid.dz = r.number(r.required(grid, "grid", "dz"), "grid.dz", 0, 1e6, true);
    if (static_cast<double>(c.grid.nx) * c.grid.nz > 2.0e9)
        r.fail(grid, "grid", fmt::format("{} x {} nodes is more than 2e9", c.grid.nx, c.grid.nz));

    const YAML::Node model = r.required(root, "", "model");
    r.map(model, "model", {"eps_r", "sigma", "mu_r", "file", "dataset"});
    if (model["file"] || model["dataset"])
        r.fail(model, "model", "models from files need HDF5, which this version does not read yet; give constant "
                               "eps_r, sigma (and mu_r)");
    c.eps_r = r.number(r.required(model, "model", "eps_r"), "model.eps_r", 1, 1000);
    c.sigma = r.number(r.required(model, "model", "sigma"), "model.sigma", 0, 1e4);
    if (model["mu_r"]) c.mu_r = r.number(model["mu_r"], "model.mu_r", 0, 1e4, true);

    const YAML::Node time = r.required(root, "", "time");
    r.map(time, "time", {"dt", "nt"});
    c.dt_s = r.number(r.required(time, "time", "dt"), "time.dt", 0, 1.0, true);
    c.nt = static_cast<int>(r.integer(r.required(time, "time", "nt"), "time.nt", 1, kMaxSamples));

    const YAML::Node wavelet = r.required(root, "", "wavelet");
    r.map(wavelet, "wavelet", {"type", "frequency", "delay", "amplitude"});
    r.text(r.required(wavelet, "wavelet", "type"), "wavelet.type", {"ricker"});
    c.wavelet_frequency_hz = r.number(r.required(wavelet, "wavelet", "frequency"), "wavelet.frequency", 0, 1e12, true);
    if (c.wavelet_frequency_hz > 0.5 / c.dt_s)
        r.fail(wavelet["frequency"], "wavelet.frequency",
               fmt::format("{} Hz is above the Nyquist frequency {} Hz of time.dt", c.wavelet_frequency_hz, 0.5 / c.dt_s));
    if (wavelet["delay"]) c.wavelet_delay_s = r.number(wavelet["delay"], "wavelet.delay", 0, 1e3);
    if (wavelet["amplitude"]) c.wavelet_amplitude_a = r.number(wavelet["amplitude"], "wavelet.amplitude", -1e30, 1e30);

    const YAML::Node survey = r.required(root, "", "survey");
    r.map(survey, "survey", {"shots"});
    const YAML::Node shots = r.required(survey, "survey", "shots");
    if (!shots.IsSequence() || shots.size() == 0) r.fail(shots, "survey.shots", "expected a non-empty list of shots");
    if (shots.size() > kMaxShots) r.fail(shots, "survey.shots", fmt::format("more than {} shots", kMaxShots));
    for (std::size_t i = 0; i < shots.size(); ++i) {
        const std::string p = fmt::format("survey.shots[{}]", i);
        r.map(shots[i], p, {"sources", "receivers"});
        c.shots.push_back({r.positions(r.required(shots[i], p, "sources"), p + ".sources", c.grid, true),
                           r.positions(r.required(shots[i], p, "receivers"), p + ".receivers", c.grid, false)});
    }

    if (const YAML::Node prop = root["propagator"]) {
        r.map(prop, "propagator", {"backend", "precision", "stencil", "pml"});
        auto& o = c.propagator;
        if (prop["backend"]) o.backend = parse_backend(r.text(prop["backend"], "propagator.backend", {"auto", "cpu", "cuda"}));
        if (prop["precision"])
            o.precision = parse_precision(r.text(prop["precision"], "propagator.precision", {"single", "double"}));
        if (prop["stencil"]) {
            const auto s = r.integer(prop["stencil"], "propagator.stencil", 2, 8);
            if (s % 2) r.fail(prop["stencil"], "propagator.stencil", fmt::format("expected 2, 4, 6 or 8, got {}", s));
            o.stencil_order = static_cast<int>(s);
        }
        if (const YAML::Node pml = prop["pml"]) {
            r.map(pml, "propagator.pml", {"width", "left", "right", "top", "bottom"});
            if (pml["width"]) o.cpml.widths = PmlWidths::uniform(static_cast<int>(r.integer(pml["width"], "propagator.pml.width", 0, 1000)));
            for (auto [key, field] : {std::pair{"left", &PmlWidths::left}, std::pair{"right", &PmlWidths::right},
                                      std::pair{"top", &PmlWidths::top}, std::pair{"bottom", &PmlWidths::bottom}})
                if (pml[key]) o.cpml.widths.*field = static_cast<int>(r.integer(pml[key], std::string("propagator.pml.") + key, 0, 1000));
        }
    }
    if (const YAML::Node data = root["data"]) {
        r.map(data, "data", {"observed"});
        if (data["observed"]) c.observed = r.text(data["observed"], "data.observed");
    }
    if (const YAML::Node output = root["output"]) {
        r.map(output, "output", {"dir"});
        if (output["dir"]) c.output_dir = r.text(output["dir"], "output.dir");
    }
    return c;
}

std::string RunConfig::record(const std::vector<std::string>& overrides) const {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    for (const auto& o : overrides) text << "\n# --set " << o;
    return text.str();
}

Model RunConfig::model() const { return Model::uniform(grid, eps_r, sigma, mu_r); }

Survey RunConfig::survey() const {
    Survey s;
    s.dt = dt_s;
    s.nt = nt;
    const auto w = ricker(nt, dt_s, wavelet_frequency_hz, wavelet_delay_s, wavelet_amplitude_a);
    for (const ShotSpec& spec : shots) {
        Shot shot;
        for (const Position& p : spec.sources) shot.sources.push_back({p, 1.0});
        shot.receivers = spec.receivers;
        shot.wavelet = w;
        s.shots.push_back(std::move(shot));
    }
    return s;
}

}  // namespace gprfwi
