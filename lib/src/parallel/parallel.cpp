#include "gprfwi/parallel.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>

#include <fmt/format.h>

namespace gprfwi::parallel {

namespace {

bool mpi_running() {
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    return initialised && !finalised;
}

void check(int code, const char* what) {
    if (code != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(code, text, &len);
        throw Error(fmt::format("MPI: {} failed: {}", what, std::string(text, static_cast<std::size_t>(len))));
    }
}

int count_of(std::size_t n, const char* what) {
    if (n > static_cast<std::size_t>(INT_MAX)) throw Error(fmt::format("MPI: {} of {} elements is too large for one message", what, n));
    return static_cast<int>(n);
}

Place make_place() {
    Place p;
    if (!mpi_running()) return p;
    MPI_Comm_rank(MPI_COMM_WORLD, &p.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p.size);
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, p.rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    MPI_Comm_rank(node, &p.local_rank);
    MPI_Comm_size(node, &p.local_size);
    MPI_Comm_free(&node);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    p.host.assign(name, static_cast<std::size_t>(len));
    return p;
}

}  // namespace

Session::Session(int* argc, char*** argv) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

Session::~Session() {
    if (mpi_running()) MPI_Finalize();
}

const Place& place() {
    static const Place p = make_place();
    return p;
}

std::vector<std::size_t> shots_of_rank(std::size_t n_shots, int n_ranks, int rank) {
    if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
        throw InvalidArgument(fmt::format("shots_of_rank: rank {} of {} ranks", rank, n_ranks));
    const std::size_t p = static_cast<std::size_t>(n_ranks), r = static_cast<std::size_t>(rank);
    const std::size_t base = n_shots / p, extra = n_shots % p;
    const std::size_t first = r * base + std::min(r, extra);
    const std::size_t count = base + (r < extra ? 1 : 0);
    std::vector<std::size_t> out(count);
    for (std::size_t i = 0; i < count; ++i) out[i] = first + i;
    return out;
}

void sum(double* values, std::size_t n) {
    if (!mpi_running() || place().size == 1) return;
    // in chunks, so that any size fits MPI's int counts
    for (std::size_t at = 0; at < n; at += static_cast<std::size_t>(INT_MAX / 2)) {
        const std::size_t chunk = std::min(n - at, static_cast<std::size_t>(INT_MAX / 2));
        check(MPI_Allreduce(MPI_IN_PLACE, values + at, static_cast<int>(chunk), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    }
}

double sum(double value) {
    sum(&value, 1);
    return value;
}

double max(double value) {
    if (!mpi_running() || place().size == 1) return value;
    check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return value;
}

std::string broadcast(const std::string& text, int root) {
    if (!mpi_running() || place().size == 1) return text;
    int n = count_of(text.size(), "broadcast");
    check(MPI_Bcast(&n, 1, MPI_INT, root, MPI_COMM_WORLD), "MPI_Bcast");
    std::string out = place().rank == root ? text : std::string(static_cast<std::size_t>(n), '\0');
    check(MPI_Bcast(out.data(), n, MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast");
    return out;
}

void broadcast(std::vector<double>& values, int root) {
    if (!mpi_running() || place().size == 1) return;
    unsigned long long n = values.size();
    check(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD), "MPI_Bcast");
    values.resize(n);
    check(MPI_Bcast(values.data(), count_of(n, "broadcast"), MPI_DOUBLE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

std::vector<std::string> gather(const std::string& text, int root) {
    if (!mpi_running() || place().size == 1) return {text};
    const int size = place().size;
    int n = count_of(text.size(), "gather");
    std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
    check(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, MPI_COMM_WORLD), "MPI_Gather");
    std::string all;
    if (place().rank == root) {
        long long total = 0;
        for (int i = 0; i < size; ++i) {
            offsets[static_cast<std::size_t>(i)] = static_cast<int>(total);
            total += counts[static_cast<std::size_t>(i)];
        }
        all.resize(static_cast<std::size_t>(count_of(static_cast<std::size_t>(total), "gather")));
    }
    check(MPI_Gatherv(text.data(), n, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR, root, MPI_COMM_WORLD),
          "MPI_Gatherv");
    std::vector<std::string> out;
    if (place().rank == root)
        for (int i = 0; i < size; ++i)
            out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(i)]),
                                     static_cast<std::size_t>(counts[static_cast<std::size_t>(i)])));
    return out;
}

void barrier() {
    if (mpi_running() && place().size > 1) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

namespace {
FailureScope g_scope = FailureScope::none;
}

FailureScope last_failure_scope() { return g_scope; }

void agree(const std::exception_ptr& local) {
    if (!mpi_running() || place().size == 1) {
        if (local) g_scope = FailureScope::all_ranks;
        if (local) std::rethrow_exception(local);
        return;
    }
    // the lowest failed rank, or size when none failed
    int mine = local ? place().rank : place().size, first = 0;
    check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    if (first == place().size) return;
    int failed = local ? 1 : 0, n_failed = 0;
    check(MPI_Allreduce(&failed, &n_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    g_scope = n_failed == place().size ? FailureScope::all_ranks : FailureScope::some_ranks;
    std::string message;
    if (place().rank == first) {
        try {
            std::rethrow_exception(local);
        } catch (const std::exception& e) {
            message = e.what();
        } catch (...) {
            message = "unknown exception";
        }
    }
    message = broadcast(message, first);
    if (local) std::rethrow_exception(local);
    throw RemoteFailure(fmt::format("rank {} failed: {}", first, message));
}

}  // namespace gprfwi::parallel
