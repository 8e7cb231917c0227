#include "gprfwi/files.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi {

void replace_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write) {
    const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
    try {
        write(tmp);
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw Error(fmt::format("{}: cannot move the finished file into place: {}", path, ec.message()));
    }
}

void write_text_atomically(const std::string& path, const std::string& text) {
    replace_file_atomically(path, [&](const std::string& tmp) {
        std::FILE* f = std::fopen(tmp.c_str(), "w");
        if (!f) throw Error(fmt::format("{}: cannot create the file", tmp));
        const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        if (std::fclose(f) != 0 || !ok) throw Error(fmt::format("{}: cannot write the file", path));
    });
}

}  // namespace gprfwi
