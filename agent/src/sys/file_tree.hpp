// FileTree: read/write/list files under a root ("/" in production, a fixture copy in tests).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace rxtune {

class FileTree {
public:
    explicit FileTree(std::string root);
    virtual ~FileTree() = default;
    FileTree(const FileTree&) = delete;
    FileTree& operator=(const FileTree&) = delete;

    // Relative paths ("sys/class/net/eth0/mtu"); errors carry errno and the full path.
    virtual Result<std::string> read(const std::string& rel) const;
    virtual Result<void> write(const std::string& rel, const std::string& value);
    // Entry names, sorted, without "." and "..".
    virtual Result<std::vector<std::string>> list(const std::string& rel) const;
    virtual Result<std::string> readLink(const std::string& rel) const;
    virtual bool exists(const std::string& rel) const;
    // Whether a write would be permitted (sysctls shown read-only inside a network namespace).
    virtual bool writable(const std::string& rel) const;
    // When `rel` was last modified, in seconds since the epoch (CLOCK_REALTIME); nullopt: no such entry.
    virtual std::optional<double> modifiedAt(const std::string& rel) const;

    std::string full(const std::string& rel) const;
    const std::string& root() const { return root_; }

    // Paths under `prefix` ("proc/sys/") are looked up in `dir` instead: a container that cannot
    // have the host's /proc/sys at /proc/sys (runc mounts nothing inside /proc) has it elsewhere.
    void redirect(std::string prefix, std::string dir);

    // The directory `rel` opened once, as a tree of its own (a device's sysfs directory, read a
    // dozen times in a row): each access then walks from there, not from the root through the
    // /sys/class/net symlink. Meant for a short run of reads: it keeps following the directory it
    // opened, even if the name comes to mean another one. Writes through it go to that directory too.
    virtual Result<std::unique_ptr<FileTree>> subtree(const std::string& rel) const;

protected:
    // What read() does with an open descriptor; `path` names it in errors.
    static Result<std::string> readOpen(int fd, const std::string& path, bool sysfs);
    // What write() does with a descriptor opened for writing; a fixture file is truncated first.
    static Result<void> writeOpen(int fd, const std::string& path, const std::string& value, bool fixture);

private:
    std::string root_;
    std::string redirectPrefix_, redirectDir_;
};

}  // namespace rxtune
