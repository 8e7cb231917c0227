#pragma once
// What every fuzz target shares: the input goes to a file (gprfwi's readers
// read paths), the reader runs, and the outcome is judged. A reader may
// accept the input or refuse it with an input error (InvalidArgument and its
// kin: the command line's exit code 2) that says why; anything else is a
// finding and aborts, so libFuzzer keeps the input: another exception type
// (a parser's own, std::bad_alloc, std::out_of_range), an empty message,
// and, through the sanitizers, every crash, out-of-bounds access, overflow,
// leak of time (-timeout) or memory (-rss_limit_mb).

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include <spdlog/spdlog.h>

#include "gprfwi/error.hpp"

namespace gprfwi::fuzz {

/// A folder of this process's own for the input files (removed at exit;
/// never destroyed, so that the exit handler that removes it can name it).
inline const std::string& scratch_dir() {
    static const std::string& dir = *new std::string([] {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/gprfwi-fuzz-XXXXXX";
        if (!mkdtemp(pattern.data())) {
            std::perror("gprfwi fuzz: mkdtemp");
            std::abort();
        }
        spdlog::set_level(spdlog::level::off);  // the readers' warnings are not findings
        std::atexit([] { std::system(("rm -rf '" + scratch_dir() + "'").c_str()); });
        return pattern;
    }());
    return dir;
}

/// Writes the input to `<scratch>/<name>` and returns the path.
inline std::string input_file(const std::uint8_t* data, std::size_t size, const std::string& name) {
    const std::string path = scratch_dir() + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) {
        std::fprintf(stderr, "gprfwi fuzz: cannot write %s\n", path.c_str());
        std::abort();
    }
    return path;
}

/// Runs `read` and aborts on anything but success or a refusal with a message.
template <class Read>
void judge(const char* reader, Read&& read) {
    try {
        read();
    } catch (const std::exception& e) {
        if (!is_input_error(e)) {
            std::fprintf(stderr, "FINDING: %s threw an exception that is not an input error: %s\n", reader, e.what());
            std::abort();
        }
        if (std::string(e.what()).empty()) {
            std::fprintf(stderr, "FINDING: %s refused the input without a message\n", reader);
            std::abort();
        }
    }
}

}  // namespace gprfwi::fuzz
