#pragma once
// Kept forward levels away from the device (snapshots.storage host or disk):
// every level in page-locked host memory, or in a scratch file on disk
// through page-locked staging slots, each passing through a ring of kSlots
// device slots. The forward writes level j into its ring slot and the ring
// copies it out on a stream of its own; the adjoint reads levels back in
// reverse, each fetched kSlots levels ahead of its use. Internal to the CUDA
// backend (cuda_engine.cuh includes it).
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>

#include "cuda_check.hpp"
#include "device_memory.cuh"
#include "gprfwi/error.hpp"

namespace gprfwi {
namespace {

template <typename Stored>
class LevelRing {
public:
    /// Device slots: a level is copied out of its slot while the forward
    /// writes the next ones, and into it while the adjoint reads the ones before.
    static constexpr int kSlots = 4;

    explicit LevelRing(int device) : device_(device) {}
    LevelRing(const LevelRing&) = delete;
    LevelRing& operator=(const LevelRing&) = delete;
    ~LevelRing() {
        finish_transfers();
        // (a failed call here would leave CUDA's last error set for the next engine)
        for (auto* list : {&written_, &copied_, &ready_, &consumed_})
            for (cudaEvent_t e : *list)
                if (e) cudaEventDestroy(e);
        if (copy_stream_) cudaStreamDestroy(copy_stream_);
    }

    /// Makes room for `levels` levels of `values` values each, in host memory
    /// or (disk) in a scratch file under `scratch_dir` (empty: $TMPDIR or
    /// /tmp). True where the device slots were allocated anew: their halos,
    /// which no step writes, then hold what freed memory left.
    bool prepare(std::size_t values, int levels, bool disk, const std::string& scratch_dir, DeviceBytes& bytes) {
        values_ = values;
        levels_ = levels;
        disk_ = disk;
        const bool fresh = slots_.resize(static_cast<std::size_t>(kSlots) * values, bytes);
        if (disk_) open_scratch_file(scratch_dir);
        else scratch_.close_and_remove();
        pinned_.reserve(static_cast<std::size_t>(disk_ ? kSlots : levels) * level_bytes(), "the kept forward levels");
        if (!copy_stream_) {
            GPRFWI_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
            for (auto* list : {&written_, &copied_, &ready_, &consumed_})
                for (cudaEvent_t& e : *list) GPRFWI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        }
        return fresh;
    }

    /// Gives its memory back: the device slots, the page-locked memory and
    /// the scratch folder (its transfers finished first).
    void release() {
        finish_transfers();
        scratch_.close_and_remove();
        slots_.release();
        pinned_.release();
    }

    /// The device slots (for the engine's halos and poisoning).
    const DeviceArray<Stored>& slots() const { return slots_; }

    /// Where the forward writes level j: a slot whose last copy out has
    /// finished, as `stream` sees it.
    Stored* for_writing(int j, cudaStream_t stream) {
        GPRFWI_CUDA_CHECK(cudaStreamWaitEvent(stream, copied_[j % kSlots], 0));
        return slot(j);
    }
    /// After the step on `stream` that wrote level j: its copy out (and, on
    /// disk, its write from the staging slot once the copy has landed).
    void written(int j, cudaStream_t stream) {
        const int s = j % kSlots;
        GPRFWI_CUDA_CHECK(cudaEventRecord(written_[s], stream));
        GPRFWI_CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, written_[s], 0));
        if (disk_) wait_io(s);  // the staging slot's previous level is on disk
        GPRFWI_CUDA_CHECK(cudaMemcpyAsync(host_level(j), slot(j), level_bytes(), cudaMemcpyDeviceToHost, copy_stream_));
        GPRFWI_CUDA_CHECK(cudaEventRecord(copied_[s], copy_stream_));
        if (disk_)
            io_[s] = std::async(std::launch::async, [this, j, s] {
                GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
                GPRFWI_CUDA_CHECK(cudaEventSynchronize(copied_[s]));
                disk_transfer(j, host_level(j), true);
            });
    }
    /// The end of a forward that kept levels: every copy out landed (and
    /// written to disk).
    void finish_writing() {
        GPRFWI_CUDA_CHECK(cudaStreamSynchronize(copy_stream_));
        for (int s = 0; s < kSlots; ++s) wait_io(s);
    }

    /// The start of an adjoint: the last kSlots levels on their way in.
    void start_reading() {
        for (int j = levels_; j >= 1 && j > levels_ - kSlots; --j) prefetch(j);
    }
    /// The adjoint's view of level j (nullptr for 0), once `stream` has waited for it.
    const Stored* for_reading(int j, cudaStream_t stream) {
        if (!j) return nullptr;
        if (disk_) wait_io(j % kSlots);  // its copy in has been issued
        GPRFWI_CUDA_CHECK(cudaStreamWaitEvent(stream, ready_[j % kSlots], 0));
        return slot(j);
    }
    /// After the last step on `stream` that reads level j: its slot takes the
    /// level kSlots below.
    void consumed(int j, cudaStream_t stream) {
        GPRFWI_CUDA_CHECK(cudaEventRecord(consumed_[j % kSlots], stream));
        prefetch(j - kSlots);
    }
    /// The end of an adjoint: a disk run's levels are used up, and their
    /// scratch folder goes (the next call makes its own).
    void finish_reading() {
        if (!disk_) return;
        finish_transfers();
        scratch_.close_and_remove();
    }

    /// Where the levels live, in words.
    std::string describe() const {
        return disk_ ? "disk (" + scratch_.folder.string() + ", asynchronous reads and writes)"
                     : "pinned host memory (copied on a second stream)";
    }

private:
    std::size_t level_bytes() const { return values_ * sizeof(Stored); }
    Stored* slot(int j) const { return slots_.get() + static_cast<std::size_t>(j % kSlots) * values_; }
    /// Host storage: level j's page-locked place; disk: the staging slot it passes through.
    Stored* host_level(int j) const {
        return static_cast<Stored*>(pinned_.get()) + static_cast<std::size_t>(disk_ ? j % kSlots : j - 1) * values_;
    }

    /// Host storage: level j into its slot once the slot's last reader has
    /// run; disk: read into the staging slot, then copied up, off the caller's thread.
    void prefetch(int j) {
        if (j < 1) return;
        const int s = j % kSlots;
        GPRFWI_CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, consumed_[s], 0));
        if (!disk_) {
            GPRFWI_CUDA_CHECK(cudaMemcpyAsync(slot(j), host_level(j), level_bytes(), cudaMemcpyHostToDevice, copy_stream_));
            GPRFWI_CUDA_CHECK(cudaEventRecord(ready_[s], copy_stream_));
            return;
        }
        wait_io(s);
        io_[s] = std::async(std::launch::async, [this, j, s] {
            GPRFWI_CUDA_CHECK(cudaSetDevice(device_));
            GPRFWI_CUDA_CHECK(cudaEventSynchronize(ready_[s]));  // the slot's previous copy up has left it
            disk_transfer(j, host_level(j), false);
            GPRFWI_CUDA_CHECK(cudaMemcpyAsync(slot(j), host_level(j), level_bytes(), cudaMemcpyHostToDevice, copy_stream_));
            GPRFWI_CUDA_CHECK(cudaEventRecord(ready_[s], copy_stream_));
        });
    }

    /// Waits for (and rethrows the error of) the disk transfer through staging slot s.
    void wait_io(int s) {
        if (io_[s].valid()) io_[s].get();
    }
    /// Waits for (and forgets the errors of) any disk transfer still running.
    void finish_transfers() {
        for (auto& f : io_)
            if (f.valid()) try {
                    f.get();
                } catch (...) {
                }
    }

    /// Writes (write = true) or reads level j at its place in the scratch file.
    void disk_transfer(int j, Stored* buffer, bool write) const {
        const std::size_t total = level_bytes();
        const off_t offset = static_cast<off_t>(static_cast<std::size_t>(j - 1) * total);
        auto* p = reinterpret_cast<char*>(buffer);
        for (std::size_t done = 0; done < total;) {
            const ssize_t r = write ? pwrite(scratch_.fd, p + done, total - done, offset + static_cast<off_t>(done))
                                    : pread(scratch_.fd, p + done, total - done, offset + static_cast<off_t>(done));
            if (r <= 0) {
                const std::string why = r < 0 ? std::strerror(errno) : "unexpected end of file";
                std::error_code ec;
                const auto space = std::filesystem::space(scratch_.folder, ec);
                throw Error(std::string(write ? "writing" : "reading") + " kept level " + std::to_string(j) + " (" +
                            std::to_string(total >> 20) + " MiB) in " + scratch_.folder.string() + " failed: " + why +
                            (ec ? std::string() : "; " + std::to_string(space.available >> 20) + " MiB free there"));
            }
            done += static_cast<std::size_t>(r);
        }
    }

    /// Disk storage: a folder of its own under the scratch folder, with one
    /// file sized for every kept level (a gradient's, removed at its end);
    /// refuses to start when the disk lacks the room.
    void open_scratch_file(const std::string& scratch_dir) {
        if (scratch_.fd >= 0) return;
        std::string base = scratch_dir;
        if (base.empty()) base = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
        const auto folder = std::filesystem::path(base) / ("gprfwi-levels-" + std::to_string(getpid()) + "-" +
                                                           std::to_string(reinterpret_cast<std::uintptr_t>(this)));
        std::error_code ec;
        std::filesystem::create_directories(folder, ec);
        if (ec) throw Error("cannot create the scratch folder " + folder.string() + ": " + ec.message());
        scratch_.folder = folder;
        const std::size_t need = static_cast<std::size_t>(levels_) * level_bytes();
        const auto space = std::filesystem::space(folder, ec);
        if (!ec && space.available < need) {
            scratch_.close_and_remove();
            throw OutOfMemory("kept forward levels need " + std::to_string(need >> 20) + " MiB in " + folder.string() +
                              " but only " + std::to_string(space.available >> 20) +
                              " MiB are free there; choose another snapshots.scratch_dir, bf16 or fp8 levels, a "
                              "snapshot interval, or checkpointing");
        }
        const auto file = folder / "levels.bin";
        scratch_.fd = open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (scratch_.fd < 0) throw Error("cannot create " + file.string() + ": " + std::strerror(errno));
    }

    int device_ = 0;
    std::size_t values_ = 0;  // of a level (the batch's padded nodes)
    int levels_ = 0;
    bool disk_ = false;          // pinned_ is then a staging ring of kSlots slots
    DeviceArray<Stored> slots_;  // kSlots levels on the device
    PinnedBlock pinned_;
    ScratchFile scratch_;                       // (declared before io_: outlives the transfers)
    std::array<std::future<void>, kSlots> io_;  // the disk transfer through each staging slot
    cudaStream_t copy_stream_ = nullptr;
    std::array<cudaEvent_t, kSlots> written_{}, copied_{}, ready_{}, consumed_{};
};

}  // namespace
}  // namespace gprfwi
