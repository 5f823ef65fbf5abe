// Journal of original values: atomic (temp file, fsync, rename), guarded by an flock'd lock file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/setting.hpp"

namespace rxtune {

struct Original {
    std::string id;
    std::string path;
    ValueKind kind = ValueKind::kWord;
    std::string value;  // what was there before rxtune first touched the knob
};

struct Journal {
    std::string state;  // "applying" while writes may be half done, then "applied"
    long pid = 0;
    std::string profile;
    std::string appliedAt;              // ISO 8601 UTC
    std::vector<Original> originals;    // in the order first touched; revert replays in reverse
    std::vector<Setting> applied;       // desired values of the last apply, for verify

    const Original* original(const std::string& path) const;
};

class JournalStore {
public:
    explicit JournalStore(std::string dir);
    Result<std::optional<Journal>> load() const;
    Result<void> save(const Journal& j) const;  // write temp, fsync, rename, fsync dir
    Result<void> remove() const;
    std::string path() const { return dir_ + "/journal.json"; }

private:
    std::string dir_;
};

// Exclusive lock on <runDir>/lock for the lifetime of the object.
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
