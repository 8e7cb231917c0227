#include "inversion/stage_output.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gprfwi/error.hpp"
#include "gprfwi/files.hpp"
#include "gprfwi/hdf5_io.hpp"
#include "gprfwi/numbers.hpp"
#include "gprfwi/parallel.hpp"
#include "core/timing.hpp"

namespace gprfwi {

double relative_error(const Array2D& a, const Array2D& truth) {
    double d = 0, n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d += std::pow(a.data()[i] - truth.data()[i], 2);
        n += std::pow(truth.data()[i], 2);
    }
    return n > 0 ? std::sqrt(d / n) : 0.0;
}

namespace {

std::vector<std::string> csv_cells(const std::string& line) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) f.push_back(cell);
    return f;
}

/// A number column of history.csv after its first, the stage: the row's member
/// it holds (a count or a real) and how it is written. The table is the file's
/// layout for writing and reading alike.
struct HistoryColumn {
    const char* name;
    int HistoryRow::*count;
    double HistoryRow::*real;
    const char* format;
    bool required;    // in every history; the others came with later versions, or with a true model
    bool truth_only;  // written only where the run knows the true model
};

constexpr HistoryColumn kHistoryColumns[] = {
    {"iteration", &HistoryRow::iteration, nullptr, "{}", true, false},
    {"misfit", nullptr, &HistoryRow::misfit, "{:.17g}", true, false},
    {"misfit_relative", nullptr, &HistoryRow::misfit_relative, "{:.17g}", true, false},
    {"gradient_norm", nullptr, &HistoryRow::gradient_norm, "{:.17g}", true, false},
    {"step", nullptr, &HistoryRow::step, "{:.17g}", true, false},
    {"evaluations", &HistoryRow::evaluations, nullptr, "{}", true, false},
    {"propagations", &HistoryRow::propagations, nullptr, "{}", false, false},
    {"seconds", nullptr, &HistoryRow::seconds, "{:.3f}", true, false},
    {"error_eps_r", nullptr, &HistoryRow::error_eps_r, "{:.17g}", false, true},
    {"error_sigma", nullptr, &HistoryRow::error_sigma, "{:.17g}", false, true},
    {"change_eps_r", nullptr, &HistoryRow::change_eps_r, "{:.17g}", false, false},
    {"change_sigma", nullptr, &HistoryRow::change_sigma, "{:.17g}", false, false},
};

}  // namespace

std::string history_header(bool errors) {
    std::string s = "stage";
    for (const HistoryColumn& c : kHistoryColumns)
        if (errors || !c.truth_only) s += std::string(",") + c.name;
    return s + "\n";
}

std::string history_line(const HistoryRow& r, bool errors) {
    std::string s = r.stage;
    for (const HistoryColumn& c : kHistoryColumns) {
        if (!errors && c.truth_only) continue;
        s += ',';
        s += c.count ? fmt::format(fmt::runtime(c.format), r.*(c.count)) : fmt::format(fmt::runtime(c.format), r.*(c.real));
    }
    return s + "\n";
}

std::vector<HistoryRow> parse_history(const std::string& csv) {
    std::vector<HistoryRow> rows;
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);
    // Columns by the header's names, found once: histories written by
    // earlier versions lack propagations, or the model's changes, whose rows
    // read 0.
    const std::vector<std::string> names = csv_cells(line);
    const auto column = [&](const std::string& name) -> std::optional<std::size_t> {
        const auto it = std::find(names.begin(), names.end(), name);
        return it == names.end() ? std::nullopt : std::optional<std::size_t>(it - names.begin());
    };
    const std::optional<std::size_t> stage = column("stage");
    if (!stage) throw InputFileError("checkpoint: the history's header has no column stage: " + line);
    std::vector<std::pair<const HistoryColumn*, std::size_t>> present;
    for (const HistoryColumn& c : kHistoryColumns) {
        if (const auto k = column(c.name))
            present.emplace_back(&c, *k);
        else if (c.required)
            throw InputFileError(fmt::format("checkpoint: the history's header has no column {}: {}", c.name, line));
    }
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        const std::vector<std::string> f = csv_cells(line);
        if (f.size() != names.size()) throw InputFileError("checkpoint: malformed history line: " + line);
        HistoryRow r;
        r.stage = f[*stage];
        for (const auto& [c, k] : present) {
            // (a number of the history is finite, subnormals included)
            const std::optional<double> v = parse_finite_double(f[k]);
            if (!v) throw InputFileError("checkpoint: malformed history line (column " + std::to_string(k + 1) + "): " + line);
            if (c->count) r.*(c->count) = static_cast<int>(*v);
            else r.*(c->real) = *v;
        }
        rows.push_back(r);
    }
    return rows;
}

StageOutput::StageOutput(const InversionSpec& spec, const StageSpec& stage, int stage_index,
                         std::vector<HistoryRow>& history, std::string out_dir, std::string config,
                         const std::optional<Model>& truth, BackgroundWriter& writer, double& writing_seconds)
    : spec_(spec), stage_(stage), stage_index_(stage_index), history_(history), out_(std::move(out_dir)),
      config_(std::move(config)), truth_(truth), writer_(writer), writing_seconds_(writing_seconds) {}

void StageOutput::start_at(const Model& model) {
    previous_eps_r_ = model.eps_r;
    previous_sigma_ = model.sigma;
}

void StageOutput::record(HistoryRow r, const Model& model) {
    if (truth_) {
        r.error_eps_r = relative_error(model.eps_r, truth_->eps_r);
        r.error_sigma = relative_error(model.sigma, truth_->sigma);
    }
    if (previous_eps_r_.size() == model.eps_r.size()) {
        r.change_eps_r = relative_error(previous_eps_r_, model.eps_r);
        r.change_sigma = relative_error(previous_sigma_, model.sigma);
    }
    start_at(model);
    history_.push_back(r);
    spdlog::info("stage {} iteration {:>3}: misfit {:.6g} ({:.4g} of the stage's start), |g| {:.3g}, step {:.3g}, "
                 "{} evaluations, {} propagations, {:.1f} s{}",
                 r.stage, r.iteration, r.misfit, r.misfit_relative, r.gradient_norm, r.step, r.evaluations,
                 r.propagations, r.seconds,
                 r.error_eps_r >= 0 ? fmt::format("; model error eps_r {:.4f}, sigma {:.4f}", r.error_eps_r, r.error_sigma) : "");
}

bool StageOutput::wants_gradient(int iteration, bool stage_done) const {
    return spec_.save_gradients && iteration > 0 && !stage_done;
}

void StageOutput::write(const IterationFiles& f) {
    const ScopeTimer timer(writing_seconds_);
    parallel::collectively([&] {
        if (!parallel::is_root()) return;
        writer_.wait();
        const int iteration = f.state.iterations;
        const bool with_gradient = f.grad_eps_r && f.grad_sigma;
        std::string csv = history_header(truth_.has_value());
        for (const HistoryRow& r : history_) csv += history_line(r, truth_.has_value());
        CheckpointState state = f.state;
        state.history_csv = csv;
        ModelFileExtras a = checkpoint_attributes(state);
        if (f.least) {
            a.arrays.emplace(kLeastEpsR, f.least->eps_r);
            a.arrays.emplace(kLeastSigma, f.least->sigma);
        }
        // NN_STAGE_III.h5 in `folder`
        const auto iteration_file = [&](const char* folder) {
            return (std::filesystem::path(out_) / folder /
                    fmt::format("{:02}_{}_{:03}.h5", stage_index_ + 1, stage_.name, iteration))
                .string();
        };
        const std::string model_file =
            spec_.save_models && iteration > 0 && !f.state.stage_done ? iteration_file("models") : std::string();
        const std::string gradient_file = with_gradient ? iteration_file("gradients") : std::string();
        std::optional<std::pair<Array2D, Array2D>> gradient;
        if (with_gradient) gradient.emplace(*f.grad_eps_r, *f.grad_sigma);
        writer_.post([model = f.model, gradient = std::move(gradient), model_file, gradient_file, a = std::move(a),
                      csv = std::move(csv), out = out_, config = config_, j = f.misfit] {
            if (!model_file.empty()) {
                std::filesystem::create_directories(std::filesystem::path(model_file).parent_path());
                write_model_h5(model_file, model, config);
            }
            if (gradient) {
                std::filesystem::create_directories(std::filesystem::path(gradient_file).parent_path());
                write_gradient_h5(gradient_file, model.grid, j, gradient->first, gradient->second, config);
            }
            // the checkpoint first: it is the truth a resume starts from
            write_model_h5(checkpoint_path(out), model, config, a);
            write_text_atomically((std::filesystem::path(out) / "history.csv").string(), csv);
        });
    });
}

std::string StageOutput::preconditioner_file() const {
    return (std::filesystem::path(out_) / fmt::format("preconditioner_{:02}_{}.h5", stage_index_ + 1, stage_.name)).string();
}

void StageOutput::write_preconditioner(const std::vector<double>& weights) const {
    parallel::collectively([&] {
        if (parallel::is_root())
            write_vector_h5(preconditioner_file(), "weights", weights, 1.0,
                            "weights: per model node ([nz][nx] flattened), the factor on each update's variable from "
                            "illumination preconditioning", config_);
    });
}

std::vector<double> StageOutput::read_preconditioner(std::size_t nodes) const {
    std::vector<double> p = read_vector_h5(preconditioner_file(), "weights", 1.0);
    if (p.size() != nodes)
        throw SizeMismatch(fmt::format("{}: {} weights for {} model nodes", preconditioner_file(), p.size(), nodes));
    return p;
}

}  // namespace gprfwi
