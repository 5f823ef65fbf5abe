#include "sys/atomic_file.hpp"
#include "sys/unique_fd.hpp"

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
    {
        UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        if (fd.get() < 0) return fail(errno, "open", tmp);
        for (size_t off = 0; off < data.size();) {
            const ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return fail(errno, "write", tmp);
            off += static_cast<size_t>(n);
        }
        if (durable && ::fsync(fd.get()) != 0) return fail(errno, "fsync", tmp);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno, "rename", path);
    if (!durable) return {};
    UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() < 0) return fail(errno, "open", dir);
    if (::fsync(dfd.get()) != 0) return fail(errno, "fsync", dir);
    return {};
}

}  // namespace rxtune
