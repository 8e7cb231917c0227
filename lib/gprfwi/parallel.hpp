#pragma once
// MPI for gprfwi, without MPI types in the interface: the world's ranks, this
// rank's place among them (and on its node), shot assignment, and the few
// collectives the commands need. Without an MPI session (library tests, a
// plain `gprfwi` run) everything behaves as one rank of one.

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "gprfwi/error.hpp"

namespace gprfwi::parallel {

/// MPI for the lifetime of the object (MPI_Init_thread, MPI_THREAD_FUNNELED;
/// MPI_Finalize). Create one in main.
class Session {
public:
    Session(int* argc, char*** argv);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
};

/// Where this process runs.
struct Place {
    int rank = 0, size = 1;              // in MPI_COMM_WORLD
    int local_rank = 0, local_size = 1;  // among the ranks of this node
    std::string host;
};

/// This process's place (one rank of one without an MPI session).
const Place& place();
inline bool is_root() { return place().rank == 0; }

/// The shots a rank owns when `n_shots` are split over `n_ranks`: a
/// contiguous block, block sizes differing by at most one (the first
/// n_shots % n_ranks ranks take one more); empty for ranks beyond the shots.
std::vector<std::size_t> shots_of_rank(std::size_t n_shots, int n_ranks, int rank);

/// In-place sum over all ranks.
void sum(double* values, std::size_t n);
double sum(double value);
double max(double value);

/// Root's string on every rank.
std::string broadcast(const std::string& text, int root = 0);

/// Every rank's string, on the root (empty elsewhere).
std::vector<std::string> gather(const std::string& text, int root = 0);

/// Root's doubles on every rank (`values` is resized).
void broadcast(std::vector<double>& values, int root = 0);

void barrier();

/// A failure on another rank, reported on the ranks that did not fail.
class RemoteFailure : public Error {
public:
    using Error::Error;
};

/// Collective: every rank calls it after a step that may have failed on some
/// ranks (with the exception it caught, or nullptr). If any failed, every rank
/// throws: the failed ones rethrow their own exception, the others a
/// RemoteFailure naming the first failed rank and its message. So one rank's
/// error (a bad GPU, a full disk) ends the run everywhere instead of leaving
/// the others waiting in a reduction.
void agree(const std::exception_ptr& local);

/// Whether the last agree() that threw saw every rank fail (so that one
/// report, from the root, suffices) or only some.
enum class FailureScope { none, some_ranks, all_ranks };
FailureScope last_failure_scope();

/// Runs `step` on every rank and then agree()s on the outcome.
template <typename Step>
void collectively(Step&& step) {
    std::exception_ptr failure;
    try {
        step();
    } catch (...) {
        failure = std::current_exception();
    }
    agree(failure);
}

}  // namespace gprfwi::parallel
