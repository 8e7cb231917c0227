// L-BFGS in TAO keeps twice its memory plus about ten vectors of the whole
// model, allocated together by TaoSetUp and zeroed, then written by one
// thread. Debian's PETSc takes them from malloc, so every stage of a
// campaign paid the kernel's page faults for some 400 MB on one thread
// (docs/performance.md, "Inversion campaigns"). Here the large blocks are
// mapped directly and faulted in by all threads at once; anonymous mappings
// are zero, so a zeroed block costs nothing more.

#include "inversion/petsc_memory.hpp"

#include <petscsys.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace gprfwi {

namespace {

constexpr std::size_t kPage = 4096;

struct LargeBlocks {
    std::mutex mutex;
    std::unordered_map<void*, std::size_t> size;  // the bytes asked for, by address (mapped: rounded up to pages)
};
LargeBlocks& large_blocks() {
    static LargeBlocks blocks;
    return blocks;
}

// PETSc's own allocator, which small blocks keep using
PetscErrorCode (*g_malloc)(std::size_t, PetscBool, int, const char[], const char[], void**) = nullptr;
PetscErrorCode (*g_free)(void*, int, const char[], const char[]) = nullptr;
PetscErrorCode (*g_realloc)(std::size_t, int, const char[], const char[], void**) = nullptr;

std::size_t mapped_bytes(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

/// A zeroed block of `bytes`, its pages faulted in by every thread; nullptr
/// if the kernel refuses. (Not advised into huge pages: where the kernel
/// compacts memory for them on the fault, as Debian's default does for
/// advised regions, that made TaoSetUp slower than malloc.)
void* map_large(std::size_t bytes) {
    const std::size_t length = mapped_bytes(bytes);
    void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    auto* p = static_cast<char*>(raw);
    const std::ptrdiff_t pages = static_cast<std::ptrdiff_t>(length / kPage);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < pages; ++i) p[static_cast<std::size_t>(i) * kPage] = 0;
    return p;
}

/// The size asked for of a block of ours (0: not ours).
std::size_t large_size(void* p) {
    LargeBlocks& blocks = large_blocks();
    const std::lock_guard lock(blocks.mutex);
    const auto it = blocks.size.find(p);
    return it == blocks.size.end() ? 0 : it->second;
}

PetscErrorCode petsc_malloc(std::size_t bytes, PetscBool clear, int line, const char function[], const char file[],
                            void** result) {
    if (bytes < kPetscLargeBlock) return g_malloc(bytes, clear, line, function, file, result);
    void* p = map_large(bytes);
    if (!p) return g_malloc(bytes, clear, line, function, file, result);
    LargeBlocks& blocks = large_blocks();
    const std::lock_guard lock(blocks.mutex);
    blocks.size.emplace(p, bytes);
    *result = p;
    return 0;
}

PetscErrorCode petsc_free(void* p, int line, const char function[], const char file[]) {
    if (!p) return 0;
    std::size_t bytes = 0;
    {
        LargeBlocks& blocks = large_blocks();
        const std::lock_guard lock(blocks.mutex);
        const auto it = blocks.size.find(p);
        if (it != blocks.size.end()) {
            bytes = it->second;
            blocks.size.erase(it);
        }
    }
    if (bytes == 0) return g_free(p, line, function, file);
    munmap(p, mapped_bytes(bytes));
    return 0;
}

PetscErrorCode petsc_realloc(std::size_t bytes, int line, const char function[], const char file[], void** result) {
    const std::size_t old = large_size(*result);
    if (old == 0) return g_realloc(bytes, line, function, file, result);  // (a small block stays PETSc's)
    void* fresh = nullptr;
    PetscCall(petsc_malloc(bytes, PETSC_FALSE, line, function, file, &fresh));
    std::memcpy(fresh, *result, old < bytes ? old : bytes);
    PetscCall(petsc_free(*result, line, function, file));
    *result = fresh;
    return 0;
}

}  // namespace

void install_petsc_allocator() {
    if (PetscTrMalloc == &petsc_malloc) return;  // (installed, not yet undone by PetscFinalize)
    g_malloc = PetscTrMalloc;
    g_free = PetscTrFree;
    g_realloc = PetscTrRealloc;
    PetscMallocSet(&petsc_malloc, &petsc_free, &petsc_realloc);
}

}  // namespace gprfwi
