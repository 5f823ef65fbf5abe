#include "sys/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

namespace rxtune {

Result<void> writeFileAtomic(const std::string& path, const std::string& data, bool durable) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(ec.value(), "mkdir", dir);
    const std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return fail(errno, "open", tmp);
    size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::write(fd, data.data() + off, data.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            ::close(fd);
            return fail(e, "write", tmp);
        }
        off += static_cast<size_t>(n);
    }
    if (durable && ::fsync(fd) != 0) {
        int e = errno;
        ::close(fd);
        return fail(e, "fsync", tmp);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno, "rename", path);
    if (!durable) return {};
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return fail(errno, "open", dir);
    int rc = ::fsync(dfd);
    ::close(dfd);
    if (rc != 0) return fail(errno, "fsync", dir);
    return {};
}

}  // namespace rxtune
