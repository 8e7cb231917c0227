#pragma once
// Files that are never half-written: every writer of gprfwi fills a
// temporary file in the same folder and renames it into place when complete.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gprfwi {

/// `path.tmp-PID`: the name a writer of this process fills before renaming
/// it to `path` (remove_stale_temporaries knows it by that form).
std::string temporary_name(const std::string& path);

/// Calls write(tmp) for a temporary name beside `path` (`path.tmp-PID`), then
/// renames it to `path`. When write throws or the rename fails, the temporary
/// file is removed and `path` is left as it was; throws Error naming the file.
void replace_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write);

/// A text file written that way (history.csv, run-info.txt, XDMF sidecars).
void write_text_atomically(const std::string& path, const std::string& text);

/// Throws Error naming `path` when `bytes` cannot be written (free space,
/// quota, file-size limit): it allocates them (fallocate) in `probe`, which
/// it creates or truncates and leaves empty. Where the file system cannot
/// allocate ahead, nothing is checked. Writers check before they write, for
/// a write that fails half-way can leave a library (HDF5) in a state that
/// fails again when it shuts down.
void check_room(const std::string& probe, const std::string& path, std::uint64_t bytes);

/// The same beside `path` (a probe `path.tmp-PID`, removed again): what
/// commands check before they compute, so that no computation is lost for
/// want of room for its results.
void check_room_for(const std::string& path, std::uint64_t bytes);

/// Removes the temporary files (`NAME.tmp-PID`) that a writer killed before
/// its rename left in `dir` and its immediate subfolders, where no process
/// PID runs on this machine; returns their names. A campaign calls it at its
/// start, so that a run killed while writing leaves nothing behind once
/// resumed (the file it was replacing is still the previous, whole one).
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

/// This machine's physical memory, bytes: what a reader checks an array it
/// is about to allocate against, so that a file too large for the machine is
/// refused with the sizes instead of failing in the allocator.
std::uint64_t physical_memory_bytes();

}  // namespace gprfwi
