// The run-file reader: a small schema walk over the YAML tree. Each reader
// function checks one key's type and range and reports failures where the
// user can find them: file:line:col, the key path, what was expected.

#include "gprfwi/config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "io/config_reader.hpp"
#include "inversion/flood.hpp"
#include "inversion/stage_variables.hpp"
#include "gprfwi/background_scan.hpp"
#include "gprfwi/constants.hpp"
#include "gprfwi/files.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/numbers.hpp"
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

namespace detail {
namespace {

void read_grid(const YAML::Node& root, const Reader& r, RunConfig& c) {
    const YAML::Node grid = r.required(root, "", "grid");
    r.map(grid, "grid", {"nx", "nz", "dx", "dz"});
    c.grid.nx = static_cast<int>(r.integer(r.required(grid, "grid", "nx"), "grid.nx", 2, kMaxNodesPerAxis));
    c.grid.nz = static_cast<int>(r.integer(r.required(grid, "grid", "nz"), "grid.nz", 2, kMaxNodesPerAxis));
    c.grid.dx = r.number(r.required(grid, "grid", "dx"), "grid.dx", 0, 1e6, true);
    c.grid.dz = r.number(r.required(grid, "grid", "dz"), "grid.dz", 0, 1e6, true);
    if (static_cast<double>(c.grid.nx) * c.grid.nz > 2.0e9)
        r.fail(grid, "grid", fmt::format("{} x {} nodes is more than 2e9", c.grid.nx, c.grid.nz));
    const double model_bytes = 3.0 * sizeof(double) * c.grid.nx * c.grid.nz;  // eps_r, sigma, mu_r
    if (model_bytes > static_cast<double>(physical_memory_bytes()))
        r.fail(grid, "grid", fmt::format("{} x {} nodes need {:.3g} GB for the model's three arrays alone; this machine has {:.3g} GB",
                                         c.grid.nx, c.grid.nz, model_bytes / 1e9, static_cast<double>(physical_memory_bytes()) / 1e9));
}

struct ParameterRange {
    const char* key;
    double lo, hi;
    bool lo_open;
    Array2D Model::*field;
};
constexpr ParameterRange kParameters[] = {{"eps_r", 1, 1000, false, &Model::eps_r},
                                          {"sigma", 0, 1e4, false, &Model::sigma},
                                          {"mu_r", 0, 1e4, true, &Model::mu_r}};

/// Reads a dataset of a model file, turning its errors into errors at `n`.
Array2D read_array(const Reader& r, const YAML::Node& n, const std::string& path, const std::string& file,
                   const std::string& dataset, const Grid& g, const ParameterRange& p) {
    Array2D a;
    try {
        a = read_model_array_h5(file, dataset, g);
    } catch (const Error& e) {
        r.fail(n, path, e.what());
    }
    for (int iz = 0; iz < g.nz; ++iz)
        for (int ix = 0; ix < g.nx; ++ix) {
            const double v = a(iz, ix);
            if (v < p.lo || v > p.hi || (p.lo_open && v == p.lo))
                r.fail(n, path, fmt::format("{}: {}[{}][{}] = {} is outside {}{}, {}]", file, dataset, iz, ix, v,
                                            p.lo_open ? "(" : "[", p.lo, p.hi));
        }
    return a;
}

std::optional<double> optional_value(const YAML::Node& n, const Reader& r, const std::string& path,
                                     const ParameterRange& p) {
    if (!n[p.key]) return std::nullopt;
    return r.number(n[p.key], path + "." + p.key, p.lo, p.hi, p.lo_open);
}

void check_region_has_values(const Reader& r, const YAML::Node& n, const std::string& path, const ModelRegion& m) {
    if (!m.eps_r && !m.sigma && !m.mu_r) r.fail(n, path, "expected at least one of eps_r, sigma, mu_r");
}

ModelRegion read_shape(const YAML::Node& n, const Reader& r, const std::string& path, bool with_values) {
    const auto point = [&](const YAML::Node& p, const std::string& where) {
        if (!p.IsSequence() || p.size() != 2) r.fail(p, where, "expected a point [x, z] in metres");
        return Position{r.number(p[0], where + "[0]", -1e30, 1e30), r.number(p[1], where + "[1]", -1e30, 1e30)};
    };
    if (!n.IsMap()) r.fail(n, path, "expected a shape {type: circle | rectangle | polygon, ...}");
    const std::string type = r.text(r.required(n, path, "type"), path + ".type", {"circle", "rectangle", "polygon"});
    std::vector<std::string> keys;
    if (type == "circle") keys = {"type", "center", "radius"};
    else if (type == "rectangle") keys = {"type", "from", "to"};
    else keys = {"type", "points"};
    if (with_values) keys.insert(keys.end(), {"eps_r", "sigma", "mu_r"});
    r.map(n, path, keys);
    ModelRegion m;
    if (type == "circle") {
        m.kind = ModelRegion::Kind::circle;
        m.center = point(r.required(n, path, "center"), path + ".center");
        m.radius = r.number(r.required(n, path, "radius"), path + ".radius", 0, 1e30, true);
    } else if (type == "rectangle") {
        m.kind = ModelRegion::Kind::rectangle;
        m.from = point(r.required(n, path, "from"), path + ".from");
        m.to = point(r.required(n, path, "to"), path + ".to");
    } else {
        m.kind = ModelRegion::Kind::polygon;
        const YAML::Node pts = r.required(n, path, "points");
        if (!pts.IsSequence() || pts.size() < 3) r.fail(pts, path + ".points", "expected at least 3 points [[x, z], ...]");
        for (std::size_t k = 0; k < pts.size(); ++k) m.points.push_back(point(pts[k], fmt::format("{}.points[{}]", path, k)));
    }
    if (with_values) {
        m.eps_r = optional_value(n, r, path, kParameters[0]);
        m.sigma = optional_value(n, r, path, kParameters[1]);
        m.mu_r = optional_value(n, r, path, kParameters[2]);
        check_region_has_values(r, n, path, m);
    }
    return m;
}

void read_model(const YAML::Node& root, const Reader& r, RunConfig& c) {
    const YAML::Node model = r.required(root, "", "model");
    r.map(model, "model", {"file", "eps_r", "sigma", "mu_r", "layers", "shapes", "smoothing"});
    const Grid& g = c.grid;
    c.model = Model::uniform(g, 1.0, 0.0, 1.0);
    std::string summary;
    std::string whole_file;
    if (model["file"]) {
        whole_file = r.resolve(r.text(model["file"], "model.file"));
        summary = "from " + whole_file;
    }
    for (const ParameterRange& p : kParameters) {
        const std::string path = std::string("model.") + p.key;
        const YAML::Node n = model[p.key];
        Array2D& dest = c.model.*(p.field);
        if (n && n.IsMap()) {  // {file: F.h5, dataset: NAME}
            r.map(n, path, {"file", "dataset"});
            const std::string file = r.resolve(r.text(r.required(n, path, "file"), path + ".file"));
            const std::string dataset = n["dataset"] ? r.text(n["dataset"], path + ".dataset") : p.key;
            dest = read_array(r, n, path, file, dataset, g, p);
            summary += fmt::format("{}{} from {}:{}", summary.empty() ? "" : ", ", p.key, file, dataset);
        } else if (n) {
            const double v = r.number(n, path, p.lo, p.hi, p.lo_open);
            dest = Array2D(g.nz, g.nx, v);
            summary += fmt::format("{}{} = {}", summary.empty() ? "" : ", ", p.key, v);
        } else if (!whole_file.empty()) {
            bool present = false;
            try {
                present = h5_has_dataset(whole_file, p.key);
            } catch (const Error& e) {
                r.fail(model["file"], "model.file", e.what());
            }
            if (present)
                dest = read_array(r, model["file"], "model.file", whole_file, p.key, g, p);
            else if (std::string(p.key) != "mu_r")
                r.fail(model["file"], "model.file", fmt::format("{} has no dataset /{} (and model.{} is not given)",
                                                                whole_file, p.key, p.key));
        } else if (std::string(p.key) != "mu_r") {
            r.fail(model, "model", fmt::format("missing key '{}' (a number, or {{file: F.h5, dataset: NAME}}; or give "
                                               "model.file)", p.key));
        }
    }
    std::vector<ModelRegion> regions;
    if (const YAML::Node layers = model["layers"]) {
        if (!layers.IsSequence()) r.fail(layers, "model.layers", "expected a list of layers [{top, bottom, eps_r, sigma, mu_r}]");
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const std::string path = fmt::format("model.layers[{}]", i);
            const YAML::Node n = layers[i];
            r.map(n, path, {"top", "bottom", "eps_r", "sigma", "mu_r"});
            ModelRegion m;
            m.kind = ModelRegion::Kind::layer;
            m.top = r.number(r.required(n, path, "top"), path + ".top", -1e30, 1e30);
            if (n["bottom"]) {
                m.bottom = r.number(n["bottom"], path + ".bottom", -1e30, 1e30);
                if (m.bottom <= m.top) r.fail(n["bottom"], path + ".bottom", fmt::format("expected a depth below top = {} m", m.top));
            }
            m.eps_r = optional_value(n, r, path, kParameters[0]);
            m.sigma = optional_value(n, r, path, kParameters[1]);
            m.mu_r = optional_value(n, r, path, kParameters[2]);
            check_region_has_values(r, n, path, m);
            regions.push_back(m);
        }
        summary += fmt::format(", {} layer(s)", layers.size());
    }
    if (const YAML::Node shapes = model["shapes"]) {
        if (!shapes.IsSequence()) r.fail(shapes, "model.shapes", "expected a list of shapes [{type: circle | rectangle | polygon, ...}]");
        for (std::size_t i = 0; i < shapes.size(); ++i)
            regions.push_back(read_shape(shapes[i], r, fmt::format("model.shapes[{}]", i), true));
        summary += fmt::format(", {} shape(s)", shapes.size());
    }
    paint_regions(c.model, regions);
    if (model["smoothing"]) {
        // a Gaussian longer than the model is all but its mean: the bound keeps the kernel's size sane
        const double len = r.number(model["smoothing"], "model.smoothing", 0, std::max(g.width_m(), g.depth_m()));
        smooth_gaussian(c.model.eps_r, len / g.dx, len / g.dz);
        smooth_gaussian(c.model.sigma, len / g.dx, len / g.dz);
        smooth_gaussian(c.model.mu_r, len / g.dx, len / g.dz);
        summary += fmt::format(", smoothed over {} m", len);
    }
    c.model_summary = summary;
}

void read_time_and_wavelet(const YAML::Node& root, const Reader& r, RunConfig& c) {
    const YAML::Node time = r.required(root, "", "time");
    r.map(time, "time", {"dt", "nt"});
    c.dt_s = r.number(r.required(time, "time", "dt"), "time.dt", 0, 1.0, true);
    c.nt = static_cast<int>(r.integer(r.required(time, "time", "nt"), "time.nt", 1, kMaxSamples));

    const YAML::Node wavelet = r.required(root, "", "wavelet");
    if (!wavelet.IsMap()) r.fail(wavelet, "wavelet", "expected a mapping {type: ricker | file, ...}");
    const std::string type = r.text(r.required(wavelet, "wavelet", "type"), "wavelet.type", {"ricker", "file"});
    double amplitude = 1.0;
    if (type == "ricker") {
        r.map(wavelet, "wavelet", {"type", "frequency", "delay", "amplitude"});
        const double f = r.number(r.required(wavelet, "wavelet", "frequency"), "wavelet.frequency", 0, 1e12, true);
        if (f > 0.5 / c.dt_s)
            r.fail(wavelet["frequency"], "wavelet.frequency",
                   fmt::format("{} Hz is above the Nyquist frequency {} Hz of time.dt", f, 0.5 / c.dt_s));
        double delay = -1;
        if (wavelet["delay"]) delay = r.number(wavelet["delay"], "wavelet.delay", 0, 1e3);
        if (wavelet["amplitude"]) amplitude = r.number(wavelet["amplitude"], "wavelet.amplitude", -1e30, 1e30);
        c.wavelet = ricker(c.nt, c.dt_s, f, delay, amplitude);
        c.wavelet_summary = fmt::format("Ricker {} Hz, delay {} s, amplitude {} A", f, delay < 0 ? 1.5 / f : delay, amplitude);
    } else {
        r.map(wavelet, "wavelet", {"type", "file", "dataset", "amplitude"});
        const std::string file = r.resolve(r.text(r.required(wavelet, "wavelet", "file"), "wavelet.file"));
        const std::string dataset = wavelet["dataset"] ? r.text(wavelet["dataset"], "wavelet.dataset") : "wavelet";
        if (wavelet["amplitude"]) amplitude = r.number(wavelet["amplitude"], "wavelet.amplitude", -1e30, 1e30);
        try {
            c.wavelet = read_wavelet_file(file, dataset, c.dt_s, c.nt);
        } catch (const Error& e) {
            r.fail(wavelet["file"], "wavelet.file", e.what());
        }
        for (double& v : c.wavelet) v *= amplitude;
        c.wavelet_summary = fmt::format("from {} (x {})", file, amplitude);
    }
}

/// `count` values evenly spaced from `from` to `to` (count 1: `from`).
std::vector<double> read_range(const YAML::Node& n, const Reader& r, const std::string& path) {
    r.map(n, path, {"from", "to", "count"});
    const double from = r.number(r.required(n, path, "from"), path + ".from", -1e30, 1e30);
    const auto count = r.integer(r.required(n, path, "count"), path + ".count", 1, static_cast<long long>(kMaxPointsPerShot));
    const double to = n["to"] ? r.number(n["to"], path + ".to", -1e30, 1e30) : from;
    if (count > 1 && !n["to"]) r.fail(n, path, "missing key 'to' (needed when count > 1)");
    std::vector<double> v(static_cast<std::size_t>(count));
    for (long long i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = count == 1 ? from : from + (to - from) * static_cast<double>(i) / static_cast<double>(count - 1);
    return v;
}

void check_inside(const Reader& r, const YAML::Node& n, const std::string& path, const Grid& g, const Position& p) {
    const double tx = 1e-9 * g.dx, tz = 1e-9 * g.dz;
    if (p.x < -tx || p.x > g.width_m() + tx || p.z < -tz || p.z > g.depth_m() + tz)
        r.fail(n, path, fmt::format("position (x = {} m, z = {} m) is outside the model [0, {}] m x [0, {}] m", p.x, p.z,
                                    g.width_m(), g.depth_m()));
}

void read_survey(const YAML::Node& root, const Reader& r, RunConfig& c) {
    const YAML::Node survey = r.required(root, "", "survey");
    r.map(survey, "survey", {"shots", "crosshole", "surface", "from_data"});
    if (const YAML::Node from = survey["from_data"]; from && r.boolean(from, "survey.from_data")) {
        if (survey.size() != 1) r.fail(survey, "survey", "from_data takes the shots from data.observed: give no other shots");
        if (c.observed.file.empty()) r.fail(from, "survey.from_data", "needs data.observed");
        TraceData geometry;
        try {
            geometry = read_trace_file(c.observed, false);
        } catch (const Error& e) {
            r.fail(from, "survey.from_data", e.what());
        }
        for (std::size_t s = 0; s < geometry.survey.shots.size(); ++s) {
            const Shot& shot = geometry.survey.shots[s];
            ShotSpec spec;
            for (const Source& src : shot.sources) spec.sources.push_back(src.position);
            spec.receivers = shot.receivers;
            for (const Position& p : spec.sources) check_inside(r, from, fmt::format("survey.from_data: shot {} source", s), c.grid, p);
            for (const Position& p : spec.receivers)
                check_inside(r, from, fmt::format("survey.from_data: shot {} receiver", s), c.grid, p);
            c.shots.push_back(std::move(spec));
        }
    }
    if (const YAML::Node shots = survey["shots"]) {
        if (!shots.IsSequence()) r.fail(shots, "survey.shots", "expected a list of shots");
        if (shots.size() > kMaxShots) r.fail(shots, "survey.shots", fmt::format("more than {} shots", kMaxShots));
        for (std::size_t i = 0; i < shots.size(); ++i) {
            const std::string p = fmt::format("survey.shots[{}]", i);
            r.map(shots[i], p, {"sources", "receivers"});
            c.shots.push_back({r.positions(r.required(shots[i], p, "sources"), p + ".sources", c.grid, true),
                               r.positions(r.required(shots[i], p, "receivers"), p + ".receivers", c.grid, false)});
        }
    }
    if (const YAML::Node x = survey["crosshole"]) {
        r.map(x, "survey.crosshole", {"source_x", "receiver_x", "sources", "receivers", "both_ways"});
        const double sx = r.number(r.required(x, "survey.crosshole", "source_x"), "survey.crosshole.source_x", -1e30, 1e30);
        const double rx = r.number(r.required(x, "survey.crosshole", "receiver_x"), "survey.crosshole.receiver_x", -1e30, 1e30);
        const auto sz = read_range(r.required(x, "survey.crosshole", "sources"), r, "survey.crosshole.sources");
        const auto rz = read_range(r.required(x, "survey.crosshole", "receivers"), r, "survey.crosshole.receivers");
        const bool both = x["both_ways"] && r.boolean(x["both_ways"], "survey.crosshole.both_ways");
        // sources in the source borehole, and with both_ways the same depths in the receiver borehole
        // recording at the receiver depths in the source borehole
        for (const auto& [from, to] : both ? std::vector<std::pair<double, double>>{{sx, rx}, {rx, sx}}
                                           : std::vector<std::pair<double, double>>{{sx, rx}})
            for (double z : sz) {
                ShotSpec shot{{{from, z}}, {}};
                check_inside(r, x["sources"], "survey.crosshole.sources", c.grid, shot.sources[0]);
                for (double z2 : rz) {
                    shot.receivers.push_back({to, z2});
                    check_inside(r, x["receivers"], "survey.crosshole.receivers", c.grid, shot.receivers.back());
                }
                c.shots.push_back(std::move(shot));
            }
    }
    if (const YAML::Node s = survey["surface"]) {
        r.map(s, "survey.surface", {"z", "sources", "receivers"});
        const double z = s["z"] ? r.number(s["z"], "survey.surface.z", -1e30, 1e30) : 0.0;
        const auto sx = read_range(r.required(s, "survey.surface", "sources"), r, "survey.surface.sources");
        const YAML::Node rec = r.required(s, "survey.surface", "receivers");
        std::vector<double> fixed, offsets;
        if (rec.IsMap() && rec["offsets"]) {
            r.map(rec, "survey.surface.receivers", {"offsets"});
            const YAML::Node o = rec["offsets"];
            if (!o.IsSequence() || o.size() == 0) r.fail(o, "survey.surface.receivers.offsets", "expected a list of offsets in metres");
            for (std::size_t i = 0; i < o.size(); ++i)
                offsets.push_back(r.number(o[i], fmt::format("survey.surface.receivers.offsets[{}]", i), -1e30, 1e30));
        } else {
            fixed = read_range(rec, r, "survey.surface.receivers");
        }
        for (double x : sx) {
            ShotSpec shot{{{x, z}}, {}};
            check_inside(r, s["sources"], "survey.surface.sources", c.grid, shot.sources[0]);
            for (double xr : fixed) shot.receivers.push_back({xr, z});
            for (double off : offsets) shot.receivers.push_back({x + off, z});
            for (const Position& p : shot.receivers) check_inside(r, rec, "survey.surface.receivers", c.grid, p);
            c.shots.push_back(std::move(shot));
        }
    }
    if (c.shots.empty()) r.fail(survey, "survey", "expected at least one shot (survey.shots, survey.crosshole or survey.surface)");
    if (c.shots.size() > kMaxShots) r.fail(survey, "survey", fmt::format("more than {} shots", kMaxShots));
}

void read_propagator(const YAML::Node& root, const Reader& r, RunConfig& c) {
    const YAML::Node prop = root["propagator"];
    if (!prop) return;
    r.map(prop, "propagator", {"backend", "precision", "stencil", "pml", "snapshots", "device", "shots_per_batch", "shot_groups", "cuda"});
    auto& o = c.propagator;
    if (prop["backend"]) o.backend = parse_backend(r.text(prop["backend"], "propagator.backend", kBackendNames.names()));
    if (prop["precision"]) o.precision = parse_precision(r.text(prop["precision"], "propagator.precision", kPrecisionNames.names()));
    if (prop["stencil"]) {
        const auto s = r.integer(prop["stencil"], "propagator.stencil", 2, 8);
        if (s % 2) r.fail(prop["stencil"], "propagator.stencil", fmt::format("expected 2, 4, 6 or 8, got {}", s));
        o.stencil_order = static_cast<int>(s);
    }
    if (prop["device"]) o.device = static_cast<int>(r.integer(prop["device"], "propagator.device", -1, 1023));
    if (prop["shots_per_batch"])
        c.shots_per_batch = static_cast<int>(r.integer(prop["shots_per_batch"], "propagator.shots_per_batch", 0, kMaxShots));
    if (prop["shot_groups"])
        o.shot_groups = static_cast<int>(r.integer(prop["shot_groups"], "propagator.shot_groups", 0, kMaxShotGroups));
    if (const YAML::Node cuda = prop["cuda"]) {  // the CUDA backend's knobs, for measurements and tests (docs/gpu.md)
        const std::string p = "propagator.cuda";
        r.map(cuda, p, {"step_rows", "adjoint_rows", "pair_rows", "l2_persist", "dependent_launch", "poison_device_memory"});
        CudaTuning& t = o.cuda;
        if (cuda["step_rows"]) t.step_rows = static_cast<int>(r.integer(cuda["step_rows"], p + ".step_rows", 0, 100000));
        if (cuda["adjoint_rows"])
            t.adjoint_rows = static_cast<int>(r.integer(cuda["adjoint_rows"], p + ".adjoint_rows", 0, 100000));
        if (cuda["pair_rows"])
            t.pair_rows = static_cast<int>(r.integer(cuda["pair_rows"], p + ".pair_rows", CudaTuning::kPairsWherePay, 100000));
        if (cuda["l2_persist"]) t.l2_persist = r.boolean(cuda["l2_persist"], p + ".l2_persist");
        if (cuda["dependent_launch"]) t.dependent_launch = r.boolean(cuda["dependent_launch"], p + ".dependent_launch");
        if (cuda["poison_device_memory"]) t.poison_device_memory = r.boolean(cuda["poison_device_memory"], p + ".poison_device_memory");
    }
    if (const YAML::Node pml = prop["pml"]) {
        r.map(pml, "propagator.pml", {"width", "left", "right", "top", "bottom", "reflection", "power", "kappa_max"});
        if (pml["width"]) o.cpml.widths = PmlWidths::uniform(static_cast<int>(r.integer(pml["width"], "propagator.pml.width", 0, 1000)));
        for (auto [key, field] : {std::pair{"left", &PmlWidths::left}, std::pair{"right", &PmlWidths::right},
                                  std::pair{"top", &PmlWidths::top}, std::pair{"bottom", &PmlWidths::bottom}})
            if (pml[key]) o.cpml.widths.*field = static_cast<int>(r.integer(pml[key], std::string("propagator.pml.") + key, 0, 1000));
        if (pml["reflection"]) o.cpml.reflection = r.number(pml["reflection"], "propagator.pml.reflection", 0, 1, true);
        if (pml["power"]) o.cpml.power = r.number(pml["power"], "propagator.pml.power", 1, 6);
        if (pml["kappa_max"]) o.cpml.kappa_max = r.number(pml["kappa_max"], "propagator.pml.kappa_max", 1, 100);
    }
    if (const YAML::Node snap = prop["snapshots"]) {
        const std::string p = "propagator.snapshots";
        r.map(snap, p, {"interval", "compression", "storage", "scratch_dir", "checkpoint", "binomial"});
        auto& so = o.snapshots;
        if (const YAML::Node n = snap["interval"])
            so.interval = is_auto(n) ? 0 : static_cast<int>(r.integer(n, p + ".interval", 1, 100000));
        if (snap["compression"]) so.compression = parse_compression(r.text(snap["compression"], p + ".compression", kCompressionNames.names()));
        if (snap["storage"]) so.storage = parse_storage(r.text(snap["storage"], p + ".storage", kStorageNames.names()));
        if (snap["scratch_dir"]) so.scratch_dir = r.text(snap["scratch_dir"], p + ".scratch_dir");
        if (const YAML::Node n = snap["checkpoint"]) {
            if (is_auto(n)) so.checkpoint_steps = -1;
            else if (n.IsScalar() && n.Scalar() == "off") so.checkpoint_steps = 0;
            else so.checkpoint_steps = static_cast<int>(r.integer(n, p + ".checkpoint", 1, kMaxSamples));
            if (so.checkpoint_steps != 0 && so.interval != 1)
                r.fail(n, p + ".checkpoint", "checkpointing is exact and needs snapshots.interval 1");
        }
        if (const YAML::Node n = snap["binomial"]) {
            if (is_auto(n)) so.binomial_slots = -1;
            else if (n.IsScalar() && n.Scalar() == "off") so.binomial_slots = 0;
            else so.binomial_slots = static_cast<int>(r.integer(n, p + ".binomial", 1, 100000));
            if (so.binomial_slots != 0 && so.interval != 1)
                r.fail(n, p + ".binomial", "binomial checkpointing is exact and needs snapshots.interval 1");
            if (so.binomial_slots != 0 && so.checkpoint_steps != 0)
                r.fail(n, p + ".binomial", "give either checkpoint (every C steps) or binomial (S saved states), not both");
        }
    }
}

/// `data.observed`: a path, or a map with the file and how to prepare it.
void read_data(const YAML::Node& root, const Reader& r, RunConfig& c) {
    const YAML::Node data = root["data"];
    if (!data) return;
    r.map(data, "data", {"observed"});
    const YAML::Node n = data["observed"];
    if (!n) return;
    const std::string p = "data.observed";
    ObservedSpec& o = c.observed;
    const YAML::Node file = n.IsMap() ? r.required(n, p, "file") : n;
    o.file = r.resolve(r.text(file, n.IsMap() ? p + ".file" : p));
    if (n.IsMap()) {
        r.map(n, p, {"file", "format", "sample_interval", "sample_interval_unit", "time_zero", "line_source", "origin"});
        if (n["format"]) o.format = r.text(n["format"], p + ".format", {"hdf5", "segy"}) == "segy" ? DataFormat::segy : DataFormat::hdf5;
    }
    if (!n.IsMap() || !n["format"]) {
        try {
            o.format = data_format_of(o.file);
        } catch (const Error& e) {
            r.fail(file, n.IsMap() ? p + ".file" : p, std::string(e.what()) + "; or give data.observed.format");
        }
    }
    if (!n.IsMap()) return;
    const bool segy = o.format == DataFormat::segy;
    if (const YAML::Node dt = n["sample_interval"]) {
        if (!segy) r.fail(dt, p + ".sample_interval", "only for SEG-Y files (HDF5 traces carry their dt)");
        o.segy.sample_interval_s = r.number(dt, p + ".sample_interval", 0, 1, true);
    }
    if (const YAML::Node u = n["sample_interval_unit"]) {
        if (!segy) r.fail(u, p + ".sample_interval_unit", "only for SEG-Y files");
        const std::string unit = r.text(u, p + ".sample_interval_unit", {"microsecond", "nanosecond", "picosecond"});
        o.segy.interval_unit_s = unit == "microsecond" ? 1e-6 : unit == "nanosecond" ? 1e-9 : 1e-12;
    }
    if (const YAML::Node t = n["time_zero"]) {
        if (t.IsSequence()) {
            if (t.size() == 0) r.fail(t, p + ".time_zero", "expected a time in s or a list with one per shot");
            for (std::size_t i = 0; i < t.size(); ++i)
                o.time_zero_s.push_back(r.number(t[i], fmt::format("{}.time_zero[{}]", p, i), -1, 1));
        } else {
            o.time_zero_s.push_back(r.number(t, p + ".time_zero", -1, 1));
        }
    }
    if (const YAML::Node ls = n["line_source"]) {
        r.map(ls, p + ".line_source", {"velocity", "eps_r"});
        if (ls["velocity"] && ls["eps_r"]) r.fail(ls, p + ".line_source", "give either velocity (m/s) or eps_r, not both");
        if (ls["velocity"]) o.line_source_velocity = r.number(ls["velocity"], p + ".line_source.velocity", 0, speed_of_light(), true);
        else if (ls["eps_r"]) o.line_source_velocity = speed_of_light() / std::sqrt(r.number(ls["eps_r"], p + ".line_source.eps_r", 1, 1000));
        else r.fail(ls, p + ".line_source", "expected velocity (m/s) or eps_r of the medium between sources and receivers");
        o.line_source = LineSource::to_2d;
    }
    if (const YAML::Node origin = n["origin"]) {
        if (!origin.IsSequence() || origin.size() != 2) r.fail(origin, p + ".origin", "expected [x, z] in metres");
        o.origin = {r.number(origin[0], p + ".origin[0]", -1e30, 1e30), r.number(origin[1], p + ".origin[1]", -1e30, 1e30)};
    }
}

void read_rest(const YAML::Node& root, const Reader& r, RunConfig& c) {
    if (const YAML::Node noise = root["noise"]) {
        r.map(noise, "noise", {"snr_db", "std", "seed"});
        if (noise["snr_db"] && noise["std"]) r.fail(noise, "noise", "give either snr_db or std, not both");
        if (!noise["snr_db"] && !noise["std"]) r.fail(noise, "noise", "expected snr_db (dB) or std (V/m)");
        if (noise["snr_db"]) c.noise.snr_db = r.number(noise["snr_db"], "noise.snr_db", -100, 300, true);
        if (noise["std"]) c.noise.std_vm = r.number(noise["std"], "noise.std", 0, 1e30, true);
        if (noise["seed"])
            c.noise.seed = static_cast<std::uint64_t>(r.integer(noise["seed"], "noise.seed", 0, std::numeric_limits<long long>::max()));
        if (c.noise.snr_db <= 0 && !noise["std"]) r.fail(noise["snr_db"], "noise.snr_db", "expected a positive SNR in dB");
    }
    if (const YAML::Node output = root["output"]) {
        r.map(output, "output", {"dir", "segy"});
        if (output["dir"]) c.output_dir = r.text(output["dir"], "output.dir");
        if (output["segy"]) c.output_segy = r.boolean(output["segy"], "output.segy");
    }
}

std::pair<double, double> read_bounds(const YAML::Node& n, const Reader& r, const std::string& path, double lo, double hi,
                                      bool lo_open) {
    if (!n.IsSequence() || n.size() != 2) r.fail(n, path, "expected bounds [lower, upper]");
    const double a = r.number(n[0], path + "[0]", lo, hi, lo_open), b = r.number(n[1], path + "[1]", lo, hi, lo_open);
    if (b <= a) r.fail(n, path, fmt::format("expected lower < upper, got [{}, {}]", a, b));
    return {a, b};
}

RegularizationSpec read_regularization(const YAML::Node& n, const Reader& r, const std::string& path) {
    r.map(n, path, {"tikhonov", "tv", "tv_beta"});
    RegularizationSpec s;
    if (n["tikhonov"]) s.tikhonov = r.number(n["tikhonov"], path + ".tikhonov", 0, 1e30);
    if (n["tv"]) s.tv = r.number(n["tv"], path + ".tv", 0, 1e30);
    if (n["tv_beta"]) s.tv_beta = r.number(n["tv_beta"], path + ".tv_beta", 0, 1e30, true);
    return s;
}

/// The longest smoothing a run file may give: the model's width or depth
/// (a longer one only averages the update over the model, and is more
/// likely a length in the wrong unit), or the longest automatic length
/// (`automatic_sigma_m`) where that is longer (a model shorter than half a
/// wavelength), so that the automatic stages written out read back however
/// small the model is against its wavelength (smooth_gaussian stores only
/// the kernel's part over each line, so a long length costs no memory).
double longest_smoothing_m(const Grid& g, double automatic_sigma_m) {
    return std::max({g.width_m(), g.depth_m(), automatic_sigma_m});
}

/// `smoothing: L` (both parameters), or `{eps_r: L, sigma: L}`; a length
/// in m up to `longest` (longest_smoothing_m), or `auto` (left < 0, for the
/// caller's default).
void read_smoothing(const YAML::Node& n, const Reader& r, const std::string& path, double longest, double& eps_r_m,
                    double& sigma_m) {
    auto length = [&](const YAML::Node& v, const std::string& key) {
        return is_auto(v) ? -1.0 : r.number(v, key, 0, longest);
    };
    if (n.IsMap()) {
        r.map(n, path, {"eps_r", "sigma"});
        if (n["eps_r"]) eps_r_m = length(n["eps_r"], path + ".eps_r");
        if (n["sigma"]) sigma_m = length(n["sigma"], path + ".sigma");
    } else {
        eps_r_m = sigma_m = length(n, path);
    }
}

/// `scan: none | auto | [eps_r, sigma]` (background_scan.hpp): which
/// parameters, on the data below half the dominant frequency, eps_r's grid
/// step from the record's length (ScanSpec::eps_r_step).
void read_scan(const YAML::Node& n, const Reader& r, const std::string& path, const RunConfig& c, double f_dominant,
               InversionSpec& s) {
    const bool automatic = !n || is_auto(n);
    if (automatic) {
        s.scan.eps_r = kAutoScanEpsR;
        s.scan.sigma = kAutoScanSigma;
    } else if (!(n.IsScalar() && n.Scalar() == "none")) {
        if (!n.IsSequence() || n.size() == 0) r.fail(n, path, "expected none, auto or a list of parameters, from eps_r and sigma");
        for (std::size_t k = 0; k < n.size(); ++k) {
            const std::string key = fmt::format("{}[{}]", path, k);
            const std::string name = r.text(n[k], key, {"eps_r", "sigma"});
            bool& flag = name == "eps_r" ? s.scan.eps_r : s.scan.sigma;
            if (flag) r.fail(n[k], key, "'" + name + "' is listed twice");
            flag = true;
        }
    }
    s.scan.max_frequency_hz = kScanBandOfDominant * f_dominant;
    const double record_s = c.nt * c.dt_s;
    s.scan.eps_r_step = std::min(std::log(1.25), 1.0 / (s.scan.max_frequency_hz * record_s));
    if (automatic)
        s.defaults.push_back(fmt::format("scan auto: {}", !s.scan.eps_r && !s.scan.sigma ? "none"
                                                          : s.scan.sigma ? (s.scan.eps_r ? "eps_r, then sigma" : "sigma")
                                                                         : "eps_r"));
}

/// Stage `i` of a campaign's list (`n`), named uniquely among `earlier`;
/// its smoothing at most `longest_smoothing` m.
StageSpec read_stage(const YAML::Node& n, const Reader& r, const std::string& p, std::size_t i, const RunConfig& c,
                     const std::vector<StageSpec>& earlier, double longest_smoothing) {
    const std::string sp = fmt::format("{}.stages[{}]", p, i);
    r.map(n, sp, {"name", "max_frequency", "parameters", "iterations", "min_relative_decrease", "decrease_window",
                  "min_iterations", "min_relative_change", "gradient_tolerance", "max_seconds", "max_evaluations", "estimate_wavelet", "smoothing", "method",
                  "flood"});
    StageSpec st;
    st.name = n["name"] ? r.text(n["name"], sp + ".name") : fmt::format("stage{}", i + 1);
    if (st.name.empty() || st.name.find_first_of(",\n\"/ ") != std::string::npos)
        r.fail(n["name"], sp + ".name", "expected a name without spaces, commas, quotes or slashes");
    for (std::size_t k = 0; k < earlier.size(); ++k)
        if (earlier[k].name == st.name) r.fail(n["name"], sp + ".name", fmt::format("'{}' names stage {} too", st.name, k + 1));
    if (n["max_frequency"]) {
        st.max_frequency_hz = r.number(n["max_frequency"], sp + ".max_frequency", 0, 1e13, true);
        if (st.max_frequency_hz >= 0.5 / c.dt_s)
            r.fail(n["max_frequency"], sp + ".max_frequency", fmt::format("{} Hz is not below the Nyquist frequency {} Hz of time.dt", st.max_frequency_hz, 0.5 / c.dt_s));
    }
    const YAML::Node params = r.required(n, sp, "parameters");
    if (!params.IsSequence() || params.size() == 0) r.fail(params, sp + ".parameters", "expected a list of parameters, from eps_r and sigma");
    st.invert_eps_r = st.invert_sigma = false;
    for (std::size_t k = 0; k < params.size(); ++k) {
        const std::string name = r.text(params[k], fmt::format("{}.parameters[{}]", sp, k), {"eps_r", "sigma"});
        bool& flag = name == "eps_r" ? st.invert_eps_r : st.invert_sigma;
        if (flag) r.fail(params[k], fmt::format("{}.parameters[{}]", sp, k), "'" + name + "' is listed twice");
        flag = true;
    }
    st.iterations = static_cast<int>(r.integer(r.required(n, sp, "iterations"), sp + ".iterations", 1, 100000));
    if (n["min_relative_decrease"]) st.min_relative_decrease = r.number(n["min_relative_decrease"], sp + ".min_relative_decrease", 0, 1);
    if (n["decrease_window"]) st.decrease_window = static_cast<int>(r.integer(n["decrease_window"], sp + ".decrease_window", 1, 1000));
    if (n["min_iterations"]) {
        if (!(st.min_relative_decrease > 0))
            r.fail(n["min_iterations"], sp + ".min_iterations", "applies to the rule on the misfit: give min_relative_decrease too");
        st.min_iterations = static_cast<int>(r.integer(n["min_iterations"], sp + ".min_iterations", 0, st.iterations));
    }
    if (n["min_relative_change"]) {
        if (!(st.min_relative_decrease > 0))
            r.fail(n["min_relative_change"], sp + ".min_relative_change",
                   "applies to the rule on the misfit: give min_relative_decrease too");
        st.min_relative_change = r.number(n["min_relative_change"], sp + ".min_relative_change", 0, 1);
    }
    if (n["gradient_tolerance"]) st.gradient_tolerance = r.number(n["gradient_tolerance"], sp + ".gradient_tolerance", 0, 1);
    if (n["max_seconds"]) st.max_seconds = r.number(n["max_seconds"], sp + ".max_seconds", 0, 1e9, true);
    if (n["max_evaluations"]) st.max_evaluations = static_cast<int>(r.integer(n["max_evaluations"], sp + ".max_evaluations", 1, 1000000));
    if (n["estimate_wavelet"]) st.estimate_wavelet = r.boolean(n["estimate_wavelet"], sp + ".estimate_wavelet");
    if (n["smoothing"]) read_smoothing(n["smoothing"], r, sp + ".smoothing", longest_smoothing, st.smoothing_m, st.smoothing_sigma_m);
    if (n["method"])
        st.method = parse_inversion_method(r.text(n["method"], sp + ".method", kInversionMethodNames.names()));
    if (n["flood"]) {
        st.flood = r.boolean(n["flood"], sp + ".flood");
        if (st.flood && i == 0) r.fail(n["flood"], sp + ".flood", "the first stage has no stage before it to flood");
    }
    return st;
}

/// Every source and receiver of the survey, shot after shot.
std::vector<Position> every_antenna(const RunConfig& c) {
    std::vector<Position> all;
    for (const ShotSpec& shot : c.shots) {
        all.insert(all.end(), shot.sources.begin(), shot.sources.end());
        all.insert(all.end(), shot.receivers.begin(), shot.receivers.end());
    }
    return all;
}

/// The widest span of source-receiver offsets within one shot (m): 0 where
/// each shot records one trace.
double widest_offset_span(const RunConfig& c) {
    double widest = 0;
    for (const ShotSpec& shot : c.shots)
        for (const Position& s : shot.sources) {
            double least = HUGE_VAL, most = 0;
            for (const Position& r : shot.receivers) {
                const double offset = std::hypot(r.x - s.x, r.z - s.z);
                least = std::min(least, offset), most = std::max(most, offset);
            }
            if (!shot.receivers.empty()) widest = std::max(widest, most - least);
        }
    return widest;
}

/// Flooding (`flood`: auto, true or false) with automatic stages: the low
/// band again from its model flooded, the full band of eps_r alone, then
/// sigma alone in a lower band, where asked or, auto, where every antenna
/// lies above the inverted region (a survey from above; `weight` the
/// updates' weights). Returns whether it floods.
bool read_flood(const YAML::Node& flood, bool auto_stages, const std::vector<double>& weight, bool from_above,
                const Reader& r, const std::string& p, const RunConfig& c, InversionSpec& s) {
    if (flood && !auto_stages)
        r.fail(flood, p + ".flood", "applies to stages: auto; a listed stage floods with its own `flood: true`");
    if (!auto_stages) return false;
    const bool on = flood && !is_auto(flood) ? r.boolean(flood, p + ".flood") : from_above;
    if (!flood || is_auto(flood))
        s.defaults.push_back(from_above ? "flood auto: on (every antenna above the inverted region): the low band again "
                                          "from its model with a step below each column's deepest change or jump in "
                                          "change, of the band and height the data choose, kept where it fits better"
                                        : "flood auto: off (antennas within the inverted region)");
    if (!on) return false;
    // the stages added on the low band's data: its rule and smoothing, its wavelet estimate kept
    auto on_low_band = [&](const char* name, int iterations) {
        StageSpec st = s.stages.front();
        st.name = name;
        st.iterations = iterations;
        st.estimate_wavelet = false;
        return st;
    };
    StageSpec flooded = on_low_band("flood", kAutoFloodIterations);
    flooded.flood = true;
    StageSpec last = on_low_band("sigma", kAutoFloodedSigmaIterations);
    last.max_frequency_hz *= kAutoFloodedSigmaBandOfLowBand;
    last.invert_eps_r = false;
    StageSpec& full = s.stages.back();
    const double span = widest_offset_span(c), depth = free_depth_m(weight, c.grid);
    const bool wide = span >= depth;
    full.iterations = wide ? kAutoFloodedWideOffsetFullBandIterations : kAutoFloodedFullBandIterations;
    full.min_relative_decrease = 0;  // (its whole length, as measured: "Flooding's full band")
    full.min_iterations = 0;
    full.min_relative_change = 0;
    full.invert_sigma = false;
    const bool auto_smoothing = full.smoothing_m > 0;  // (set by read_inversion_smoothing where the lengths are automatic)
    if (auto_smoothing) full.smoothing_m *= kAutoFloodedFullBandSmoothingShare;
    s.defaults.push_back(fmt::format(
        "flood: the flood stage up to {} iterations, the full band {} of eps_r alone (a shot's offsets spanning {:.3g} m "
        "at most, {} the inverted ground's depth, {:.3g} m){}, then up to {} of sigma alone on data below {:.4g} Hz ({} "
        "of the low band's)",
        flooded.iterations, full.iterations, span, wide ? "at least" : "less than", depth,
        auto_smoothing ? fmt::format(" smoothed over {:.3g} m ({} of the full band's automatic length)", full.smoothing_m,
                                     kAutoFloodedFullBandSmoothingShare)
                       : "",
        last.iterations, last.max_frequency_hz, kAutoFloodedSigmaBandOfLowBand));
    s.stages.insert(s.stages.begin() + 1, flooded);
    s.stages.push_back(last);
    return true;
}

/// `sigma_first` (auto, true or false) with automatic stages: sigma alone on
/// the low band's data before the low band (its band, rule, count and
/// smoothing), eps_r held where the start (a traveltime tomography's, as a
/// rule) put it; auto: where the antennas lie within the inverted region
/// (crosshole, surface to borehole) and the campaign does not flood. The
/// start's sigma is a guess, and where eps_r is free while the amplitudes are
/// far off, eps_r takes a share of them and drifts from the traveltimes'
/// model (docs/inversion.md, "Defaults").
void read_sigma_first(const YAML::Node& node, bool auto_stages, bool from_above, bool flooded, const Reader& r,
                      const std::string& p, InversionSpec& s) {
    if (node && !auto_stages)
        r.fail(node, p + ".sigma_first", "applies to stages: auto; list a stage of sigma alone instead");
    if (!auto_stages) return;
    const bool given = node && !is_auto(node);
    const bool on = given ? r.boolean(node, p + ".sigma_first") : !from_above && !flooded;
    if (!on) {
        if (!given) s.defaults.push_back("sigma_first auto: off (every antenna above the inverted region, or flooded)");
        return;
    }
    StageSpec first = s.stages.front();
    first.name = "low_sigma";
    first.invert_eps_r = false;
    first.invert_sigma = true;
    s.stages.insert(s.stages.begin(), first);
    s.defaults.push_back(fmt::format("sigma_first{}: a stage of sigma alone on the low band's data first (up to {} "
                                     "iterations under its rule), eps_r held at the start",
                                     given ? "" : " auto: on (antennas within the inverted region)", first.iterations));
}

/// The regularisation of eps_r and sigma (`reg`): as given, or total
/// variation at the automatic weight (sigma's at the share its survey's
/// sensitivity gives it, worked out at the first calibration).
void read_inversion_regularization(const YAML::Node& reg, const Reader& r, const std::string& p,
                                   const AutomaticSettings& automatic, InversionSpec& s) {
    bool eps_r_regularized = false, sigma_regularized = false;
    if (reg) {
        r.map(reg, p + ".regularization", {"eps_r", "sigma"});
        if (reg["eps_r"] && !is_auto(reg["eps_r"])) {
            s.regularize_eps_r = read_regularization(reg["eps_r"], r, p + ".regularization.eps_r");
            eps_r_regularized = true;
        }
        if (reg["sigma"] && !is_auto(reg["sigma"])) {
            s.regularize_sigma = read_regularization(reg["sigma"], r, p + ".regularization.sigma");
            sigma_regularized = true;
        }
    }
    if (!eps_r_regularized) {
        s.regularize_eps_r.tv = automatic.total_variation;
        s.defaults.push_back(fmt::format("regularization.eps_r auto: total variation of eps_r / eps_ref, weight {:.3g} "
                                         "({} dominant wavelengths over the model's {:.3g} m^2)",
                                         s.regularize_eps_r.tv, kAutoTotalVariation, automatic.area_m2));
    }
    if (!sigma_regularized) {
        s.regularize_sigma.tv = automatic.total_variation;
        s.sigma_tv_follows_sensitivity = true;
        s.defaults.push_back(fmt::format("regularization.sigma auto: total variation of ln sigma, weight {:.3g} ({} "
                                         "dominant wavelengths over the model's {:.3g} m^2) times a share that falls "
                                         "with the survey's sensitivity to sigma (from the first calibration)",
                                         s.regularize_sigma.tv, kAutoTotalVariation, automatic.area_m2));
    }
}

/// Which stages estimate the wavelet (inversion.estimate_wavelet for every
/// stage whose own entry in `stages` does not say) and which project it out
/// of the misfit at every evaluation (`wavelet_projection`: auto where it is
/// estimated or an estimate is kept, for the quadratic misfits).
void read_wavelet_choices(const YAML::Node& inv, const YAML::Node& stages, const Reader& r, const std::string& p,
                          InversionSpec& s) {
    // every stage that does not say otherwise estimates the wavelet at its start
    if (inv["estimate_wavelet"] && r.boolean(inv["estimate_wavelet"], p + ".estimate_wavelet"))
        for (std::size_t i = 0; i < s.stages.size(); ++i)
            if (!(stages && stages.IsSequence() && stages[i]["estimate_wavelet"])) s.stages[i].estimate_wavelet = true;
    // the wavelet projected out of the misfit at every evaluation: where it is estimated (auto), always, or never
    const bool quadratic = s.misfit == MisfitKind::l2 || s.misfit == MisfitKind::relative;
    const YAML::Node projection = inv["wavelet_projection"];
    const bool chosen = projection && !is_auto(projection);
    const bool project = chosen && r.boolean(projection, p + ".wavelet_projection");
    if (project && !quadratic)
        r.fail(projection, p + ".wavelet_projection",
               fmt::format("the {} misfit is not quadratic in the data: projecting the wavelet out needs misfit l2 "
                           "or relative", to_string(s.misfit)));
    bool estimated = false;  // by this stage or an earlier one, whose estimate later stages keep
    for (StageSpec& st : s.stages) {
        estimated = estimated || st.estimate_wavelet;
        st.project_wavelet = chosen ? project : estimated && quadratic;
    }
    if (!chosen && estimated)
        s.defaults.push_back(quadratic ? "wavelet_projection auto: the wavelet projected out of the misfit at every "
                                         "evaluation of the stages that estimate it or keep an estimate"
                                       : fmt::format("wavelet_projection auto: off (the {} misfit is not quadratic in "
                                                     "the data)", to_string(s.misfit)));
}

/// The updates' smoothing (`smoothing`, at most `longest` m): as given, or
/// the automatic lengths (with automatic stages, a share of them in the full
/// band's stage).
void read_inversion_smoothing(const YAML::Node& smoothing, bool auto_stages, const Reader& r, const std::string& p,
                              double longest, const AutomaticSettings& automatic, double wavelength, InversionSpec& s) {
    s.smoothing_m = s.smoothing_sigma_m = -1;
    if (smoothing) read_smoothing(smoothing, r, p + ".smoothing", longest, s.smoothing_m, s.smoothing_sigma_m);
    const std::string full_band =
        auto_stages ? fmt::format(", {} of it in the full-band stage", kAutoFullBandSmoothingShare) : std::string();
    if (s.smoothing_m < 0) {
        s.smoothing_m = automatic.smoothing_eps_r_m;
        if (auto_stages) s.stages[1].smoothing_m = kAutoFullBandSmoothingShare * s.smoothing_m;
        s.defaults.push_back(fmt::format("smoothing.eps_r auto: {:.3g} m ({} of the dominant wavelength {:.3g} m{})",
                                         s.smoothing_m, kAutoSmoothingWavelengths, wavelength, full_band));
    }
    if (s.smoothing_sigma_m < 0) {
        s.smoothing_sigma_m = automatic.smoothing_sigma_m;
        if (auto_stages) s.stages[1].smoothing_sigma_m = kAutoFullBandSmoothingShare * s.smoothing_sigma_m;
        s.defaults.push_back(fmt::format("smoothing.sigma auto: {:.3g} m ({} of the dominant wavelength{})",
                                         s.smoothing_sigma_m, kAutoSigmaSmoothingWavelengths, full_band));
    }
}

/// The antenna taper (`taper.radius`, auto: the automatic radius; whether
/// `taper.fill` fills the nodes it holds) and the points it is centred on,
/// every source and receiver of the survey.
void read_taper(const YAML::Node& taper, const Reader& r, const std::string& p, const RunConfig& c,
                const AutomaticSettings& automatic, InversionSpec& s) {
    if (taper) r.map(taper, p + ".taper", {"radius", "fill"});
    const YAML::Node none(YAML::NodeType::Undefined);
    const YAML::Node radius = taper ? taper["radius"] : none, fill = taper ? taper["fill"] : none;
    s.taper_radius_m = automatic.taper_radius_m;
    if (radius && !is_auto(radius)) s.taper_radius_m = r.number(radius, p + ".taper.radius", 0, 1e30);
    if (fill) s.taper_fill = r.boolean(fill, p + ".taper.fill");
    if (!radius || is_auto(radius))
        s.defaults.push_back(fmt::format("taper auto: {:.3g} m around each antenna ({} of the dominant wavelength, "
                                         "at least a cell)",
                                         s.taper_radius_m, kAutoTaperWavelengths));
    if (s.taper_radius_m > 0 && !fill)
        s.defaults.push_back("taper.fill: true (at each stage's end the antennas' own nodes, which the taper holds, take "
                             "the mean of their free neighbours)");
    if (s.taper_radius_m > 0) s.taper_points = every_antenna(c);
}

/// The stages as a YAML flow list that `inversion.stages` reads back to the
/// same stages (each number in the shortest form that reads back to it):
/// what a user edits to change one thing of `stages: auto` and keep the rest.
std::string stages_written_out(const std::vector<StageSpec>& stages) {
    const bool estimates = std::any_of(stages.begin(), stages.end(), [](const StageSpec& st) { return st.estimate_wavelet; });
    std::string out = "[";
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const StageSpec& st = stages[i];
        out += fmt::format("{}{{name: {}", i ? ", " : "", st.name);
        if (st.max_frequency_hz > 0) out += fmt::format(", max_frequency: {}", st.max_frequency_hz);
        out += st.invert_eps_r ? (st.invert_sigma ? ", parameters: [eps_r, sigma]" : ", parameters: [eps_r]")
                               : ", parameters: [sigma]";
        out += fmt::format(", iterations: {}", st.iterations);
        if (st.min_relative_decrease > 0)
            out += fmt::format(", min_relative_decrease: {}, decrease_window: {}", st.min_relative_decrease,
                               st.decrease_window);
        if (st.min_relative_decrease > 0 && st.min_iterations > 0) out += fmt::format(", min_iterations: {}", st.min_iterations);
        if (st.min_relative_decrease > 0 && st.min_relative_change > 0)
            out += fmt::format(", min_relative_change: {}", st.min_relative_change);
        if (st.gradient_tolerance > 0) out += fmt::format(", gradient_tolerance: {}", st.gradient_tolerance);
        if (st.max_seconds > 0) out += fmt::format(", max_seconds: {}", st.max_seconds);
        if (st.max_evaluations > 0) out += fmt::format(", max_evaluations: {}", st.max_evaluations);
        // (written for every stage where one estimates: a stage's own key outranks the campaign's)
        if (estimates) out += fmt::format(", estimate_wavelet: {}", st.estimate_wavelet);
        if (st.smoothing_m >= 0 || st.smoothing_sigma_m >= 0) {
            out += ", smoothing: {";
            if (st.smoothing_m >= 0) out += fmt::format("eps_r: {}", st.smoothing_m);
            if (st.smoothing_sigma_m >= 0)
                out += fmt::format("{}sigma: {}", st.smoothing_m >= 0 ? ", " : "", st.smoothing_sigma_m);
            out += "}";
        }
        if (st.method) out += fmt::format(", method: {}", to_string(*st.method));
        if (st.flood) out += ", flood: true";
        out += "}";
    }
    return out + "]";
}

InversionSpec read_inversion(const YAML::Node& root, const Reader& r, const RunConfig& c) {
    const YAML::Node inv = r.required(root, "", "inversion");
    const std::string p = "inversion";
    r.map(inv, p, {"bounds", "stages", "misfit", "regularization", "scaling", "calibration", "petsc_options", "mask", "edges", "fix_edges", "taper", "save", "wavelet_water_level", "illumination", "smoothing",
                   "true_model", "estimate_wavelet", "wavelet_projection", "scan", "method", "newton", "max_propagations",
                   "flood", "sigma_first"});
    InversionSpec s;
    if (const YAML::Node b = inv["bounds"]) {
        r.map(b, p + ".bounds", {"eps_r", "sigma"});
        if (b["eps_r"]) std::tie(s.eps_r_min, s.eps_r_max) = read_bounds(b["eps_r"], r, p + ".bounds.eps_r", 1, 1000, false);
        if (b["sigma"]) std::tie(s.sigma_min, s.sigma_max) = read_bounds(b["sigma"], r, p + ".bounds.sigma", 0, 1e4, true);
    }
    if (inv["misfit"] && !is_auto(inv["misfit"]))
        s.misfit = parse_misfit_kind(r.text(inv["misfit"], p + ".misfit", kMisfitNames.names()));
    else
        s.defaults.push_back(fmt::format("misfit auto: {} (each trace's L2 relative to its observed energy)", to_string(s.misfit)));
    // what `auto` follows: the wavelet's dominant frequency, and the shortest dominant wavelength of the
    // starting model
    const double f_dominant = dominant_frequency(c.wavelet, c.dt_s);
    if (!(f_dominant > 0))  // (a wavelet of zeros: nothing to fit, and no wavelength for the automatic settings)
        r.fail(root["wavelet"], "wavelet", "an inversion needs a wavelet with energy; this one is zero at every sample");
    const double wavelength = dominant_wavelength(c.model, f_dominant);
    const YAML::Node stages = inv["stages"];
    if (!stages || is_auto(stages)) {
        s.stages = automatic_stages(f_dominant);
        s.defaults.push_back(fmt::format("stages auto: up to {} iterations of eps_r and sigma on data below {:.4g} Hz "
                                         "({} of the wavelet's dominant frequency), until the misfit falls by less than "
                                         "{}% over {} iterations (ending at its least misfit), then at least {} on the "
                                         "full band, and on while its misfit falls by at least {}% over {} or its eps_r "
                                         "or sigma moves by at least {}% over them, up to {}",
                                         s.stages[0].iterations, s.stages[0].max_frequency_hz, kAutoLowBandOfDominant,
                                         100 * s.stages[0].min_relative_decrease, s.stages[0].decrease_window,
                                         s.stages[1].min_iterations, 100 * s.stages[1].min_relative_decrease,
                                         s.stages[1].decrease_window, 100 * s.stages[1].min_relative_change,
                                         s.stages[1].iterations));
    } else if (!stages.IsSequence() || stages.size() == 0) {
        r.fail(stages, p + ".stages", "expected a non-empty list of stages, or auto");
    }
    // the automatic lengths and total variation's weight per wavelength over the model's area
    const AutomaticSettings automatic = automatic_settings(wavelength, c.grid);
    const double longest_smoothing = longest_smoothing_m(c.grid, automatic.smoothing_sigma_m);
    for (std::size_t i = 0; stages && stages.IsSequence() && i < stages.size(); ++i)
        s.stages.push_back(read_stage(stages[i], r, p, i, c, s.stages, longest_smoothing));
    read_inversion_regularization(inv["regularization"], r, p, automatic, s);
    if (const YAML::Node sc = inv["scaling"]) {
        r.map(sc, p + ".scaling", {"eps_r", "sigma"});
        if (sc["eps_r"]) s.scale_eps_r = r.number(sc["eps_r"], p + ".scaling.eps_r", 0, 1e6, true);
        if (sc["sigma"]) s.scale_sigma = r.number(sc["sigma"], p + ".scaling.sigma", 0, 1e6, true);
    }
    if (const YAML::Node cal = inv["calibration"]) {
        r.map(cal, p + ".calibration", {"eps_r_step", "sigma_step"});
        if (cal["eps_r_step"]) s.calibration_eps_r_step = r.number(cal["eps_r_step"], p + ".calibration.eps_r_step", 0, 10, true);
        if (cal["sigma_step"]) s.calibration_sigma_step = r.number(cal["sigma_step"], p + ".calibration.sigma_step", 0, 10, true);
    }
    if (inv["petsc_options"]) s.petsc_options = r.text(inv["petsc_options"], p + ".petsc_options");
    if (inv["method"]) s.method = parse_inversion_method(r.text(inv["method"], p + ".method", kInversionMethodNames.names()));
    if (const YAML::Node nt = inv["newton"]) {
        r.map(nt, p + ".newton", {"cg_iterations", "cg_tolerance", "preconditioner"});
        if (nt["cg_iterations"]) s.newton_cg_iterations = static_cast<int>(r.integer(nt["cg_iterations"], p + ".newton.cg_iterations", 1, 1000));
        if (nt["cg_tolerance"]) s.newton_cg_tolerance = r.number(nt["cg_tolerance"], p + ".newton.cg_tolerance", 0, 1, true);
        if (nt["preconditioner"] && !is_auto(nt["preconditioner"]))
            s.newton_preconditioner = kNewtonPreconditionerNames.parse(
                r.text(nt["preconditioner"], p + ".newton.preconditioner", kNewtonPreconditionerNames.names()));
    }
    if (inv["max_propagations"]) s.max_propagations = static_cast<long>(r.integer(inv["max_propagations"], p + ".max_propagations", 1, 1000000000));
    // Newton-type methods need the misfit's Hessian in data space
    bool newton_type = s.method != InversionMethod::lbfgs;
    for (const StageSpec& st : s.stages) newton_type = newton_type || st.method.value_or(s.method) != InversionMethod::lbfgs;
    if (newton_type && s.misfit != MisfitKind::l2 && s.misfit != MisfitKind::relative)
        r.fail(inv["misfit"] ? inv["misfit"] : inv, p + ".misfit",
               fmt::format("the {} misfit has no Hessian yet: methods gauss_newton and newton need misfit l2 or relative",
                           to_string(s.misfit)));
    if (const YAML::Node mask = inv["mask"]) {
        if (!mask.IsSequence()) r.fail(mask, p + ".mask", "expected a list of shapes [{type: circle | rectangle | polygon, ...}]");
        for (std::size_t i = 0; i < mask.size(); ++i) s.mask.push_back(read_shape(mask[i], r, fmt::format("{}.mask[{}]", p, i), false));
    }
    read_wavelet_choices(inv, stages, r, p, s);
    if (inv["wavelet_water_level"])
        s.wavelet_water_level = r.number(inv["wavelet_water_level"], p + ".wavelet_water_level", 0, 1, true);
    read_inversion_smoothing(inv["smoothing"], !stages || is_auto(stages), r, p, longest_smoothing, automatic, wavelength, s);
    read_scan(inv["scan"], r, p + ".scan", c, f_dominant, s);
    if (inv["illumination"])
        s.illumination_stabilization = r.number(inv["illumination"], p + ".illumination", 0, 1, true);
    if (inv["edges"] && inv["fix_edges"])
        r.fail(inv["fix_edges"], p + ".fix_edges", "expected edges or fix_edges (its older spelling), not both");
    if (inv["edges"]) s.edges = parse_edge_rule(r.text(inv["edges"], p + ".edges", kEdgeRuleNames.names()));
    // (fix_edges: true held them, false freed them)
    if (inv["fix_edges"]) s.edges = r.boolean(inv["fix_edges"], p + ".fix_edges") ? EdgeRule::fixed : EdgeRule::free;
    read_taper(inv["taper"], r, p, c, automatic, s);
    const bool auto_stages = !stages || is_auto(stages);
    const std::vector<double> weight = auto_stages ? update_weights(s, c.grid) : std::vector<double>{};
    const bool from_above = auto_stages && survey_above_free_nodes(every_antenna(c), weight, c.grid);
    const bool flooded = read_flood(inv["flood"], auto_stages, weight, from_above, r, p, c, s);
    read_sigma_first(inv["sigma_first"], auto_stages, from_above, flooded, r, p, s);
    if (auto_stages)
        s.defaults.push_back("stages auto, written out (inversion.stages reads this list back to the same stages): " +
                             stages_written_out(s.stages));
    if (const YAML::Node save = inv["save"]) {
        r.map(save, p + ".save", {"models", "gradients"});
        if (save["models"]) s.save_models = r.boolean(save["models"], p + ".save.models");
        if (save["gradients"]) s.save_gradients = r.boolean(save["gradients"], p + ".save.gradients");
    }
    if (inv["true_model"]) {
        s.true_model = r.resolve(r.text(inv["true_model"], p + ".true_model"));
        try {
            read_model_array_h5(s.true_model, "eps_r", c.grid);
            read_model_array_h5(s.true_model, "sigma", c.grid);
        } catch (const Error& e) {
            r.fail(inv["true_model"], p + ".true_model", e.what());
        }
    }
    if (c.observed.file.empty()) r.fail(root, "data.observed", "an inversion needs observed data (data.observed)");
    return s;
}

}  // namespace

RunConfig read_run_sections(const YAML::Node& root, const Reader& r, const std::vector<std::string>& extra_top_keys) {
    RunConfig c;
    c.file = r.file();
    std::vector<std::string> top{"grid", "model", "wavelet", "time", "survey", "propagator", "noise", "data", "output"};
    top.insert(top.end(), extra_top_keys.begin(), extra_top_keys.end());
    r.map(root, "", top);
    read_grid(root, r, c);
    read_model(root, r, c);
    read_time_and_wavelet(root, r, c);
    read_data(root, r, c);
    read_survey(root, r, c);
    read_propagator(root, r, c);
    read_rest(root, r, c);
    c.has_inversion = static_cast<bool>(root["inversion"]);
    return c;
}

}  // namespace detail

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
    const detail::LoadedYaml y = detail::load_yaml(path, overrides);
    const detail::Reader r(path, y.overridden);
    return detail::read_run_sections(y.root, r, {"inversion"});
}

Campaign load_campaign(const std::string& path, const std::vector<std::string>& overrides) {
    const detail::LoadedYaml y = detail::load_yaml(path, overrides);
    const detail::Reader r(path, y.overridden);
    Campaign c;
    c.run = detail::read_run_sections(y.root, r, {"inversion"});
    c.inversion = detail::read_inversion(y.root, r, c.run);
    return c;
}

namespace {

/// Numbers as the shortest text that reads back to them: yaml-cpp writes
/// doubles at 17 significant digits (0.1 as 0.10000000000000001).
std::string shortest(double v) {
    if (std::isnan(v)) return ".nan";
    if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
    return fmt::format("{}", v);
}

std::vector<std::string> shortest(std::initializer_list<double> values) {
    std::vector<std::string> out;
    for (const double v : values) out.push_back(shortest(v));
    return out;
}

}  // namespace

std::string Campaign::record(const std::vector<std::string>& overrides) const {
    const InversionSpec& s = inversion;
    const auto regularization = [](YAML::Emitter& e, const RegularizationSpec& r) {
        e << YAML::Flow << YAML::BeginMap << YAML::Key << "tikhonov" << YAML::Value << shortest(r.tikhonov) << YAML::Key << "tv"
          << YAML::Value << shortest(r.tv) << YAML::Key << "tv_beta" << YAML::Value << shortest(r.tv_beta) << YAML::EndMap;
    };
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << "inversion" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "bounds" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "eps_r" << YAML::Value
      << YAML::Flow << shortest({s.eps_r_min, s.eps_r_max}) << YAML::Key << "sigma" << YAML::Value
      << YAML::Flow << shortest({s.sigma_min, s.sigma_max}) << YAML::EndMap;
    e << YAML::Key << "misfit" << YAML::Value << to_string(s.misfit);
    e << YAML::Key << "stages" << YAML::Value << YAML::Load(detail::stages_written_out(s.stages));
    e << YAML::Key << "smoothing" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "eps_r" << YAML::Value
      << shortest(s.smoothing_m) << YAML::Key << "sigma" << YAML::Value << shortest(s.smoothing_sigma_m) << YAML::EndMap;
    e << YAML::Key << "regularization" << YAML::Value << YAML::BeginMap << YAML::Key << "eps_r" << YAML::Value;
    regularization(e, s.regularize_eps_r);
    e << YAML::Key << "sigma" << YAML::Value;
    regularization(e, s.regularize_sigma);
    e << YAML::Key << "sigma_share_follows_sensitivity" << YAML::Value << s.sigma_tv_follows_sensitivity << YAML::EndMap;
    e << YAML::Key << "taper" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "radius" << YAML::Value
      << shortest(s.taper_radius_m) << YAML::EndMap;
    e << YAML::Key << "auto" << YAML::Value << YAML::BeginSeq;
    for (const std::string& d : s.defaults) e << d;
    e << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
    return run.record(overrides) + e.c_str() + "\n";
}

std::vector<double> read_wavelet_file(const std::string& path, const std::string& dataset, double dt, int nt) {
    std::vector<double> w;
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".h5" || ext == ".hdf5") {
        w = read_vector_h5(path, dataset, dt);
    } else {
        std::ifstream in(path);
        if (!in) throw InputFileError(fmt::format("{}: cannot open the wavelet file", path));
        std::string line;
        for (int line_no = 1; std::getline(in, line); ++line_no) {
            const auto hash = line.find('#');
            if (hash != std::string::npos) line.resize(hash);
            std::istringstream fields(line);
            std::string word;
            if (!(fields >> word)) continue;
            const std::optional<double> v = parse_finite_double(word);
            std::string more;
            if (!v || (fields >> more))
                throw InputFileError(fmt::format("{}:{}: expected one number per line (finite), got '{}'", path, line_no, line));
            w.push_back(*v);
        }
    }
    if (w.empty()) throw InputFileError(fmt::format("{}: the wavelet has no samples", path));
    if (w.size() > static_cast<std::size_t>(nt))
        throw InputFileError(fmt::format("{}: the wavelet has {} samples, more than time.nt = {}", path, w.size(), nt));
    w.resize(static_cast<std::size_t>(nt), 0.0);
    return w;
}

double add_noise(Traces& traces, const NoiseSpec& noise) {
    if (!noise.enabled()) return 0;
    double std_vm = noise.std_vm;
    if (noise.snr_db > 0) {
        double sum2 = 0;
        std::size_t n = 0;
        for (const auto& t : traces) {
            for (double v : t.samples()) sum2 += v * v;
            n += t.samples().size();
        }
        std_vm = n ? std::sqrt(sum2 / static_cast<double>(n)) / std::pow(10.0, noise.snr_db / 20) : 0;
    }
    for (std::size_t s = 0; s < traces.size(); ++s) {
        std::seed_seq seq{static_cast<std::uint32_t>(noise.seed), static_cast<std::uint32_t>(noise.seed >> 32),
                          static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(static_cast<std::uint64_t>(s) >> 32)};
        std::mt19937_64 gen(seq);
        std::normal_distribution<double> normal(0.0, 1.0);
        for (double& v : traces[s].samples()) v += std_vm * normal(gen);
    }
    return std_vm;
}

std::string RunConfig::record(const std::vector<std::string>& overrides) const {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    for (const auto& o : overrides) text << "\n# --set " << o;
    text << "\n---\n# resolved: every value this run used, defaults included\n" << resolved();
    return text.str();
}

std::string RunConfig::resolved() const {
    const auto range = [](const Array2D& a) {
        const auto [lo, hi] = std::minmax_element(a.values().begin(), a.values().end());
        return shortest({*lo, *hi});
    };
    const PropagatorOptions& o = propagator;
    YAML::Emitter e;
    e << YAML::BeginMap;
    e << YAML::Key << "grid" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "nx" << YAML::Value << grid.nx
      << YAML::Key << "nz" << YAML::Value << grid.nz << YAML::Key << "dx" << YAML::Value << shortest(grid.dx) << YAML::Key << "dz"
      << YAML::Value << shortest(grid.dz) << YAML::EndMap;
    e << YAML::Key << "model" << YAML::Value << YAML::BeginMap << YAML::Key << "built" << YAML::Value << model_summary
      << YAML::Key << "eps_r_range" << YAML::Value << YAML::Flow << range(model.eps_r) << YAML::Key << "sigma_range"
      << YAML::Value << YAML::Flow << range(model.sigma) << YAML::Key << "mu_r_range" << YAML::Value << YAML::Flow
      << range(model.mu_r) << YAML::EndMap;
    e << YAML::Key << "wavelet" << YAML::Value << wavelet_summary;
    e << YAML::Key << "time" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "dt" << YAML::Value << dt_s
      << YAML::Key << "nt" << YAML::Value << nt << YAML::EndMap;
    std::size_t receivers = 0;
    for (const ShotSpec& s : shots) receivers += s.receivers.size();
    e << YAML::Key << "survey" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "shots" << YAML::Value
      << shots.size() << YAML::Key << "receivers" << YAML::Value << receivers << YAML::EndMap;
    e << YAML::Key << "propagator" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "backend" << YAML::Value << to_string(o.backend) << YAML::Key << "precision" << YAML::Value
      << to_string(o.precision) << YAML::Key << "stencil" << YAML::Value << o.stencil_order << YAML::Key << "device"
      << YAML::Value << o.device << YAML::Key << "shots_per_batch" << YAML::Value << shots_per_batch
      << YAML::Key << "shot_groups" << YAML::Value << o.shot_groups;
    e << YAML::Key << "pml" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "left" << YAML::Value
      << o.cpml.widths.left << YAML::Key << "right" << YAML::Value << o.cpml.widths.right << YAML::Key << "top"
      << YAML::Value << o.cpml.widths.top << YAML::Key << "bottom" << YAML::Value << o.cpml.widths.bottom << YAML::Key
      << "reflection" << YAML::Value << shortest(o.cpml.reflection) << YAML::Key << "power" << YAML::Value << shortest(o.cpml.power)
      << YAML::Key << "kappa_max" << YAML::Value << shortest(o.cpml.kappa_max) << YAML::EndMap;
    e << YAML::Key << "snapshots" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "interval"
      << YAML::Value << o.snapshots.interval << YAML::Key << "compression" << YAML::Value
      << to_string(o.snapshots.compression) << YAML::Key << "storage" << YAML::Value << to_string(o.snapshots.storage)
      << YAML::Key << "checkpoint" << YAML::Value << o.snapshots.checkpoint_steps << YAML::Key << "binomial"
      << YAML::Value << o.snapshots.binomial_slots << YAML::EndMap;
    e << YAML::EndMap;
    if (noise.enabled())
        e << YAML::Key << "noise" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "snr_db" << YAML::Value
          << shortest(noise.snr_db) << YAML::Key << "std" << YAML::Value << shortest(noise.std_vm) << YAML::Key << "seed" << YAML::Value
          << noise.seed << YAML::EndMap;
    e << YAML::Key << "data" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "observed" << YAML::Value
      << observed.describe() << YAML::EndMap;
    e << YAML::Key << "output" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "dir" << YAML::Value
      << output_dir << YAML::Key << "segy" << YAML::Value << output_segy << YAML::EndMap;
    e << YAML::EndMap;
    return std::string(e.c_str()) + "\n";
}

Survey RunConfig::survey() const {
    Survey s;
    s.dt = dt_s;
    s.nt = nt;
    for (const ShotSpec& spec : shots) {
        Shot shot;
        for (const Position& p : spec.sources) shot.sources.push_back({p, 1.0});
        shot.receivers = spec.receivers;
        shot.wavelet = wavelet;
        s.shots.push_back(std::move(shot));
    }
    return s;
}

}  // namespace gprfwi
