#pragma once
// What an inversion stage writes (inversion.cpp's StageRun): its history,
// each row logged as it comes, and after each accepted iteration rank 0's
// files (the iteration's model and gradient, the checkpoint a resume starts
// from, history.csv), handed to a writer thread so that the next evaluation
// need not wait for them.

#include <cstddef>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "gprfwi/array2d.hpp"
#include "gprfwi/inversion.hpp"
#include "gprfwi/model.hpp"
#include "inversion/stage_checkpoint.hpp"

namespace gprfwi {

/// sqrt(sum (a - truth)^2 / sum truth^2), 0 where the truth is 0.
double relative_error(const Array2D& a, const Array2D& truth);

/// history.csv's header, with the model errors' columns where there is a truth.
std::string history_header(bool errors);
/// A row of history.csv.
std::string history_line(const HistoryRow& r, bool errors);
/// The rows of a history.csv (a checkpoint's); histories written before
/// the propagations column read with 0 propagations.
std::vector<HistoryRow> parse_history(const std::string& csv);

/// Rank 0's files written on a thread of their own, so that an iteration's
/// model and checkpoint do not hold up the next evaluation: one job at a
/// time, in order (post() waits for the one before). wait() returns when
/// all are written and rethrows a job's failure; the campaign waits before
/// it ends, stops or fails, so its last checkpoint stands as before.
/// HDF5 is not thread-safe: while a stage runs, its files go through the
/// writer alone, and whatever else writes or reads files does so between
/// stages, after the wait.
class BackgroundWriter {
public:
    BackgroundWriter() = default;
    BackgroundWriter(const BackgroundWriter&) = delete;
    BackgroundWriter& operator=(const BackgroundWriter&) = delete;
    ~BackgroundWriter() {
        try {
            wait();
        } catch (...) {  // (an error already on its way out: the first one is reported)
        }
    }
    void post(std::function<void()> job) {
        wait();
        pending_ = std::async(std::launch::async, std::move(job));
    }
    void wait() {
        if (pending_.valid()) pending_.get();
    }

private:
    std::future<void> pending_;
};

/// An accepted iteration, as its files hold it.
struct IterationFiles {
    const Model& model;
    /// The gradient at the model (save.gradients), where the stage holds it; else null.
    const Array2D* grad_eps_r = nullptr;
    const Array2D* grad_sigma = nullptr;
    double misfit = 0;      // J at the model (the gradient file's)
    CheckpointState state;  // the checkpoint's numbers (its history is the output's)
    /// The stage's least-misfit iterate so far, for the checkpoint, where it
    /// is not `model` (kLeastEpsR); else null.
    const Model* least = nullptr;
};

class StageOutput {
public:
    /// The references must outlive this; the time spent handing files to the
    /// writer (or waiting for it) is added to `writing_seconds`.
    StageOutput(const InversionSpec& spec, const StageSpec& stage, int stage_index, std::vector<HistoryRow>& history,
                std::string out_dir, std::string config, const std::optional<Model>& truth, BackgroundWriter& writer,
                double& writing_seconds);

    /// The model the stage starts (or resumes) from: the first row's
    /// change is measured from it.
    void start_at(const Model& model);

    /// Appends r to the history and logs it, with the model's errors against
    /// the truth where there is one and its change from the iterate recorded
    /// before (HistoryRow::change_eps_r).
    void record(HistoryRow r, const Model& model);

    /// Whether the files of this iteration hold its gradient (save.gradients).
    bool wants_gradient(int iteration, bool stage_done) const;

    /// The iteration's files and the checkpoint: rank 0 hands copies to the
    /// writer (collectively agreed, so that a failure of the write before
    /// stops every rank).
    void write(const IterationFiles& f);

    /// The checkpoint a resume starts from (checkpoint_path).
    std::string checkpoint_file() const { return checkpoint_path(out_); }

    /// Where the stage keeps its illumination preconditioner, which a
    /// resumed stage reads back (it must have `nodes` weights).
    std::string preconditioner_file() const;
    void write_preconditioner(const std::vector<double>& weights) const;
    std::vector<double> read_preconditioner(std::size_t nodes) const;

private:
    const InversionSpec& spec_;
    const StageSpec& stage_;
    int stage_index_;
    std::vector<HistoryRow>& history_;
    std::string out_, config_;
    const std::optional<Model>& truth_;
    BackgroundWriter& writer_;
    double& writing_seconds_;
    Array2D previous_eps_r_, previous_sigma_;  // the iterate recorded last (start_at)
};

}  // namespace gprfwi
