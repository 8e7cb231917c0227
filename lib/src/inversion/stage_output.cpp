#include "inversion/stage_output.hpp"

#include <cmath>
#include <filesystem>
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

std::string history_header(bool errors) {
    return std::string("stage,iteration,misfit,misfit_relative,gradient_norm,step,evaluations,propagations,seconds") +
           (errors ? ",error_eps_r,error_sigma" : "") + "\n";
}

std::string history_line(const HistoryRow& r, bool errors) {
    std::string s = fmt::format("{},{},{:.17g},{:.17g},{:.17g},{:.17g},{},{},{:.3f}", r.stage, r.iteration, r.misfit,
                                r.misfit_relative, r.gradient_norm, r.step, r.evaluations, r.propagations, r.seconds);
    if (errors) s += fmt::format(",{:.17g},{:.17g}", r.error_eps_r, r.error_sigma);
    return s + "\n";
}

std::vector<HistoryRow> parse_history(const std::string& csv) {
    std::vector<HistoryRow> rows;
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);  // header; histories written before the propagations column lack it
    const std::size_t shift = line.find(",propagations,") != std::string::npos ? 1 : 0;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::vector<std::string> f;
        std::stringstream ls(line);
        for (std::string cell; std::getline(ls, cell, ',');) f.push_back(cell);
        if (f.size() < 8 + shift) throw Error("checkpoint: malformed history line: " + line);
        auto number = [&](std::size_t k) {  // (a number of the history is finite, subnormals included)
            const std::optional<double> v = parse_finite_double(f[k]);
            if (!v) throw InputFileError("checkpoint: malformed history line (column " + std::to_string(k + 1) + "): " + line);
            return *v;
        };
        HistoryRow r;
        r.stage = f[0];
        r.iteration = static_cast<int>(number(1));
        r.misfit = number(2);
        r.misfit_relative = number(3);
        r.gradient_norm = number(4);
        r.step = number(5);
        r.evaluations = static_cast<int>(number(6));
        if (shift) r.propagations = static_cast<int>(number(7));
        r.seconds = number(7 + shift);
        if (f.size() >= 10 + shift) {
            r.error_eps_r = number(8 + shift);
            r.error_sigma = number(9 + shift);
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

void StageOutput::record(HistoryRow r, const Model& model) {
    if (truth_) {
        r.error_eps_r = relative_error(model.eps_r, truth_->eps_r);
        r.error_sigma = relative_error(model.sigma, truth_->sigma);
    }
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
