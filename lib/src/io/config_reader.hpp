#pragma once
// The YAML schema walker shared by the run-file and campaign readers (not
// installed): each function checks one key's type and range and reports
// failures where the user can find them: file:line:col, the key path, what was
// expected, or the --set that gave the value.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "gprfwi/numbers.hpp"

#include "gprfwi/config.hpp"

namespace gprfwi::detail {

/// The word `auto` where a value may be left to gprfwi.
inline bool is_auto(const YAML::Node& n) { return n && n.IsScalar() && n.Scalar() == "auto"; }

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
            if (!it->first.IsScalar()) fail(it->first, path, "expected a key (a word), got a list or mapping as a key");
            const std::string key = it->first.Scalar();
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
        const std::optional<double> parsed = parse_finite_double(n.Scalar());
        if (!parsed) {  // a word, or NaN or an infinity (in YAML's spelling or strtod's)
            std::string lower = n.Scalar();
            for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            const bool non_finite = lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos;
            fail(n, path, fmt::format("expected a {}number, got '{}'", non_finite ? "finite " : "", n.Scalar()));
        }
        const double v = *parsed;
        if (v < lo || v > hi || (lo_open && v == lo))
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

    bool boolean(const YAML::Node& n, const std::string& path) const {
        if (n.IsScalar()) {
            const std::string v = n.Scalar();
            if (v == "true" || v == "yes" || v == "on") return true;
            if (v == "false" || v == "no" || v == "off") return false;
        }
        fail(n, path, fmt::format("expected true or false, got '{}'", n.IsScalar() ? n.Scalar() : "a non-scalar"));
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

    static std::string join(const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
    }

    const std::string& file() const { return file_; }

    /// A path named in the run file: relative paths are relative to its folder.
    std::string resolve(const std::string& p) const {
        const std::filesystem::path f(p);
        return f.is_relative() ? (std::filesystem::path(file_).parent_path() / f).lexically_normal().string() : p;
    }

private:
    std::string file_;
    std::map<std::string, std::string> overridden_;
};

/// Applies `key.path=value` to the tree (the value parsed as YAML); returns key.path.
inline std::string apply_override(YAML::Node root, const std::string& text, const std::string& file) {
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


/// The run file's YAML tree after the overrides, and which key paths they set.
struct LoadedYaml {
    YAML::Node root;
    std::map<std::string, std::string> overridden;
};

inline LoadedYaml load_yaml(const std::string& path, const std::vector<std::string>& overrides) {
    std::ifstream in(path);
    if (!in) throw ConfigError(fmt::format("{}: cannot open the run file", path));
    LoadedYaml y;
    try {
        y.root = YAML::Load(in);
    } catch (const YAML::Exception& e) {
        throw ConfigError(fmt::format("{}:{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
    }
    if (!y.root || y.root.IsNull()) y.root = YAML::Node(YAML::NodeType::Map);
    for (const auto& o : overrides) y.overridden[apply_override(y.root, o, path)] = o;
    return y;
}

/// The run-file sections of `root` (everything but `inversion`).
RunConfig read_run_sections(const YAML::Node& root, const Reader& r, const std::vector<std::string>& extra_top_keys);

}  // namespace gprfwi::detail
