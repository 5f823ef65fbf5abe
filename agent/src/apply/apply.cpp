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
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

Result<void> writeChecked(const Knobs& fs, const KnobKey& key, const std::string& id, const std::string& path, ValueKind kind,
                          const std::string& value, const Plan* plan = nullptr) {
    if (auto w = fs.write(key, path, value); !w) return failWith(w.error().withContext(id));
    if (familyOf(key).writeIsExact(key, kind, value, plan)) return {};
    auto back = fs.read(key, path);
    if (!back) return failWith(back.error().withContext(id));
    if (!sameValue(kind, *back, value))
        return failWith(Error{EIO, "read back", fs.full(key, path),
                              "wrote '" + value + "', kernel shows '" + normalise(kind, *back) + "'", {}}
                            .withContext(id));
    return {};
}

}  // namespace

Result<std::string> Knobs::read(const KnobKey& key, const std::string& path) const { return familyOf(key).read(io_, key, path); }

Result<void> Knobs::write(const KnobKey& key, const std::string& path, const std::string& value) const {
    return familyOf(key).write(io_, key, path, value);
}

bool Knobs::exists(const KnobKey& key, const std::string& path) const { return familyOf(key).exists(io_, key, path); }

bool Knobs::writable(const KnobKey& key, const std::string& path) const { return familyOf(key).writable(io_, key, path); }

std::string Knobs::full(const KnobKey& key, const std::string& path) const { return familyOf(key).where(io_, key, path); }

std::string Knobs::netns() const {
    auto link = io_.fs.readLink("proc/self/ns/net");
    return link ? *link : std::string();
}

namespace {

// A journal holds one network namespace's originals (its devices, its per-namespace sysctls):
// applied to or reverted in another, they would land on the wrong host. Refused, nothing changed.
Result<void> sameNetns(const Journal& j, const Knobs& fs, const JournalStore& store, const char* what) {
    const std::string here = fs.netns();
    if (j.netns.empty() || here.empty() || j.netns == here) return {};
    return fail(EXDEV, what, store.path(),
                "the journal was written in network namespace " + j.netns + ", and this is " + here +
                    ": its devices and per-namespace sysctls are that namespace's; run rxtune there (ip netns exec NAME rxtune " +
                    what + "); nothing changed");
}

}  // namespace

bool Knobs::fileBacked(const KnobKey& key) const { return familyOf(key).fileBacked(key); }

std::optional<KnobFamily::Pending> Knobs::pending(const KnobKey& key, const std::string& desired) const {
    return familyOf(key).pending(io_, key, desired);
}

Result<std::unique_ptr<FileTree>> Knobs::netDir() const { return io_.fs.subtree(paths::netClass()); }

namespace applysteps {

namespace {

// An event's apply (devices) answers for those devices' knobs only: the rest of the journal,
// other devices and host-wide settings, is the full reconcile's.
bool inScope(const KnobKey& key, const std::set<std::string>* devices) {
    return !devices || (!key.device.empty() && devices->count(key.device) > 0);
}

}  // namespace

Result<std::vector<Dropped>> readDropped(const Journal& j, const Plan& plan, const Knobs& fs, const std::set<std::string>* devices) {
    std::set<std::string> planned;
    for (const auto& s : plan.settings) planned.insert(s.path);
    std::vector<Dropped> out;
    for (const auto& o : j.originals) {
        if (planned.count(o.path) || !inScope(o.key, devices)) continue;
        Dropped d{o, false, std::nullopt};
        // A deleted device's knobs are gone for good; anything else that is absent (a host-global
        // sysctl seen from inside a network namespace) keeps its original for a later revert.
        if (!fs.exists(o.key, o.path)) {
            d.gone = !o.key.device.empty();
        } else if (auto cur = fs.read(o.key, o.path)) {
            if (fs.writable(o.key, o.path) || sameValue(o.kind, *cur, o.value)) d.current = *cur;
        } else {
            if (cur.error().code != ENOENT && cur.error().code != ENODEV) return failWith(cur.error().withContext(o.id));
            d.gone = !o.key.device.empty();
        }
        out.push_back(std::move(d));
    }
    return out;
}

Step nextJournal(const std::optional<Journal>& before, std::uint64_t freshGeneration, const Plan& plan,
                 const std::vector<Dropped>& dropped, const std::map<std::string, std::string>& raw,
                 const std::set<std::string>* devices, long pid) {
    Step st;
    Journal& j = st.journal;
    j = before.value_or(Journal{});
    // A fresh journal's generations start from the clock, so that no completion mark left from an
    // earlier journal can ever name one of them.
    if (!before) j.generation = freshGeneration;

    // Settings an earlier apply changed that this plan no longer mentions go back to their
    // originals (the host shows the new profile, not a mix); knobs that are gone are forgotten.
    std::set<std::string> settled;  // journaled paths whose knob is gone or at its original already
    for (const auto& d : dropped) {
        const Original& o = d.original;
        if (d.gone) {
            settled.insert(o.path);
            continue;
        }
        if (!d.current) continue;  // absent or read-only here: kept for revert
        if (sameValue(o.kind, *d.current, o.value)) {
            settled.insert(o.path);
            continue;
        }
        st.restores.push_back({o.id, o.path, o.kind, *d.current, o.value, "no longer in the profile: original restored", *d.current, o.key});
    }
    st.pending = st.restores;
    for (const auto& s : plan.settings)
        if (s.pending()) st.pending.push_back(s);
    for (const auto& s : st.pending) {
        if (!s.raw.empty()) {
            st.rawBefore.push_back(s.raw);
        } else {
            auto it = raw.find(s.path);
            st.rawBefore.push_back(it == raw.end() ? std::string() : it->second);
        }
    }

    // What verify checks: this plan's settings, and, for an event's apply, the others' as they were.
    std::set<std::string> planned;
    for (const auto& s : plan.settings) planned.insert(s.path);
    std::vector<Setting> applied;
    if (devices)
        for (const auto& s : j.applied)
            if (!inScope(s.key, devices) && !planned.count(s.path)) applied.push_back(s);
    applied.insert(applied.end(), plan.settings.begin(), plan.settings.end());
    auto sameApplied = [&](const std::vector<Setting>& a) {
        return a.size() == applied.size() && std::equal(a.begin(), a.end(), applied.begin(), [](const Setting& x, const Setting& y) {
                   return x.path == y.path && x.kind == y.kind && x.desired == y.desired;
               });
    };
    st.appliedChanged = !before || !sameApplied(before->applied) || before->profile != plan.profile;
    j.pid = pid;
    j.profile = plan.profile;
    j.applied = std::move(applied);

    std::set<std::string> journaled;
    for (const auto& o : j.originals) journaled.insert(o.path);
    if (before)
        for (const KnobFamily* f : knobFamilies())
            for (auto& o : f->inheritedOriginals(plan, *before, journaled)) {
                if (!journaled.insert(o.path).second) continue;
                j.originals.push_back(std::move(o));
                st.originalsAdded = true;
            }
    // Originals first: only knobs never journaled get an entry, so a value written by an earlier
    // (possibly interrupted) apply can never replace the true original. They are the very bytes
    // read, so that revert and rollback put back what they found.
    for (size_t i = 0; i < st.pending.size(); ++i) {
        const Setting& s = st.pending[i];
        if (!journaled.insert(s.path).second) continue;
        j.originals.push_back({s.id, s.path, s.kind, st.rawBefore[i], s.key});
        st.originalsAdded = true;
    }
    // Originals of knobs that are gone, or back at their original already, can go now: a crash
    // from here on loses nothing by their absence.
    st.forgot = !settled.empty();
    std::erase_if(j.originals, [&](const Original& o) { return settled.count(o.path) > 0; });
    return st;
}

Executed execute(const std::vector<Setting>& pending, const Knobs& fs, const Plan& plan) {
    // File-backed knobs, a device's together: its directory is opened once and its knobs written
    // relative to it (a walk from the root through the /sys/class/net symlink per write cost more
    // than all the snapshot's reads). On a host with hundreds of devices they are spread over a
    // few threads: each write is one file's, and the kernel's work behind it (an RPS flow table
    // allocated and cleared) is per queue. Indices into pending by device, in order of first
    // appearance; "" (host-wide) too. The rest come after, in plan order, from this thread: an
    // XDP program's install, a kthread's CPUs (after the `threaded` that starts it).
    std::vector<std::pair<std::string, std::vector<size_t>>> byDevice;
    std::vector<size_t> others;
    {
        std::map<std::string, size_t> group;
        for (size_t i = 0; i < pending.size(); ++i) {
            if (!fs.fileBacked(pending[i].key)) {
                others.push_back(i);
                continue;
            }
            auto [it, fresh] = group.emplace(pending[i].key.device, byDevice.size());
            if (fresh) byDevice.emplace_back(pending[i].key.device, std::vector<size_t>());
            byDevice[it->second].second.push_back(i);
        }
    }
    Executed ran;
    ran.done.assign(pending.size(), 0);
    std::atomic<bool> stop{false};
    std::mutex failMutex;
    auto fail = [&](size_t i, Error e) {
        std::lock_guard lock(failMutex);
        if (!ran.failed || i < ran.failed->first) ran.failed.emplace(i, std::move(e));
        stop = true;
    };
    auto netDir = fs.netDir();  // sys/class/net, opened once: each device is looked up from there
    forEachOn(threadsFor(byDevice.size()), byDevice.size(), [&](size_t g) {
        const auto& [dev, items] = byDevice[g];
        // Where the directory cannot be opened (the device just vanished), each write goes by its
        // own path and fails there, naming it.
        std::unique_ptr<FileTree> dir;
        if (!dev.empty() && netDir)
            if (auto d = (*netDir)->subtree(dev)) dir = std::move(*d);
        const std::string prefix = paths::netDev(dev) + "/";
        const std::optional<Knobs> local = dir ? std::optional<Knobs>(fs.within(*dir)) : std::nullopt;
        for (size_t i : items) {
            if (stop.load(std::memory_order_relaxed)) return;
            const Setting& s = pending[i];
            const bool relative = local && s.path.starts_with(prefix);
            const std::string path = relative ? s.path.substr(prefix.size()) : s.path;
            if (auto r = writeChecked(relative ? *local : fs, s.key, s.id, path, s.kind, s.desired, &plan); !r) {
                if (!familyOf(s.key).refusalIsKnobsOwn(s.key, r.error())) {
                    ran.done[i] = Executed::kTried;
                    return fail(i, r.error());
                }
                std::lock_guard lock(failMutex);
                ran.refused.emplace_back(i, r.error());
                continue;
            }
            ran.done[i] = Executed::kWritten;
        }
    });
    for (size_t i : others) {
        if (stop) break;
        const Setting& s = pending[i];
        if (auto r = writeChecked(fs, s.key, s.id, s.path, s.kind, s.desired, &plan); !r) {
            if (familyOf(s.key).refusalIsKnobsOwn(s.key, r.error())) {
                ran.refused.emplace_back(i, r.error());
                continue;
            }
            ran.done[i] = Executed::kTried;
            fail(i, r.error());
            break;
        }
        ran.done[i] = Executed::kWritten;
    }
    return ran;
}

bool rollback(const std::vector<Setting>& pending, const Executed& ran, const std::vector<std::string>& rawBefore,
              const Knobs& fs, const Plan& plan, Error& err) {
    bool all = true;
    for (size_t k = pending.size(); k-- > 0;) {
        if (!ran.done[k]) continue;
        const Setting& d = pending[k];
        if (ran.done[k] == Executed::kTried) {
            // It failed, but may have landed first (its read-back failed): put back what can be
            // seen to differ. A knob that cannot even be read now is left alone: its write was
            // refused outright (a ring size on a device without ring ops), and writing it blindly
            // would only fail again.
            auto cur = fs.read(d.key, d.path);
            if (!cur || sameValue(d.kind, *cur, rawBefore[k])) continue;
        }
        if (auto u = writeChecked(fs, d.key, d.id, d.path, d.kind, rawBefore[k], &plan); !u) {
            // A device deleted meanwhile took its knobs with it (as readDropped treats them):
            // nothing is left to put back, and no original needs keeping for it.
            if (!d.key.device.empty() && (u.error().code == ENOENT || u.error().code == ENODEV) && !fs.exists(d.key, d.path)) continue;
            err.context.insert(err.context.begin(), "rollback also failed: " + u.error().message());
            all = false;
        }
    }
    return all;
}

}  // namespace applysteps

namespace {

// The bytes of each pending setting that the snapshot did not keep, read now (by path).
Result<std::map<std::string, std::string>> readRaw(const Plan& plan, const Knobs& fs) {
    std::map<std::string, std::string> raw;
    for (const auto& s : plan.settings) {
        if (!s.pending() || !s.raw.empty()) continue;
        auto r = fs.read(s.key, s.path);
        if (!r) return failWith(r.error().withContext(s.id));
        raw[s.path] = *r;
    }
    return raw;
}

// A failed write: this apply's writes put back, newest first, and the journal as it was before
// (or none, where there was none). Returns the error to report.
Error undoFailed(applysteps::Step& st, applysteps::Executed& ran, const std::optional<Journal>& before, bool durableFirst,
                 const Knobs& fs, const Plan& plan, const JournalStore& store) {
    Error err = std::move(ran.failed->second);
    if (!applysteps::rollback(st.pending, ran, st.rawBefore, fs, plan, err)) {
        // Something may still differ from its original: the journal on disk (this apply's, saved
        // before the first write, or the one before, which had every original already) stays,
        // so that revert can put it back.
        return std::move(err).withContext("apply failed and could not undo all of its writes: the journal " + store.path() +
                                          " keeps their originals (rxtune revert puts them back)");
    }
    err = std::move(err).withContext("apply failed, this apply's writes were undone");
    if (!durableFirst) return err;
    if (before) {
        // The journal as it was, its state in the file itself (no mark names the new generation).
        Journal back = *before;
        back.generation = st.journal.generation + 1;
        if (auto w = store.save(back); !w) return w.error();
    } else if (auto w = store.remove(); !w) {
        return w.error();
    }
    return err;
}

// What the apply did: the settings written, those in effect later, the values new to the
// journal, and the writes the kernel refused for a reason of the knob's own.
ApplyReport reportOf(const applysteps::Step& st, applysteps::Executed& ran, const std::optional<Journal>& before, const Knobs& fs) {
    ApplyReport report;
    report.resumedInterrupted = before && before->state == "applying";
    for (size_t i = 0; i < st.pending.size(); ++i)
        if (ran.done[i] == applysteps::Executed::kWritten) report.written.push_back(st.pending[i]);
    for (const auto& w : report.written)
        if (auto p = fs.pending(w.key, w.desired)) report.pending.push_back({w.id, w.desired, std::move(p->what), p->against});
    std::map<KnobKey, const std::string*> kept;
    if (before)
        for (const auto& a : before->applied) kept[a.key] = &a.desired;
    for (const auto& w : report.written)
        if (auto k = kept.find(w.key); k == kept.end() || *k->second != w.desired) report.newValues.insert(w.id);
    std::sort(ran.refused.begin(), ran.refused.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [i, e] : ran.refused)
        report.refused.push_back({st.pending[i].id, "the kernel refuses it: " + e.message(), st.pending[i].key});
    return report;
}

// The journal once the writes are in: a refused knob is not rxtune's to set (a managed IRQ) and
// leaves what verify checks, so that it is not drift at every check; the originals of knobs put
// back (a profile that sets less than the one before) leave it now that they are back. True: it
// changed, and is saved again durably.
bool settleJournal(Journal& j, const applysteps::Step& st, const ApplyReport& report) {
    std::set<KnobKey> refused, restored;
    for (const auto& r : report.refused) refused.insert(r.key);
    for (const auto& s : st.restores) restored.insert(s.key);
    std::erase_if(j.applied, [&](const Setting& s) { return refused.count(s.key) > 0; });
    std::erase_if(j.originals, [&](const Original& o) { return restored.count(o.key) > 0; });
    return !refused.empty() || !restored.empty();
}

}  // namespace

Result<ApplyReport> applyPlan(const Plan& plan, const Knobs& fs, const JournalStore& store, const std::string& now,
                              const std::set<std::string>* devices, const Clock* clock) {
    using namespace applysteps;
    auto loaded = store.load();
    if (!loaded) return failWith(loaded.error());
    if (*loaded)
        if (auto r = recoverKeys(**loaded); !r) return failWith(r.error().withContext("apply"));
    if (*loaded)
        if (auto r = sameNetns(**loaded, fs, store, "apply"); !r) return failWith(r.error());
    const std::optional<Journal> before = *loaded;
    std::vector<Dropped> dropped;
    if (before) {
        auto d = readDropped(*before, plan, fs, devices);
        if (!d) return failWith(d.error());
        dropped = std::move(*d);
    }
    auto raw = readRaw(plan, fs);
    if (!raw) return failWith(raw.error());
    const SystemClock system;
    const std::uint64_t fresh = (clock ? *clock : static_cast<const Clock&>(system)).wallNanoseconds();
    Step st = nextJournal(before, fresh, plan, dropped, *raw, devices, static_cast<long>(::getpid()));
    Journal& j = st.journal;
    // A journal of an earlier release (no namespace kept) gets this one's from now on.
    if (j.netns.empty()) j.netns = fs.netns();
    auto saveDurable = [&](const char* state) -> Result<void> {
        j.state = state;
        j.appliedAt = now;
        ++j.generation;
        return store.save(j);
    };

    if (st.pending.empty()) {
        // Nothing to write: one save at most, of what the journal learnt.
        if (st.appliedChanged || st.originalsAdded || st.forgot || before->state != "applied")
            if (auto r = saveDurable("applied"); !r) return failWith(r.error());
        ApplyReport report;
        report.resumedInterrupted = before && before->state == "applying";
        return report;
    }
    // The one fsync'd save, before the first write, when the journal learnt something: an
    // original, a forgotten one, or what verify is to check. A write to a knob whose original is
    // on disk already (drift put right, a device reset) needs none: a crash leaves the journal as
    // it was, which is right.
    const bool durableFirst = !before || st.originalsAdded || st.appliedChanged || st.forgot;
    if (durableFirst)
        if (auto r = saveDurable("applying"); !r) return failWith(r.error());

    Executed ran = execute(st.pending, fs, plan);
    if (ran.failed) return failWith(undoFailed(st, ran, before, durableFirst, fs, plan, store));
    ApplyReport report = reportOf(st, ran, before, fs);
    if (settleJournal(j, st, report)) {
        if (auto r = saveDurable("applied"); !r) return failWith(r.error());
        return report;
    }
    j.appliedAt = now;
    if (auto r = store.markApplied(j.generation, now); !r) return failWith(r.error());
    return report;
}

std::vector<MovedSetting> rereadMoved(Plan& plan, const Knobs& knobs) {
    std::vector<MovedSetting> out;
    for (auto& s : plan.settings) {
        if (!familyOf(s.key).othersMove(s.key)) continue;
        auto now = knobs.read(s.key, s.path);
        if (!now || sameValue(s.kind, *now, s.current)) continue;  // unreadable: the apply says so
        MovedSetting m{s, s.current, normalise(s.kind, *now), {}};
        s.current = m.found;
        s.raw = *now;
        m.setting = s;
        out.push_back(std::move(m));
    }
    return out;
}

Result<std::vector<MovedSetting>> putBackMoved(const Plan& plan, const Knobs& knobs) {
    std::vector<MovedSetting> out;
    for (const auto& s : plan.settings) {
        if (!familyOf(s.key).othersMove(s.key)) continue;
        auto now = knobs.read(s.key, s.path);
        if (!now || sameValue(s.kind, *now, s.desired)) continue;
        if (auto w = writeChecked(knobs, s.key, s.id, s.path, s.kind, s.desired, &plan); !w) {
            // A knob the kernel refuses for a reason of its own was skipped by the apply too.
            if (familyOf(s.key).refusalIsKnobsOwn(s.key, w.error())) continue;
            return failWith(w.error());
        }
        out.push_back({s, s.desired, normalise(s.kind, *now), {}});
    }
    return out;
}

Result<std::vector<Drift>> verifyApplied(const Journal& loaded, const Knobs& fs) {
    std::vector<Drift> out;
    Journal journal = loaded;
    if (auto r = recoverKeys(journal); !r) return failWith(r.error().withContext("verify"));
    for (const auto& s : journal.applied) {
        auto cur = fs.read(s.key, s.path);
        if (!cur) {
            if (cur.error().code == ENOENT) {
                out.push_back({s.id, s.path, s.desired, "", fs.full(s.key, s.path), true});
                continue;
            }
            return failWith(cur.error().withContext(s.id));
        }
        if (!sameValue(s.kind, *cur, s.desired))
            out.push_back({s.id, s.path, s.desired, normalise(s.kind, *cur), fs.full(s.key, s.path), false});
    }
    return out;
}

std::vector<PendingEffect> pendingApplied(const Journal& loaded, const Knobs& fs) {
    Journal journal = loaded;
    std::vector<PendingEffect> out;
    if (!recoverKeys(journal)) return out;  // verify says why
    for (const auto& s : journal.applied)
        if (auto p = fs.pending(s.key, s.desired)) out.push_back({s.id, s.desired, std::move(p->what), p->against});
    return out;
}

Result<RevertReport> revertAll(const Knobs& fs, const JournalStore& store) {
    RevertReport report;
    auto loaded = store.load();
    if (!loaded) return failWith(loaded.error());
    if (!*loaded) return report;
    Journal& j = **loaded;
    if (auto r = recoverKeys(j); !r) return failWith(r.error().withContext("revert"));
    if (auto r = sameNetns(j, fs, store, "revert"); !r) return failWith(r.error());
    Error firstError;
    bool failed = false;
    for (auto it = j.originals.rbegin(); it != j.originals.rend(); ++it) {
        if (!fs.exists(it->key, it->path)) {
            report.gone.push_back(*it);
            continue;
        }
        auto cur = fs.read(it->key, it->path);
        if (cur && sameValue(it->kind, *cur, it->value)) {
            report.restored.push_back(*it);
            continue;
        }
        if (auto w = writeChecked(fs, it->key, it->id, it->path, it->kind, it->value); !w) {
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
