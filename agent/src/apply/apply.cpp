#include "apply/apply.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "core/parallel.hpp"
#include "core/paths.hpp"
#include "core/text.hpp"

namespace rxtune {

namespace {

// Where a successful write() is proof enough, so that no read-back is needed:
// - rps_flow_cnt: the kernel rounds the count up to a power of two and shows the table's size,
//   so a power of two (or 0) it accepted is what it holds (net/core/net-sysfs.c,
//   store/show_rps_dev_flow_table_cnt);
// - rps_cpus: the kernel keeps the mask it parsed, less the CPUs that are not housekeeping
//   (store_rps_map); a mask with none of those (rpsDropped) is stored as written.
// Anything else, and a revert (which has no plan), is read back.
bool writeIsExact(const std::string& path, ValueKind kind, const std::string& value, const std::optional<CpuSet>& rpsDropped) {
    if (kind == ValueKind::kInteger && path.ends_with("/rps_flow_cnt")) {
        std::uint64_t n = 0;
        return parseUnsigned(value, n) && (n & (n - 1)) == 0;
    }
    if (kind == ValueKind::kCpuMask && path.ends_with("/rps_cpus") && rpsDropped) {
        auto mask = CpuSet::parseMask(value);
        return mask && (*mask & *rpsDropped).empty();
    }
    return false;
}

Result<void> writeChecked(const Knobs& fs, const std::string& id, const std::string& path, ValueKind kind,
                          const std::string& value, const std::optional<CpuSet>& rpsDropped = std::nullopt) {
    if (auto w = fs.write(path, kind, value); !w) return failWith(w.error().withContext(id));
    if (writeIsExact(path, kind, value, rpsDropped)) return {};
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
    return xdp_->current(paths::deviceOf(path));
}

Result<void> Knobs::write(const std::string& path, ValueKind kind, const std::string& value) const {
    if (kind != ValueKind::kXdp) return fs_.write(path, value);
    if (!xdp_) return fail(ENOTSUP, "xdp", path, "XDP steering is not available here");
    if (value.empty()) return xdp_->remove(paths::deviceOf(path));
    auto spec = XdpSpec::parse(value);
    if (!spec) return failWith(spec.error());
    return xdp_->install(paths::deviceOf(path), *spec);
}

bool Knobs::writable(const std::string& path, ValueKind kind) const {
    return kind == ValueKind::kXdp || fs_.writable(path);
}

bool Knobs::exists(const std::string& path, ValueKind kind) const {
    // XDP pins are removed even when the device is gone, so that nothing is left in bpffs.
    return kind == ValueKind::kXdp || fs_.exists(path);
}

std::string Knobs::full(const std::string& path, ValueKind kind) const {
    return kind == ValueKind::kXdp ? "xdp on " + paths::deviceOf(path) : fs_.full(path);
}

Result<std::unique_ptr<FileTree>> Knobs::netDir() const { return fs_.subtree(paths::netClass()); }

Result<ApplyReport> applyPlan(const Plan& plan, const Knobs& fs, const JournalStore& store, const std::string& now,
                              const std::set<std::string>* devices) {
    ApplyReport report;
    auto loaded = store.load();
    if (!loaded) return failWith(loaded.error());
    const std::optional<Journal> before = *loaded;
    Journal j = before.value_or(Journal{});
    report.resumedInterrupted = before && before->state == "applying";
    if (!before) {
        // A fresh journal's generations start from the clock, so that no completion mark left
        // from an earlier journal can ever name one of them.
        j.generation = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    }
    // An event's apply (devices) answers for those devices' knobs only: the rest of the journal,
    // other devices and host-wide settings, is the full reconcile's.
    auto inScope = [&](const std::string& path) {
        if (!devices) return true;
        const std::string d = paths::deviceOf(path);
        return !d.empty() && devices->count(d) > 0;
    };

    // Settings an earlier apply changed that this plan no longer mentions go back to their
    // originals (the host shows the new profile, not a mix); knobs that are gone are forgotten.
    std::set<std::string> planned;
    for (const auto& s : plan.settings) planned.insert(s.path);
    std::vector<Setting> restores;
    std::set<std::string> settled;  // journaled paths whose knob is gone or at its original already
    for (const auto& o : j.originals) {
        if (planned.count(o.path) || !inScope(o.path)) continue;
        if (!fs.exists(o.path, o.kind)) {
            // A deleted device's knobs are gone for good; anything else that is absent (a host-global
            // sysctl seen from inside a network namespace) keeps its original for a later revert.
            if (!paths::deviceOf(o.path).empty()) settled.insert(o.path);
            continue;
        }
        auto cur = fs.read(o.path, o.kind);
        if (!cur) {
            if (cur.error().code != ENOENT && cur.error().code != ENODEV) return failWith(cur.error().withContext(o.id));
            if (!paths::deviceOf(o.path).empty()) settled.insert(o.path);
            continue;
        }
        if (sameValue(o.kind, *cur, o.value)) {
            settled.insert(o.path);
            continue;
        }
        if (!fs.writable(o.path, o.kind)) continue;  // read-only here (rmem_max in a netns): kept for revert
        restores.push_back({o.id, o.path, o.kind, *cur, o.value, "no longer in the profile: original restored", *cur});
    }

    std::vector<const Setting*> pending;
    for (const auto& s : restores) pending.push_back(&s);
    for (const auto& s : plan.settings)
        if (s.pending()) pending.push_back(&s);

    // What verify checks: this plan's settings, and, for an event's apply, the others' as they were.
    std::vector<Setting> applied;
    if (devices)
        for (const auto& s : j.applied)
            if (!inScope(s.path) && !planned.count(s.path)) applied.push_back(s);
    applied.insert(applied.end(), plan.settings.begin(), plan.settings.end());
    auto sameApplied = [&](const std::vector<Setting>& a) {
        return a.size() == applied.size() && std::equal(a.begin(), a.end(), applied.begin(), [](const Setting& x, const Setting& y) {
                   return x.path == y.path && x.kind == y.kind && x.desired == y.desired;
               });
    };
    const bool appliedChanged = !before || !sameApplied(before->applied) || before->profile != plan.profile;
    j.pid = static_cast<long>(::getpid());
    j.profile = plan.profile;
    j.applied = std::move(applied);

    auto saveDurable = [&](const char* state) -> Result<void> {
        j.state = state;
        j.appliedAt = now;
        ++j.generation;
        return store.save(j);
    };
    bool originalsAdded = false;
    std::set<std::string> journaled;
    for (const auto& o : j.originals) journaled.insert(o.path);
    // A device created while rxtune's net.core.rps_default_mask was in force got its RPS mask from
    // rxtune, not from its owner: its original is the mask's original, even where it holds the
    // value wanted already and nothing is written to it (else revert would leave it steered).
    const std::string maskPath = paths::sysctl("net.core.rps_default_mask");
    const Original* maskOriginal = before ? before->original(maskPath) : nullptr;
    auto maskNow = std::find_if(plan.settings.begin(), plan.settings.end(), [&](const Setting& s) { return s.path == maskPath; });
    if (maskOriginal && maskNow != plan.settings.end()) {
        for (const auto& s : plan.settings) {
            if (!s.path.ends_with("/rps_cpus") || journaled.count(s.path) ||
                !sameValue(ValueKind::kCpuMask, s.current, maskNow->current))
                continue;
            j.originals.push_back({s.id, s.path, s.kind, maskOriginal->value});
            journaled.insert(s.path);
            originalsAdded = true;
        }
    }
    if (pending.empty()) {
        // Nothing to write: one save at most, of what the journal learnt.
        std::erase_if(j.originals, [&](const Original& o) { return settled.count(o.path) > 0; });
        if (appliedChanged || originalsAdded || !settled.empty() || before->state != "applied")
            if (auto r = saveDurable("applied"); !r) return failWith(r.error());
        return report;
    }

    // Originals first: only knobs never journaled get an entry, so a value written by an earlier
    // (possibly interrupted) apply can never replace the true original.
    // Current values are read again here, raw, so that revert and rollback put back the very
    // bytes they found.
    std::vector<std::string> rawBefore;
    for (const Setting* s : pending) {
        // The bytes the snapshot read a moment ago where the plan carries them, else read now.
        Result<std::string> raw = s->raw;
        if (s->raw.empty()) raw = fs.read(s->path, s->kind);
        if (!raw) return failWith(raw.error().withContext(s->id));
        rawBefore.push_back(*raw);
        if (journaled.insert(s->path).second) {
            j.originals.push_back({s->id, s->path, s->kind, *raw});
            originalsAdded = true;
        }
    }
    // Originals of knobs that are gone, or back at their original already, can go now: a crash
    // from here on loses nothing by their absence.
    const bool forgot = !settled.empty();
    std::erase_if(j.originals, [&](const Original& o) { return settled.count(o.path) > 0; });
    // The one fsync'd save, before the first write, when the journal learnt something: an
    // original, a forgotten one, or what verify is to check. A write to a knob whose original is
    // on disk already (drift put right, a device reset) needs none: a crash leaves the journal as
    // it was, which is right.
    const bool durableFirst = !before || originalsAdded || appliedChanged || forgot;
    if (durableFirst)
        if (auto r = saveDurable("applying"); !r) return failWith(r.error());

    // The writes, a device's together: its directory is opened once and its knobs written relative
    // to it (a walk from the root through the /sys/class/net symlink per write cost more than all
    // the snapshot's reads). On a host with hundreds of devices they are spread over a few threads:
    // each write is one file's, and the kernel's work behind it (an RPS flow table allocated and
    // cleared) is per queue. XDP steering is installed from this thread alone. The first write that
    // fails stops the others after their current one.
    // Indices into pending by device, in order of first appearance; "" (host-wide, XDP) too.
    std::vector<std::pair<std::string, std::vector<size_t>>> byDevice;
    {
        std::map<std::string, size_t> group;
        for (size_t i = 0; i < pending.size(); ++i) {
            const std::string dev = pending[i]->kind == ValueKind::kXdp ? "" : paths::deviceOf(pending[i]->path);
            auto [it, fresh] = group.emplace(dev, byDevice.size());
            if (fresh) byDevice.emplace_back(dev, std::vector<size_t>());
            byDevice[it->second].second.push_back(i);
        }
    }
    const bool xdp = std::any_of(pending.begin(), pending.end(), [](const Setting* s) { return s->kind == ValueKind::kXdp; });
    std::vector<char> done(pending.size(), 0);
    std::optional<std::pair<size_t, Error>> failed;
    std::atomic<bool> stop{false};
    std::mutex failMutex;
    auto netDir = fs.netDir();  // sys/class/net, opened once: each device is looked up from there
    forEachOn(xdp ? 1 : threadsFor(byDevice.size()), byDevice.size(), [&](size_t g) {
        const auto& [dev, items] = byDevice[g];
        // Where the directory cannot be opened (the device just vanished), each write goes by its
        // own path and fails there, naming it.
        std::unique_ptr<FileTree> dir;
        if (!dev.empty() && netDir)
            if (auto d = (*netDir)->subtree(dev)) dir = std::move(*d);
        const std::string prefix = paths::netDev(dev) + "/";
        const Knobs local = dir ? Knobs(*dir, nullptr) : fs;
        for (size_t i : items) {
            if (stop.load(std::memory_order_relaxed)) return;
            const Setting& s = *pending[i];
            const bool relative = dir && s.path.starts_with(prefix);
            const std::string path = relative ? s.path.substr(prefix.size()) : s.path;
            if (auto r = writeChecked(relative ? local : fs, s.id, path, s.kind, s.desired, plan.rpsDropped); !r) {
                std::lock_guard lock(failMutex);
                if (!failed || i < failed->first) failed.emplace(i, r.error());
                stop = true;
                return;
            }
            done[i] = 1;
        }
    });
    if (!failed) {
        for (const Setting* s : pending) report.written.push_back(*s);
    } else {
        // All or nothing: put back what this apply changed, newest first.
        Error err = std::move(failed->second);
        for (size_t k = pending.size(); k-- > 0;) {
            if (!done[k]) continue;
            const Setting& d = *pending[k];
            if (auto u = writeChecked(fs, d.id, d.path, d.kind, rawBefore[k], plan.rpsDropped); !u)
                err.context.insert(err.context.begin(), "rollback also failed: " + u.error().message());
        }
        if (durableFirst) {
            if (before) {
                // The journal as it was, its state in the file itself (no mark names the new generation).
                Journal back = *before;
                back.generation = j.generation + 1;
                if (auto w = store.save(back); !w) return failWith(w.error());
            } else if (auto w = store.remove(); !w) {
                return failWith(w.error());
            }
        }
        return failWith(std::move(err));
    }
    if (!restores.empty()) {
        // The originals of knobs put back leave the journal only now that they are back: a second
        // durable save, for a profile that sets less than the one before (not for an event).
        std::set<std::string> restored;
        for (const auto& s : restores) restored.insert(s.path);
        std::erase_if(j.originals, [&](const Original& o) { return restored.count(o.path) > 0; });
        if (auto r = saveDurable("applied"); !r) return failWith(r.error());
        return report;
    }
    j.appliedAt = now;
    if (auto r = store.markApplied(j.generation, now); !r) return failWith(r.error());
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
