#include "apply/apply.hpp"

#include <unistd.h>

namespace rxtune {

namespace {

Result<void> writeChecked(FileTree& fs, const std::string& id, const std::string& path, ValueKind kind,
                          const std::string& value) {
    if (auto w = fs.write(path, value); !w) return failWith(w.error().withContext(id));
    auto back = fs.read(path);
    if (!back) return failWith(back.error().withContext(id));
    if (!sameValue(kind, *back, value))
        return failWith(Error{EIO, "read back", fs.full(path),
                              "wrote '" + value + "', kernel shows '" + normalise(kind, *back) + "'", {}}
                            .withContext(id));
    return {};
}

}  // namespace

Result<ApplyReport> applyPlan(const Plan& plan, FileTree& fs, const JournalStore& store, const std::string& now) {
    ApplyReport report;
    auto loaded = store.load();
    if (!loaded) return failWith(loaded.error());
    const std::optional<Journal> before = *loaded;
    Journal j = before.value_or(Journal{});
    report.resumedInterrupted = before && before->state == "applying";

    std::vector<const Setting*> pending;
    for (const auto& s : plan.settings)
        if (s.pending()) pending.push_back(&s);

    // Originals first: only knobs never journaled get an entry, so a value written by an earlier
    // (possibly interrupted) apply can never replace the true original.
    // Current values are read again here, raw, so that revert and rollback put back the very
    // bytes they found.
    std::vector<std::string> rawBefore;
    for (const Setting* s : pending) {
        auto raw = fs.read(s->path);
        if (!raw) return failWith(raw.error().withContext(s->id));
        rawBefore.push_back(*raw);
        if (!j.original(s->path)) j.originals.push_back({s->id, s->path, s->kind, *raw});
    }
    j.state = "applying";
    j.pid = static_cast<long>(::getpid());
    j.profile = plan.profile;
    j.applied = plan.settings;
    if (!pending.empty() || !before) {
        if (auto r = store.save(j); !r) return failWith(r.error());
    }

    for (size_t i = 0; i < pending.size(); ++i) {
        const Setting& s = *pending[i];
        auto r = writeChecked(fs, s.id, s.path, s.kind, s.desired);
        if (r) {
            report.written.push_back(s);
            continue;
        }
        // All or nothing: put back what this apply changed, newest first.
        Error err = r.error();
        for (size_t k = i; k-- > 0;) {
            const Setting& done = *pending[k];
            if (auto u = writeChecked(fs, done.id, done.path, done.kind, rawBefore[k]); !u)
                err.context.insert(err.context.begin(), "rollback also failed: " + u.error().message());
        }
        if (before) {
            if (auto w = store.save(*before); !w) return failWith(w.error());
        } else if (auto w = store.remove(); !w) {
            return failWith(w.error());
        }
        return failWith(std::move(err));
    }
    j.state = "applied";
    j.appliedAt = now;
    if (auto r = store.save(j); !r) return failWith(r.error());
    return report;
}

Result<std::vector<Drift>> verifyApplied(const Journal& journal, const FileTree& fs) {
    std::vector<Drift> out;
    for (const auto& s : journal.applied) {
        auto cur = fs.read(s.path);
        if (!cur) {
            if (cur.error().code == ENOENT) {
                out.push_back({s.id, s.path, s.desired, "", true});
                continue;
            }
            return failWith(cur.error().withContext(s.id));
        }
        if (!sameValue(s.kind, *cur, s.desired)) out.push_back({s.id, s.path, s.desired, normalise(s.kind, *cur), false});
    }
    return out;
}

Result<RevertReport> revertAll(FileTree& fs, const JournalStore& store) {
    RevertReport report;
    auto loaded = store.load();
    if (!loaded) return failWith(loaded.error());
    if (!*loaded) return report;
    const Journal& j = **loaded;
    Error firstError;
    bool failed = false;
    for (auto it = j.originals.rbegin(); it != j.originals.rend(); ++it) {
        if (!fs.exists(it->path)) {
            report.gone.push_back(*it);
            continue;
        }
        auto cur = fs.read(it->path);
        if (cur && sameValue(it->kind, *cur, it->value)) {
            report.restored.push_back(*it);
            continue;
        }
        if (auto w = writeChecked(fs, it->id, it->path, it->kind, it->value); !w) {
            if (w.error().code == ENOENT || w.error().code == ENODEV) {
                report.gone.push_back(*it);
                continue;
            }
            if (!failed) firstError = w.error();
            failed = true;
            continue;
        }
        report.restored.push_back(*it);
    }
    // The journal stays until every original is back, so a failed revert can be retried.
    if (failed) return failWith(std::move(firstError).withContext("revert incomplete, journal kept"));
    if (auto r = store.remove(); !r) return failWith(r.error());
    return report;
}

}  // namespace rxtune
