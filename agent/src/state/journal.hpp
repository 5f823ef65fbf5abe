// Journal of original values: atomic (temp file, fsync, rename), guarded by an flock'd lock file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/setting.hpp"
#include "sys/files.hpp"  // StateLock

namespace rxtune {

struct Original {
    std::string id;
    std::string path;
    ValueKind kind = ValueKind::kWord;
    std::string value;  // what was there before rxtune first touched the knob
    // Stored beside id and path; a journal of the build before has none (family ""), and
    // recoverKeys (knobs/registry) asks the family that built the path for it.
    KnobKey key;
};

struct Journal {
    std::string state;  // "applying" while writes may be half done, then "applied"
    std::uint64_t generation = 0;  // one more at every durable save; the completion mark names it
    long pid = 0;
    std::string profile;
    std::string appliedAt;              // ISO 8601 UTC
    // The network namespace the journal was written in (/proc/self/ns/net: "net:[4026531840]"):
    // its per-namespace sysctls and devices are that namespace's. "" where unknown (journals of
    // releases before it was kept, a tree without /proc): then it is not checked.
    std::string netns;
    std::vector<Original> originals;    // in the order first touched; revert replays in reverse
    std::vector<Setting> applied;       // desired values of the last apply, for verify
    std::string source;                 // the file it was read from, for errors ("": made in memory); not stored

    const Original* original(const std::string& path) const;
};

// The journal's text (and its completion mark's, where there is one), as JournalStore::load reads
// them; path names the file in errors.
Result<Journal> parseJournal(std::string_view text, std::optional<std::string_view> mark, const std::string& path);
// parseJournal's two readers. The fast one reads straight into the structs and takes only a
// journal in its writer's shape that passes every check (nullopt for anything else); the
// reference one builds a JSON document tree and decides everything else, so what is refused and
// every message are its own. Tests and the journal fuzz target compare the two.
std::optional<Journal> parseJournalFast(std::string_view text, std::optional<std::string_view> mark);
Result<Journal> parseJournalReference(std::string_view text, std::optional<std::string_view> mark, const std::string& path);

class JournalStore {
public:
    explicit JournalStore(std::string dir);
    Result<std::optional<Journal>> load() const;
    Result<void> save(const Journal& j) const;  // write temp, fsync, rename, fsync dir
    // Marks the journal of `generation` complete ("applied" at `at`) in a small second file,
    // written atomically (temp, rename) but not fsynced. It holds no original: if it is lost, or
    // torn by a power cut, the journal reads as an interrupted apply, whose originals are all on
    // disk already and are adopted. This is what lets an apply cost one fsync'd save, not two.
    Result<void> markApplied(std::uint64_t generation, const std::string& at) const;
    Result<void> remove() const;
    std::string path() const { return dir_ + "/journal.json"; }
    std::string markPath() const { return dir_ + "/journal.applied"; }

private:
    std::string dir_;
};

}  // namespace rxtune
