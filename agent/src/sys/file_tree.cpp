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

// Lists the open directory fd (and closes it); `path` names it in errors.
Result<std::vector<std::string>> listOpen(int fd, const std::string& path) {
    DIR* d = ::fdopendir(fd);
    if (!d) {
        int err = errno;
        ::close(fd);
        return fail(err, "list", path);
    }
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

}  // namespace

FileTree::FileTree(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

void FileTree::redirect(std::string prefix, std::string dir) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    redirectPrefix_ = std::move(prefix);
    redirectDir_ = std::move(dir);
}

std::string FileTree::full(const std::string& rel) const {
    if (!redirectPrefix_.empty() && rel.starts_with(redirectPrefix_)) return redirectDir_ + "/" + rel.substr(redirectPrefix_.size());
    if (root_ == "/") return "/" + rel;
    return root_ + "/" + rel;
}

Result<std::string> FileTree::readOpen(int rawFd, const std::string& path, bool sysfs) {
    UniqueFd fd(rawFd);
    if (fd.get() < 0) return fail(errno, "read", path);
    std::string out;
    std::array<char, 65536> buf;  // not zeroed: read() fills it (64 KiB of memset per knob read adds up)
    while (true) {
        ssize_t n = ::read(fd.get(), buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errno, "read", path);
        }
        if (n == 0) break;
        out.append(buf.data(), static_cast<size_t>(n));
        if (out.size() > kMaxFileSize) return fail(EFBIG, "read", path, "file larger than 64 MiB");
        // A sysfs attribute is shown whole by the first read (at most a page): a short read there
        // is the end, and the read that would return 0 is one syscall per knob saved.
        if (sysfs && static_cast<size_t>(n) < buf.size()) break;
    }
    return out;
}

namespace {

bool isSysfs(const std::string& rel) { return rel.starts_with("sys/") && !rel.starts_with("sys/fs/"); }

// A directory held open (O_PATH); every access is relative to it.
class DirTree final : public FileTree {
public:
    DirTree(std::string root, UniqueFd dir, bool sysfs, bool fixture)
        : FileTree(std::move(root)), dir_(std::move(dir)), sysfs_(sysfs), fixture_(fixture) {}

    Result<std::string> read(const std::string& rel) const override {
        return readOpen(::openat(dir_.get(), rel.c_str(), O_RDONLY | O_CLOEXEC), full(rel), sysfs_);
    }
    Result<void> write(const std::string& rel, const std::string& value) override {
        return writeOpen(::openat(dir_.get(), rel.c_str(), O_WRONLY | O_CLOEXEC), full(rel), value, fixture_);
    }
    Result<std::vector<std::string>> list(const std::string& rel) const override {
        int fd = ::openat(dir_.get(), rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return fail(errno, "list", full(rel));
        return listOpen(fd, full(rel));
    }
    Result<std::string> readLink(const std::string& rel) const override {
        std::array<char, 4096> buf;
        ssize_t n = ::readlinkat(dir_.get(), rel.c_str(), buf.data(), buf.size() - 1);
        if (n < 0) return fail(errno, "readlink", full(rel));
        return std::string(buf.data(), static_cast<size_t>(n));
    }
    bool exists(const std::string& rel) const override {
        struct stat st {};
        return ::fstatat(dir_.get(), rel.c_str(), &st, 0) == 0;
    }
    bool writable(const std::string& rel) const override { return ::faccessat(dir_.get(), rel.c_str(), W_OK, 0) == 0; }
    Result<std::unique_ptr<FileTree>> subtree(const std::string& rel) const override {
        int fd = ::openat(dir_.get(), rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return fail(errno, "open", full(rel));
        return std::unique_ptr<FileTree>(new DirTree(full(rel), UniqueFd(fd), sysfs_, fixture_));
    }

private:
    UniqueFd dir_;
    bool sysfs_;
    bool fixture_;
};

}  // namespace

Result<std::string> FileTree::read(const std::string& rel) const {
    const std::string path = full(rel);
    return readOpen(::open(path.c_str(), O_RDONLY | O_CLOEXEC), path, isSysfs(rel));
}

Result<std::unique_ptr<FileTree>> FileTree::subtree(const std::string& rel) const {
    const std::string path = full(rel);
    int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail(errno, "open", path);
    return std::unique_ptr<FileTree>(new DirTree(path, UniqueFd(fd), isSysfs(rel), root_ != "/"));
}

Result<void> FileTree::write(const std::string& rel, const std::string& value) {
    const std::string path = full(rel);
    // No O_CREAT and no O_TRUNC: sysfs/procfs knobs exist or the write is wrong.
    return writeOpen(::open(path.c_str(), O_WRONLY | O_CLOEXEC), path, value, root_ != "/");
}

Result<void> FileTree::writeOpen(int rawFd, const std::string& path, const std::string& value, bool fixture) {
    UniqueFd fd(rawFd);
    if (fd.get() < 0) return fail(errno, "write", path);
    if (fixture) {
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
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail(errno, "list", path);
    return listOpen(fd, path);
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

std::optional<double> FileTree::modifiedAt(const std::string& rel) const {
    struct stat st {};
    if (::stat(full(rel).c_str(), &st) != 0) return std::nullopt;
    return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

}  // namespace rxtune
