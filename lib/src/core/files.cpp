#include "gprfwi/files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi {

std::string temporary_name(const std::string& path) { return fmt::format("{}.tmp-{}", path, getpid()); }

void replace_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write) {
    const std::string tmp = temporary_name(path);
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

void check_room(const std::string& probe, const std::string& path, std::uint64_t bytes) {
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(fmt::format("{}: cannot create the file: {}", probe, std::strerror(errno)));
    const int rc = ::fallocate(fd, 0, 0, static_cast<off_t>(bytes));
    const int err = errno;
    if (rc == 0) (void)!::ftruncate(fd, 0);  // gives the space back (the writer truncates the file anyway)
    ::close(fd);
    if (rc != 0 && err != EOPNOTSUPP && err != ENOSYS)
        throw Error(fmt::format("{}: no room for its {:.3g} MB ({}); the file is left as it was", path, bytes / 1e6,
                                std::strerror(err)));
}

void check_room_for(const std::string& path, std::uint64_t bytes) {
    const std::string probe = temporary_name(path);
    try {
        check_room(probe, path, bytes);
    } catch (...) {
        std::remove(probe.c_str());
        throw;
    }
    std::remove(probe.c_str());
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> removed;
    auto sweep = [&](const fs::path& folder) {
        std::error_code ec;
        for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
            if (!it->is_regular_file(ec)) continue;
            const std::string name = it->path().filename().string();
            const std::size_t at = name.rfind(".tmp-");
            if (at == std::string::npos || at + 5 == name.size()) continue;
            const std::string digits = name.substr(at + 5);
            if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
            const pid_t pid = static_cast<pid_t>(std::stol(digits));
            if (pid == getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // (EPERM: it runs, as another user)
            std::error_code rm;
            if (fs::remove(it->path(), rm)) removed.push_back(it->path().string());
        }
    };
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return removed;
    sweep(dir);
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec)) sweep(it->path());
    return removed;
}

std::uint64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                                 : std::numeric_limits<std::uint64_t>::max();
}

}  // namespace gprfwi
