// Applier (read -> journal -> write -> read back, all or nothing), Verifier (drift), Reverter.
#pragma once

#include <memory>

#include <set>
#include <string>
#include <vector>

#include "bpf/xdp_steering.hpp"
#include "core/setting.hpp"
#include "state/journal.hpp"
#include "sys/file_tree.hpp"

namespace rxtune {

// Where settings live: files under the FileTree, or (ValueKind::kXdp) XDP steering on a device.
class Knobs {
public:
    Knobs(FileTree& fs, XdpSteering* xdp) : fs_(fs), xdp_(xdp) {}
    Result<std::string> read(const std::string& path, ValueKind kind) const;
    Result<void> write(const std::string& path, ValueKind kind, const std::string& value) const;
    bool exists(const std::string& path, ValueKind kind) const;
    bool writable(const std::string& path, ValueKind kind) const;
    std::string full(const std::string& path, ValueKind kind) const;
    // sys/class/net opened once, a tree of its own: the devices' directories are opened from
    // there for a run of writes to their knobs.
    Result<std::unique_ptr<FileTree>> netDir() const;

private:
    FileTree& fs_;
    XdpSteering* xdp_;  // null: plans with XDP steering are refused
};

struct ApplyReport {
    std::vector<Setting> written;
    bool resumedInterrupted = false;  // the journal showed an apply that never finished
};

// Writes the plan's pending settings. Originals are on disk before the first write; if any write
// (or its read-back) fails, this apply's writes are undone and the error names setting and path.
// devices: an event's apply (the plan covers these devices and the host-wide settings): only the
// journaled knobs of these devices may be put back or forgotten, and verify's list keeps the
// other devices' entries. Null: the plan is the whole host's.
Result<ApplyReport> applyPlan(const Plan& plan, const Knobs& knobs, const JournalStore& store, const std::string& now,
                              const std::set<std::string>* devices = nullptr);

struct Drift {
    std::string id, path, desired, actual;  // actual empty with missing=true when the file is gone
    bool missing = false;
};
Result<std::vector<Drift>> verifyApplied(const Journal& journal, const Knobs& knobs);

struct RevertReport {
    std::vector<Original> restored;
    std::vector<Original> gone;  // the knob no longer exists (device deleted): nothing to restore
};
// Restores every original in reverse order, then removes the journal. No journal: empty report.
Result<RevertReport> revertAll(const Knobs& knobs, const JournalStore& store);

}  // namespace rxtune
