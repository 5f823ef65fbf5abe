#include "apply/apply.hpp"

#include <unistd.h>

#include <set>

namespace rxtune {

namespace {

std::string deviceOf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

Result<void> writeChecked(const Knobs& fs, const std::string& id, const std::string& path, ValueKind kind,
                          const std::string& value) {
    if (auto w = fs.write(path, kind, value); !w) return failWith(w.error().withContext(id));
    auto back = fs.read(path, kind);
    if (!back) return failWith(back.error().withContext(id));
    if (!sameValue(kind, *back, value))
        return failWith(Error{EIO, "read back", fs.full(path, kind),
                              "wrote '" + value + "', kernel shows '" + normalise(kind, *back) + "'", {}}
                            .withContext(id));
    return {};
}

}  // namespace

Result<std::string> Knobs::read(const std::string& path, ValueKind kind) const {
    if (kind != ValueKind::kXdp) return fs_.read(path);
    if (!xdp_) return fail(ENOTSUP, "xdp", path, "XDP steering is not available here");
    return xdp_->current(deviceOf(path));
}

Result<void> Knobs::write(const std::string& path, ValueKind kind, const std::string& value) const {
    if (kind != ValueKind::kXdp) return fs_.write(path, value);
    if (!xdp_) return fail(ENOTSUP, "xdp", path, "XDP steering is not available here");
    if (value.empty()) return xdp_->remove(deviceOf(path));
    auto spec = XdpSpec::parse(value);
    if (!spec) return failWith(spec.error());
    return xdp_->install(deviceOf(path), *spec);
}

bool Knobs::writable(const std::string& path, ValueKind kind) const {
    return kind == ValueKind::kXdp || fs_.writable(path);
}

bool Knobs::exists(const std::string& path, ValueKind kind) const {
    // XDP pins are removed even when the device is gone, so that nothing is left in bpffs.
    return kind == ValueKind::kXdp || fs_.exists(path);
}

std::string Knobs::full(const std::string& path, ValueKind kind) const {
    return kind == ValueKind::kXdp ? "xdp on " + deviceOf(path) : fs_.full(path);
}

Result<ApplyReport> applyPlan(const Plan& plan, const Knobs& fs, const JournalStore& store, const std::string& now) {
    ApplyReport report;
    auto loaded = store.load();
    if (!loaded) return failWith(loaded.error());
    const std::optional<Journal> before = *loaded;
    Journal j = before.value_or(Journal{});
    report.resumedInterrupted = before && before->state == "applying";

    // Settings an earlier apply changed that this plan no longer mentions go back to their
    // originals (the host shows the new profile, not a mix); knobs that are gone are forgotten.
    std::set<std::string> planned;
    for (const auto& s : plan.settings) planned.insert(s.path);
    std::vector<Setting> restores;
    std::set<std::string> settled;  // journaled paths this apply puts back or finds gone
    for (const auto& o : j.originals) {
        if (planned.count(o.path)) continue;
        if (!fs.exists(o.path, o.kind)) {
            // A deleted device's knobs are gone for good; anything else that is absent (a host-global
            // sysctl seen from inside a network namespace) keeps its original for a later revert.
            if (o.path.starts_with("sys/class/net/")) settled.insert(o.path);
            continue;
        }
        auto cur = fs.read(o.path, o.kind);
        if (!cur) {
            if (cur.error().code != ENOENT && cur.error().code != ENODEV) return failWith(cur.error().withContext(o.id));
            if (o.path.starts_with("sys/class/net/")) settled.insert(o.path);
            continue;
        }
        if (sameValue(o.kind, *cur, o.value)) {
            settled.insert(o.path);
            continue;
        }
        if (!fs.writable(o.path, o.kind)) continue;  // read-only here (rmem_max in a netns): kept for revert
        restores.push_back({o.id, o.path, o.kind, *cur, o.value, "no longer in the profile: original restored"});
    }

    std::vector<const Setting*> pending;
    for (const auto& s : restores) pending.push_back(&s);
    for (const auto& s : plan.settings)
        if (s.pending()) pending.push_back(&s);

    // Originals first: only knobs never journaled get an entry, so a value written by an earlier
    // (possibly interrupted) apply can never replace the true original.
    // Current values are read again here, raw, so that revert and rollback put back the very
    // bytes they found.
    std::vector<std::string> rawBefore;
    for (const Setting* s : pending) {
        auto raw = fs.read(s->path, s->kind);
        if (!raw) return failWith(raw.error().withContext(s->id));
        rawBefore.push_back(*raw);
        if (!j.original(s->path)) j.originals.push_back({s->id, s->path, s->kind, *raw});
    }
    j.state = "applying";
    j.pid = static_cast<long>(::getpid());
    j.profile = plan.profile;
    j.applied = plan.settings;
    if (!pending.empty() || !before || !settled.empty()) {
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
    for (const auto& s : restores) settled.insert(s.path);
    std::erase_if(j.originals, [&](const Original& o) { return settled.count(o.path) > 0; });
    j.state = "applied";
    j.appliedAt = now;
    if (auto r = store.save(j); !r) return failWith(r.error());
    return report;
}

Result<std::vector<Drift>> verifyApplied(const Journal& journal, const Knobs& fs) {
    std::vector<Drift> out;
    for (const auto& s : journal.applied) {
        auto cur = fs.read(s.path, s.kind);
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

Result<RevertReport> revertAll(const Knobs& fs, const JournalStore& store) {
    RevertReport report;
    auto loaded = store.load();
    if (!loaded) return failWith(loaded.error());
    if (!*loaded) return report;
    const Journal& j = **loaded;
    Error firstError;
    bool failed = false;
    for (auto it = j.originals.rbegin(); it != j.originals.rend(); ++it) {
        if (!fs.exists(it->path, it->kind)) {
            report.gone.push_back(*it);
            continue;
        }
        auto cur = fs.read(it->path, it->kind);
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
