#include "sys/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace rxtune {

// One read of the size fstat gives (the journal: hundreds of KB with thousands of devices; a
// stringstream copied it twice), then on to the end in case the file grew meanwhile.
Result<std::optional<std::string>> readFileIfExists(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();  // absent
        return fail(errno, "read", path);
    }
    struct stat st {};
    std::string text;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t used = 0;
    for (;;) {
        if (used == text.size()) text.resize(text.size() + 4096);
        const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            return fail(err, "read", path);
        }
        if (n == 0) break;
        used += static_cast<std::size_t>(n);
    }
    ::close(fd);
    text.resize(used);
    return std::optional<std::string>(std::move(text));
}

Result<std::string> readFileBounded(const std::string& path, std::size_t maxBytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(errno ? errno : ENOENT, "read", path);
    std::string text(maxBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) return fail(errno ? errno : EIO, "read", path);
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

Result<void> removeFilesDurable(const std::vector<std::string>& files, const std::string& dir) {
    for (const auto& f : files)
        if (::unlink(f.c_str()) != 0 && errno != ENOENT) return fail(errno, "unlink", f);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return {};
}

Result<void> makeDirectories(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(ec.value(), "mkdir", dir);
    return {};
}

Result<StateLock> StateLock::acquire(const std::string& runDir) {
    if (auto r = makeDirectories(runDir); !r) return failWith(r.error());
    const std::string p = runDir + "/lock";
    int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return fail(errno, "open", p);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        ::close(fd);
        return fail(e, "lock", p, e == EWOULDBLOCK ? "another rxtune is applying or reverting" : "");
    }
    return StateLock(fd);
}

StateLock::~StateLock() {
    if (fd_ >= 0) ::close(fd_);
}

Result<void> removeFile(const std::string& path) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail(errno, "unlink", path);
    return {};
}

bool raiseFileLimit() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
    if (lim.rlim_cur >= lim.rlim_max) return true;
    lim.rlim_cur = lim.rlim_max;
    return ::setrlimit(RLIMIT_NOFILE, &lim) == 0;
}

}  // namespace rxtune
