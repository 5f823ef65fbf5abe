#include "sys/file_tree.hpp"
#include "sys/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>

namespace rxtune {

namespace {

// procfs files such as /proc/interrupts on big hosts run to megabytes; this bounds a hostile tree.
constexpr size_t kMaxFileSize = 64u << 20;

}  // namespace

FileTree::FileTree(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string FileTree::full(const std::string& rel) const {
    if (root_ == "/") return "/" + rel;
    return root_ + "/" + rel;
}

Result<std::string> FileTree::read(const std::string& rel) const {
    const std::string path = full(rel);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return fail(errno, "read", path);
    std::string out;
    std::array<char, 65536> buf{};
    while (true) {
        ssize_t n = ::read(fd.get(), buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errno, "read", path);
        }
        if (n == 0) break;
        out.append(buf.data(), static_cast<size_t>(n));
        if (out.size() > kMaxFileSize) return fail(EFBIG, "read", path, "file larger than 64 MiB");
    }
    return out;
}

Result<void> FileTree::write(const std::string& rel, const std::string& value) {
    const std::string path = full(rel);
    // No O_CREAT and no O_TRUNC: sysfs/procfs knobs exist or the write is wrong.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0) return fail(errno, "write", path);
    if (root_ != "/") {
        // A fixture file behaves like a knob: its new content replaces the old one.
        if (::ftruncate(fd.get(), 0) != 0) return fail(errno, "write", path);
    }
    ssize_t n;
    do {
        n = ::write(fd.get(), value.data(), value.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) return fail(errno, "write", path);
    if (static_cast<size_t>(n) != value.size()) return fail(EIO, "write", path, "short write");
    if (::close(fd.release()) != 0) return fail(errno, "write", path);
    return {};
}

Result<std::vector<std::string>> FileTree::list(const std::string& rel) const {
    const std::string path = full(rel);
    DIR* d = ::opendir(path.c_str());
    if (!d) return fail(errno, "list", path);
    std::vector<std::string> out;
    errno = 0;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") out.push_back(std::move(n));
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return fail(err, "list", path);
    std::sort(out.begin(), out.end());
    return out;
}

Result<std::string> FileTree::readLink(const std::string& rel) const {
    const std::string path = full(rel);
    std::array<char, 4096> buf{};
    ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size() - 1);
    if (n < 0) return fail(errno, "readlink", path);
    return std::string(buf.data(), static_cast<size_t>(n));
}

bool FileTree::writable(const std::string& rel) const { return ::access(full(rel).c_str(), W_OK) == 0; }

bool FileTree::exists(const std::string& rel) const {
    struct stat st {};
    return ::stat(full(rel).c_str(), &st) == 0;
}

}  // namespace rxtune
