// FileTree: read/write/list files under a root ("/" in production, a fixture copy in tests).
#pragma once

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

    std::string full(const std::string& rel) const;
    const std::string& root() const { return root_; }

private:
    std::string root_;
};

}  // namespace rxtune
