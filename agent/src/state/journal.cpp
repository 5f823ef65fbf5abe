#include "state/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sys/atomic_file.hpp"

namespace rxtune {

using json = nlohmann::json;

namespace {

Result<void> mkdirs(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(ec.value(), "mkdir", dir);
    return {};
}

}  // namespace

const Original* Journal::original(const std::string& path) const {
    for (const auto& o : originals)
        if (o.path == path) return &o;
    return nullptr;
}

JournalStore::JournalStore(std::string dir) : dir_(std::move(dir)) {}

Result<std::optional<Journal>> JournalStore::load() const {
    std::ifstream in(path());
    if (!in) {
        if (errno == ENOENT || !std::filesystem::exists(path())) return std::optional<Journal>{};
        return fail(errno, "read", path());
    }
    try {
        json j = json::parse(in);
        if (j.at("version").get<int>() != 1) return fail(EINVAL, "parse", path(), "unknown journal version");
        Journal out;
        out.state = j.at("state").get<std::string>();
        out.generation = j.value("generation", std::uint64_t{0});
        out.pid = j.value("pid", 0L);
        out.profile = j.value("profile", "");
        out.appliedAt = j.value("applied_at", "");
        // The completion mark of this very generation says the apply finished.
        if (std::ifstream mark(markPath()); mark) {
            try {
                json m = json::parse(mark);
                if (m.at("generation").get<std::uint64_t>() == out.generation) {
                    out.state = "applied";
                    out.appliedAt = m.at("applied_at").get<std::string>();
                }
            } catch (const json::exception&) {
                // Torn by a power cut (it is never fsynced): the apply reads as interrupted.
            }
        }
        for (const auto& o : j.at("originals")) {
            Original e{o.at("id"), o.at("path"), ValueKind::kWord, o.at("value")};
            if (!parseValueKind(o.at("kind").get<std::string>(), e.kind))
                return fail(EINVAL, "parse", path(), "unknown value kind");
            out.originals.push_back(std::move(e));
        }
        for (const auto& s : j.at("applied")) {
            Setting st;
            st.id = s.at("id");
            st.path = s.at("path");
            st.desired = s.at("desired");
            if (!parseValueKind(s.at("kind").get<std::string>(), st.kind))
                return fail(EINVAL, "parse", path(), "unknown value kind");
            out.applied.push_back(std::move(st));
        }
        return std::optional<Journal>(std::move(out));
    } catch (const json::exception& e) {
        // A torn journal cannot happen (rename is atomic); a damaged one is reported, never ignored.
        return fail(EINVAL, "parse", path(), std::string("damaged journal: ") + e.what());
    }
}

Result<void> JournalStore::save(const Journal& jr) const {
    json j;
    j["version"] = 1;
    j["state"] = jr.state;
    j["generation"] = jr.generation;
    j["pid"] = jr.pid;
    j["profile"] = jr.profile;
    j["applied_at"] = jr.appliedAt;
    j["originals"] = json::array();
    for (const auto& o : jr.originals)
        j["originals"].push_back({{"id", o.id}, {"path", o.path}, {"kind", toString(o.kind)}, {"value", o.value}});
    j["applied"] = json::array();
    for (const auto& s : jr.applied)
        j["applied"].push_back({{"id", s.id}, {"path", s.path}, {"kind", toString(s.kind)}, {"desired", s.desired}});
    return writeFileAtomic(path(), j.dump(1) + "\n", true);
}

Result<void> JournalStore::markApplied(std::uint64_t generation, const std::string& at) const {
    return writeFileAtomic(markPath(), json{{"generation", generation}, {"applied_at", at}}.dump() + "\n", false);
}

Result<void> JournalStore::remove() const {
    // The mark first: a mark without a journal is nothing; a journal without its mark is an
    // interrupted apply, which is still safe.
    if (::unlink(markPath().c_str()) != 0 && errno != ENOENT) return fail(errno, "unlink", markPath());
    if (::unlink(path().c_str()) != 0 && errno != ENOENT) return fail(errno, "unlink", path());
    int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return {};
}

Result<StateLock> StateLock::acquire(const std::string& runDir) {
    if (auto r = mkdirs(runDir); !r) return failWith(r.error());
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

}  // namespace rxtune
