#pragma once
// Files that are never half-written: every writer of gprfwi fills a
// temporary file in the same folder and renames it into place when complete.

#include <functional>
#include <string>

namespace gprfwi {

/// Calls write(tmp) for a temporary name beside `path` (`path.tmp-PID`), then
/// renames it to `path`. When write throws or the rename fails, the temporary
/// file is removed and `path` is left as it was; throws Error naming the file.
void replace_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write);

/// A text file written that way (history.csv, run-info.txt, XDMF sidecars).
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace gprfwi
