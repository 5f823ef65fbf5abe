// Applier (read -> journal -> write -> read back, all or nothing), Verifier (drift), Reverter.
#pragma once

#include <string>
#include <vector>

#include "core/setting.hpp"
#include "state/journal.hpp"
#include "sys/file_tree.hpp"

namespace rxtune {

struct ApplyReport {
    std::vector<Setting> written;
    bool resumedInterrupted = false;  // the journal showed an apply that never finished
};

// Writes the plan's pending settings. Originals are on disk before the first write; if any write
// (or its read-back) fails, this apply's writes are undone and the error names setting and path.
Result<ApplyReport> applyPlan(const Plan& plan, FileTree& fs, const JournalStore& store, const std::string& now);

struct Drift {
    std::string id, path, desired, actual;  // actual empty with missing=true when the file is gone
    bool missing = false;
};
Result<std::vector<Drift>> verifyApplied(const Journal& journal, const FileTree& fs);

struct RevertReport {
    std::vector<Original> restored;
    std::vector<Original> gone;  // the knob no longer exists (device deleted): nothing to restore
};
// Restores every original in reverse order, then removes the journal. No journal: empty report.
Result<RevertReport> revertAll(FileTree& fs, const JournalStore& store);

}  // namespace rxtune
