#pragma once
// The CUDA engine's memory: page-locked host memory (a process-wide pool of
// blocks lent out again, and an engine's own blocks), device arrays that
// keep their capacity, the tally of what a propagator's engines hold on
// its device, the L2 window's share, and a scratch file for levels on disk.

#include <cuda_runtime.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "gprfwi/error.hpp"
#include "gprfwi/files.hpp"

namespace gprfwi {
// Internal to the CUDA backend (cuda_propagator.cu includes it).
namespace {

/// Page-locked host memory for the engines' transfers of traces and sums,
/// kept for the life of the process and lent out again. Copies from
/// pageable memory run at a fraction of the link's speed; page-locked memory
/// takes all of it. Pinning memory costs about as much as the copies it
/// speeds up, so the blocks are never unpinned: the pool holds at most what
/// the engines alive at one time borrowed, and the process's end frees it
/// (measurements: docs/performance.md, "CUDA tuning constants").
class PinnedPool {
public:
    /// A block of at least `bytes`: a free one if there is one, else a new one.
    static void* borrow(std::size_t bytes, std::size_t& got) {
        PinnedPool& p = instance();
        {
            const std::lock_guard lock(p.mutex_);
            if (auto it = p.free_.lower_bound(bytes); it != p.free_.end()) {
                got = it->first;
                void* block = it->second;
                p.free_.erase(it);
                return block;
            }
        }
        void* block = nullptr;
        if (cudaHostAlloc(&block, bytes, cudaHostAllocDefault) != cudaSuccess) {
            cudaGetLastError();
            throw OutOfMemory("cannot pin " + std::to_string(bytes >> 20) + " MiB of host memory for the traces "
                              "and gradient sums; fewer shots per batch need less");
        }
        got = bytes;
        return block;
    }
    static void give_back(void* block, std::size_t bytes) {
        PinnedPool& p = instance();
        const std::lock_guard lock(p.mutex_);
        p.free_.emplace(bytes, block);
    }

private:
    static PinnedPool& instance() {
        static PinnedPool* pool = new PinnedPool;  // (never destroyed: CUDA may be shut down before static destructors)
        return *pool;
    }
    std::mutex mutex_;
    std::multimap<std::size_t, void*> free_;  // by size
};

/// Values of T in a block borrowed from the PinnedPool, given back at the
/// end; resize() borrows a larger block only where the one it has is too small.
template <typename T>
class PinnedArray {
public:
    T* get() const { return p_.get(); }
    std::size_t size() const { return n_; }
    std::span<const T> view() const { return {p_.get(), n_}; }
    /// Holds n values from now on (the values kept where the block holds n).
    void resize(std::size_t n) {
        if (n > p_.get_deleter().bytes / sizeof(T) || !p_) {
            p_.reset();
            if (n) {
                std::size_t bytes = 0;
                void* block = PinnedPool::borrow(n * sizeof(T), bytes);
                p_ = {static_cast<T*>(block), GiveBack{bytes}};
            }
        }
        n_ = n;
    }
    void release() {
        p_.reset();
        n_ = 0;
    }

private:
    struct GiveBack {
        std::size_t bytes = 0;  // of the block, which may be larger than n values
        void operator()(T* p) const { PinnedPool::give_back(p, bytes); }
    };
    std::unique_ptr<T, GiveBack> p_;
    std::size_t n_ = 0;
};

/// Page-locked host memory of an engine's own (the kept levels of `host` and
/// `disk` storage), freed when it goes or grows.
class PinnedBlock {
public:
    PinnedBlock() = default;
    PinnedBlock(const PinnedBlock&) = delete;
    PinnedBlock& operator=(const PinnedBlock&) = delete;
    ~PinnedBlock() { release(); }
    void* get() const { return p_; }
    /// At least `bytes` from now on; `what` names them in the error.
    void reserve(std::size_t bytes, const char* what) {
        if (bytes <= capacity_ && p_) return;
        release();
        if (cudaHostAlloc(&p_, bytes, cudaHostAllocDefault) != cudaSuccess) {
            cudaGetLastError();
            p_ = nullptr;
            throw OutOfMemory("cannot pin " + std::to_string(bytes >> 20) + " MiB of host memory for " + what +
                              "; use snapshot compression bf16 or a snapshot interval above 1, or fewer shots per batch");
        }
        capacity_ = bytes;
    }
    void release() {
        if (p_) cudaFreeHost(p_);
        p_ = nullptr;
        capacity_ = 0;
    }

private:
    void* p_ = nullptr;
    std::size_t capacity_ = 0;
};

/// What a propagator's engines hold on its device together: the bytes they
/// have allocated (and the most at once), and the coefficients their L2
/// access-policy windows keep. A batch's shot groups are engines alive at
/// once, on threads of their own.
class DeviceTally {
public:
    void allocated(std::size_t bytes) {
        const std::lock_guard lock(mutex_);
        live_ += bytes;
        peak_ = std::max(peak_, live_);
    }
    void freed(std::size_t bytes) {
        const std::lock_guard lock(mutex_);
        live_ -= std::min(live_, bytes);
    }
    std::size_t peak() const {
        const std::lock_guard lock(mutex_);
        return peak_;
    }
    /// Adds `bytes` to the windows' and says so when all of them fit in
    /// `half_set_aside`; else false.
    bool add_window(std::size_t bytes, std::size_t half_set_aside) {
        const std::lock_guard lock(mutex_);
        if (window_ + bytes > half_set_aside) return false;
        window_ += bytes;
        return true;
    }
    void remove_window(std::size_t bytes) {
        const std::lock_guard lock(mutex_);
        window_ -= std::min(window_, bytes);
    }

private:
    mutable std::mutex mutex_;
    std::size_t live_ = 0, peak_ = 0, window_ = 0;
};

/// A cudaMalloc that found too little free memory (which a caller may
/// answer by giving memory back and trying again).
struct DeviceAllocationFailed : OutOfMemory {
    using OutOfMemory::OutOfMemory;
};

/// The device memory one engine holds: its blocks, counted in its
/// propagator's DeviceTally too.
class DeviceBytes {
public:
    /// `poisoned`: every block filled with bytes 0xFF when allocated
    /// (CudaTuning::poison_device_memory).
    DeviceBytes(DeviceTally& tally, bool poisoned) : tally_(tally), poisoned_(poisoned) {}
    DeviceBytes(const DeviceBytes&) = delete;
    DeviceBytes& operator=(const DeviceBytes&) = delete;
    void added(void* block, std::size_t bytes) {
        blocks_.emplace(block, bytes);
        held_ += bytes;
        tally_.allocated(bytes);
    }
    void removed(void* block) {
        const auto it = blocks_.find(block);
        if (it == blocks_.end()) return;
        held_ -= it->second;
        tally_.freed(it->second);
        blocks_.erase(it);
    }
    std::size_t held() const { return held_; }
    bool poisoned() const { return poisoned_; }
    /// Fills every block with bytes 0xFF (NaN in every floating-point type) on stream s.
    void poison(cudaStream_t s) const {
        for (const auto& [block, bytes] : blocks_) GPRFWI_CUDA_CHECK(cudaMemsetAsync(block, 0xFF, bytes, s));
    }

private:
    DeviceTally& tally_;
    bool poisoned_ = false;
    std::map<void*, std::size_t> blocks_;
    std::size_t held_ = 0;
};

/// An owning device array of n values, in memory that it keeps while later
/// sizes fit in it (its capacity) and allocates anew where they do not.
/// Uploads and clears run on the caller's stream, ordered with its kernels.
template <typename T>
class DeviceArray {
public:
    DeviceArray() = default;
    DeviceArray(DeviceArray&& o) noexcept
        : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), capacity_(std::exchange(o.capacity_, 0)),
          owner_(std::exchange(o.owner_, nullptr)) {}
    DeviceArray& operator=(DeviceArray&& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        std::swap(capacity_, o.capacity_);
        std::swap(owner_, o.owner_);
        return *this;
    }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    ~DeviceArray() { release(); }

    T* get() const { return p_; }
    std::size_t size() const { return n_; }

    /// Holds n values from now on: where its memory holds fewer, the memory
    /// is given back and n values allocated anew (their bytes unspecified,
    /// or 0xFF where the owner is poisoned); else it is kept, values and
    /// all. Returns whether it allocated. Throws DeviceAllocationFailed when
    /// the device has too little free memory.
    bool resize(std::size_t n, DeviceBytes& owner) {
        if (n <= capacity_ && (p_ || n == 0)) {
            n_ = n;
            return false;
        }
        release();
        const cudaError_t status = cudaMalloc(&p_, n * sizeof(T));
        if (status == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            p_ = nullptr;
            throw DeviceAllocationFailed("cudaMalloc of " + std::to_string((n * sizeof(T)) >> 20) +
                                         " MiB failed: too little free device memory");
        }
        GPRFWI_CUDA_CHECK(status);
        n_ = capacity_ = n;
        owner_ = &owner;
        owner.added(p_, n * sizeof(T));
        if (owner.poisoned()) {  // (the legacy stream: finished before anything else uses the array)
            GPRFWI_CUDA_CHECK(cudaMemset(p_, 0xFF, n * sizeof(T)));
            GPRFWI_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
        }
        return true;
    }
    /// resize(host.size()) and the host values copied in on stream s (from
    /// pageable memory the copy is staged before this returns: the host
    /// values may change or go at once).
    void upload(const std::vector<T>& host, DeviceBytes& owner, cudaStream_t s) {
        resize(host.size(), owner);
        if (n_) GPRFWI_CUDA_CHECK(cudaMemcpyAsync(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice, s));
    }
    /// Gives the memory back.
    void release() {
        if (p_) {
            cudaFree(p_);
            owner_->removed(p_);
        }
        p_ = nullptr;
        n_ = capacity_ = 0;
    }
    void zero(cudaStream_t s) const {
        if (n_) GPRFWI_CUDA_CHECK(cudaMemsetAsync(p_, 0, n_ * sizeof(T), s));
    }
    /// Queues a copy into `host` (page-locked, at least n values) on stream s;
    /// it has landed once the stream is synchronised.
    void download_async(const PinnedArray<T>& host, cudaStream_t s) const {
        if (host.size() < n_) throw Error("DeviceArray::download_async: the host buffer is smaller than the array");
        if (n_) GPRFWI_CUDA_CHECK(cudaMemcpyAsync(host.get(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost, s));
    }
    std::vector<T> download() const {
        std::vector<T> h(n_);
        if (n_) GPRFWI_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }

private:
    T* p_ = nullptr;
    std::size_t n_ = 0, capacity_ = 0;
    DeviceBytes* owner_ = nullptr;
};

template <typename T>
std::vector<T> convert(const std::vector<double>& v) {
    return std::vector<T>(v.begin(), v.end());
}

/// As convert, padded with zeros to a multiple of 4 values, so that the
/// kernels may read a CPML profile in whole 16-byte packs.
template <typename T>
std::vector<T> convert_padded(const std::vector<double>& v) {
    std::vector<T> out((v.size() + 3) / 4 * 4, T(0));
    std::copy(v.begin(), v.end(), out.begin());
    return out;
}

/// A scratch folder with one open file, removed with everything in it when
/// this goes, including when the engine that holds it fails to construct.
struct ScratchFile {
    std::filesystem::path folder;
    int fd = -1;
    ScratchFile() = default;
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;
    ~ScratchFile() { close_and_remove(); }
    void close_and_remove() {
        if (fd >= 0) close(fd);
        fd = -1;
        if (!folder.empty()) {
            std::error_code ignored;
            std::filesystem::remove_all(folder, ignored);
        }
        folder.clear();
    }
};

std::string device_name(int device) {
    cudaDeviceProp p{};
    GPRFWI_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    return p.name;
}

/// An engine's L2 window's share of the set-aside, given back (and the lines
/// it kept released) when the engine goes, even from a failed constructor.
class L2WindowShare {
public:
    L2WindowShare(DeviceTally& tally, std::size_t bytes) : tally_(tally), bytes_(bytes) {}
    L2WindowShare(const L2WindowShare&) = delete;
    L2WindowShare& operator=(const L2WindowShare&) = delete;
    ~L2WindowShare() {
        cudaCtxResetPersistingL2Cache();  // (the lines it kept are freed memory now)
        tally_.remove_window(bytes_);
    }

private:
    DeviceTally& tally_;
    std::size_t bytes_;
};

}  // namespace
}  // namespace gprfwi
