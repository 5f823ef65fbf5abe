// Applier (read -> journal -> write -> read back, all or nothing), Verifier (drift), Reverter.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bpf/xdp_steering.hpp"
#include "core/setting.hpp"
#include "knobs/family.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "sys/file_tree.hpp"
#include "sys/napi_threads.hpp"

namespace rxtune {

// Where settings live, by family (knobs/registry): files under the FileTree, XDP steering on a
// device, a device's NAPI kthreads. Each call goes to the family of the key.
class Knobs {
public:
    explicit Knobs(FileTree& fs, Services services = {}) : io_{fs, std::move(services)} {}
    Result<std::string> read(const KnobKey& key, const std::string& path) const;
    Result<void> write(const KnobKey& key, const std::string& path, const std::string& value) const;
    bool exists(const KnobKey& key, const std::string& path) const;
    bool writable(const KnobKey& key, const std::string& path) const;
    std::string full(const KnobKey& key, const std::string& path) const;
    bool fileBacked(const KnobKey& key) const;
    // In place but not in effect yet (its family says how and why); nullopt: in effect.
    std::optional<KnobFamily::Pending> pending(const KnobKey& key, const std::string& desired) const;
    // sys/class/net opened once, a tree of its own: the devices' directories are opened from
    // there for a run of writes to their knobs.
    Result<std::unique_ptr<FileTree>> netDir() const;
    // The same knobs, files looked up in `dir` (a device's directory).
    Knobs within(FileTree& dir) const { return Knobs(dir, io_.services); }
    // The network namespace these knobs are in (/proc/self/ns/net's link: "net:[4026531840]");
    // "" where the tree has no /proc (a fixture).
    std::string netns() const;

private:
    KnobIo io_;
};

// A value in place that the kernel has not put into effect yet (knobs' families: pending()).
struct PendingEffect {
    std::string id;
    std::string desired;
    std::string what;           // in words: where it is in effect now, and when that changes
    std::uint64_t against = 0;  // what the kernel did against it so far (KnobFamily::Pending)
};

struct ApplyReport {
    std::vector<Setting> written;
    // Of those, the ids whose value the journal did not hold as applied: set the first time, or the
    // plan changed its mind (irq.cpus auto chose another CPU, a reload). The others put back what
    // someone else changed (drift, a device reset).
    std::set<std::string> newValues;
    // Writes the kernel refused for a reason of the knob's own (a managed IRQ): skipped.
    struct Refused {
        std::string id, reason;
        KnobKey key;
    };
    std::vector<Refused> refused;
    std::vector<PendingEffect> pending;  // written and read back, not in effect yet (an IRQ until its next interrupt)
    bool resumedInterrupted = false;  // the journal showed an apply that never finished
};

// Writes the plan's pending settings. Originals are on disk before the first write; if any write
// (or its read-back) fails, this apply's writes are undone, the one that failed too (it may have
// landed before its read-back failed), and the error names setting and path. Where something
// could not be put back, the journal stays on disk with its original, for revert, and the error
// says so.
// devices: an event's apply (the plan covers these devices and the host-wide settings): only the
// journaled knobs of these devices may be put back or forgotten, and verify's list keeps the
// other devices' entries. Null: the plan is the whole host's.
// clock: what a fresh journal's generations start from (null: the system's).
Result<ApplyReport> applyPlan(const Plan& plan, const Knobs& knobs, const JournalStore& store, const std::string& now,
                              const std::set<std::string>* devices = nullptr, const Clock* clock = nullptr);

// A setting another agent moved (KnobFamily::othersMove) while a command ran: from `was` to `found`.
struct MovedSetting {
    Setting setting;
    std::string was, found;
    std::string by;  // who moved it, in words (its family's KnobFamily::moverOf; set by the caller)
};
// After the hooks before a command's writes (which may have waited on irqbalance): the plan's
// settings that others move, read again. Each found changed since the plan read it (`was`) takes
// `current` and `raw` from the new reading, so that the apply writes it (and journals what it
// holds now), and is returned.
std::vector<MovedSetting> rereadMoved(Plan& plan, const Knobs& knobs);
// After an apply: the plan's settings that others move, read again, and those found off their
// desired value (`was`) written back; their originals are journaled, or they were in place when
// the plan read them. An error: a write failed (the ones before it stand).
Result<std::vector<MovedSetting>> putBackMoved(const Plan& plan, const Knobs& knobs);

// The steps applyPlan is made of, each testable alone.
namespace applysteps {

// What is known of a journaled knob this plan no longer sets (read by readDropped).
struct Dropped {
    Original original;
    bool gone = false;                   // the knob is gone for good (its device was deleted)
    std::optional<std::string> current;  // absent: nothing to do now (absent here, read-only here)
};
// The journaled knobs in scope that the plan does not set, and what each holds now.
Result<std::vector<Dropped>> readDropped(const Journal& j, const Plan& plan, const Knobs& knobs, const std::set<std::string>* devices);

// The next journal and what to write, worked out without touching anything.
struct Step {
    Journal journal;                // to be saved (state set by the caller)
    std::vector<Setting> restores;  // dropped knobs not at their original: put back
    std::vector<Setting> pending;   // restores, then the plan's pending settings
    std::vector<std::string> rawBefore;  // pending's values as they were (rollback), same order
    bool appliedChanged = false;    // what verify checks, or the profile, changed
    bool originalsAdded = false;
    bool forgot = false;            // originals of settled knobs left the journal
};
// before: the journal on disk (absent: none); raw: the bytes read now for each of the plan's
// pending settings that carries none (by path). Pure.
Step nextJournal(const std::optional<Journal>& before, std::uint64_t freshGeneration, const Plan& plan,
                 const std::vector<Dropped>& dropped, const std::map<std::string, std::string>& raw,
                 const std::set<std::string>* devices, long pid);

// Runs the writes: file-backed knobs a device's together (its directory opened once), spread over
// a few threads; then the others (XDP programs, kthreads) in plan order on this thread. The first
// failure stops the rest; done[i] says which were written (kWritten) and which failed, having
// maybe landed (kTried: a write the kernel took whose read-back or after-effect failed).
struct Executed {
    static constexpr char kWritten = 1, kTried = 2;
    std::vector<char> done;
    std::vector<std::pair<size_t, Error>> refused;  // skipped: its family says the refusal is the knob's own
    std::optional<std::pair<size_t, Error>> failed;
};
Executed execute(const std::vector<Setting>& pending, const Knobs& knobs, const Plan& plan);

// Puts back what an apply wrote or tried to, newest first; what could not be is added to err's
// context. True: every knob it touched holds its value from before.
bool rollback(const std::vector<Setting>& pending, const Executed& ran, const std::vector<std::string>& rawBefore,
              const Knobs& knobs, const Plan& plan, Error& err);

}  // namespace applysteps

struct Drift {
    std::string id, path, desired, actual;  // actual empty with missing=true when the file is gone
    std::string where;                      // the knob as errors name it (a file's full path, "xdp on eth0")
    bool missing = false;
};
Result<std::vector<Drift>> verifyApplied(const Journal& journal, const Knobs& knobs);
// The journal's applied settings that are in place but not in effect yet.
std::vector<PendingEffect> pendingApplied(const Journal& journal, const Knobs& knobs);

struct RevertReport {
    std::vector<Original> restored;
    std::vector<Original> gone;  // the knob no longer exists (device deleted): nothing to restore
};
// Restores every original in reverse order, then removes the journal. No journal: empty report.
Result<RevertReport> revertAll(const Knobs& knobs, const JournalStore& store);

}  // namespace rxtune
