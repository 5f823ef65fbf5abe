// Whole files of rxtune's own (journal, configuration) read and removed; the state lock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace rxtune {

// The file's text; nullopt when there is none.
Result<std::optional<std::string>> readFileIfExists(const std::string& path);
// At most maxBytes + 1 bytes (so that a caller can refuse what is longer) however large the file,
// pipe or device behind the path is.
Result<std::string> readFileBounded(const std::string& path, std::size_t maxBytes);
// Unlinks each file (absent is fine), in order, then fsyncs their directory.
Result<void> removeFilesDurable(const std::vector<std::string>& files, const std::string& dir);
Result<void> makeDirectories(const std::string& dir);
// Unlinks one file; absent is fine.
Result<void> removeFile(const std::string& path);
// The soft limit of open descriptors raised to the hard one (systemd's LimitNOFILE); false where
// it could not be.
bool raiseFileLimit();

// Exclusive lock on <runDir>/lock (flock) for the lifetime of the object.
class StateLock {
public:
    static Result<StateLock> acquire(const std::string& runDir);
    StateLock(StateLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    StateLock& operator=(StateLock&&) = delete;
    StateLock(const StateLock&) = delete;
    ~StateLock();

private:
    explicit StateLock(int fd) : fd_(fd) {}
    int fd_;
};

}  // namespace rxtune
