#include "cli/tune_commands.hpp"

#include <ctime>
#include <chrono>
#include <iomanip>
#include <thread>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <systemd/sd-daemon.h>

#include "apply/apply.hpp"
#include "apply/lifecycle.hpp"
#include "cli/backends.hpp"
#include "knobs/registry.hpp"
#include "core/paths.hpp"
#include "core/text.hpp"
#include "apply/prepare.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

namespace {

using json = nlohmann::ordered_json;

int report(const Error& e) {
    std::cerr << "rxtune: " << e.message() << "\n";
    return 1;
}


// The lifecycle of a command's run (apply/lifecycle.hpp), with this host's processes and clock:
// the families' hooks (the IRQ family tells irqbalance, and waits for it before the writes);
// what they say goes to stderr.
struct CommandLifecycle {
    CommandLifecycle(const std::string& runDir, const JournalStore& store, const FileTree& fs)
        : life(fs, store, runDir, signals, clock, [](const char* level, const std::string& line) {
              std::cerr << "rxtune: " << (std::string(level) == SD_WARNING ? "warning: " : "") << line << std::endl;
          }, false) {}
    SystemProcessSignals signals;
    SystemClock clock;
    Lifecycle life;
};

// Profile + snapshot + planner. Everything is validated before anything can be written. The
// profile loaded goes to `loaded` where one is given.
Result<Plan> makePlan(const TuneOptions& o, FileTree& fs, Lifecycle& life, Profile* loaded = nullptr) {
    for (const auto& name : o.interfaces)
        if (auto ok = validateIfName(name); !ok) return failWith(ok.error());
    auto profile = loadProfile(o.profile, profileSearchPath());
    if (!profile) return failWith(profile.error());
    auto nl = Netlink::open();
    if (!nl) return failWith(nl.error());
    if (auto note = keepAvailableCandidates(*profile, **nl, fs); !note.empty()) std::cerr << "rxtune: note: mode auto: " << note << "\n";
    XdpSteering xdp(o.bpfDir);
    PlanRequest req;
    req.interfaces = o.interfaces;
    req.services.with<XdpSteering>(&xdp);
    req.explain = o.explain;
    auto prepared = life.plan(*profile, **nl, req, true);
    if (!prepared) return failWith(prepared.error());
    if (profile->steering.mode == SteeringMode::kAuto && !prepared->plan.interfaces.empty()) {
        // One look: two readings o.sampleMs apart decide whether to steer, and where.
        const auto ifaces = prepared->plan.interfaces;
        auto before = readAutoRaw(fs, prepared->snapshot);
        if (!before) return failWith(before.error().withContext("mode auto"));
        std::this_thread::sleep_for(std::chrono::milliseconds(o.sampleMs));
        auto snap = takeSnapshot(fs, **nl, ifaces);
        if (!snap) return failWith(snap.error());
        auto after = readAutoRaw(fs, *snap);
        if (!after) return failWith(after.error().withContext("mode auto"));
        auto in = decideAutoOnce(*profile, fs, *snap, ifaces, *before, *after);
        if (!in) return failWith(in.error());
        req.autoIn = &*in;
        prepared = life.plan(*profile, **nl, req, true);
        if (!prepared) return failWith(prepared.error());
    }
    if (loaded) *loaded = *profile;
    return std::move(prepared->plan);
}

void warnInterrupted(const JournalStore& store) {
    auto j = store.load();
    if (j && *j && (*j)->state == "applying")
        std::cerr << "rxtune: note: an apply (pid " << (*j)->pid
                  << ") was interrupted; the originals it recorded are kept in " << store.path() << "\n";
}

void printPlan(const Plan& p, std::ostream& out, bool explain) {
    out << "profile " << p.profile;
    if (!p.profileFiles.empty()) out << " (" << p.profileFiles.back() << ")";
    out << "\ninterfaces: " << (p.interfaces.empty() ? "(none matched)" : "");
    for (size_t i = 0; i < p.interfaces.size(); ++i) out << (i ? ", " : "") << p.interfaces[i];
    out << "\n";
    for (const auto& s : p.settings) {
        if (s.pending())
            out << "  change  " << std::left << std::setw(40) << s.id << " " << s.current << " -> " << s.desired
                << "   # " << s.why << "\n";
        else
            out << "  ok      " << std::left << std::setw(40) << s.id << " " << s.desired << "\n";
    }
    for (const auto& s : p.skipped) out << "  skip    " << std::left << std::setw(40) << s.id << " " << s.reason << "\n";
    for (const auto& a : p.advice) out << "  advice  " << std::left << std::setw(40) << a.interface << " " << a.text << "\n";
    if (explain)
        for (const auto& line : p.explanation) out << "  why     " << line << "\n";
    const size_t n = p.pendingCount();
    if (n == 0) out << "nothing to do: the host matches the profile\n";
    else out << n << " change" << (n == 1 ? "" : "s") << " pending\n";
}

}  // namespace

nlohmann::ordered_json planJson(const Plan& p) {
    json j;
    j["profile"] = p.profile;
    j["profile_files"] = p.profileFiles;
    j["interfaces"] = p.interfaces;
    j["pending"] = p.pendingCount();
    json settings = json::array();
    for (const auto& s : p.settings)
        settings.push_back({{"id", s.id},
                            {"path", "/" + s.path},
                            {"current", s.current},
                            {"desired", s.desired},
                            {"pending", s.pending()},
                            {"why", s.why}});
    j["settings"] = std::move(settings);
    json skipped = json::array();
    for (const auto& s : p.skipped) skipped.push_back({{"id", s.id}, {"reason", s.reason}});
    j["skipped"] = std::move(skipped);
    json advice = json::array();
    for (const auto& a : p.advice) advice.push_back({{"interface", a.interface}, {"advice", a.text}});
    j["advice"] = std::move(advice);
    j["explanation"] = p.explanation;
    return j;
}


namespace {

json pendingJson(const std::vector<PendingEffect>& pending) {
    json out = json::array();
    for (const auto& p : pending) out.push_back({{"id", p.id}, {"desired", p.desired}, {"what", p.what}});
    return out;
}

}  // namespace

int runPlan(const TuneOptions& o) {
    FileTree fs("/");
    const JournalStore store(o.stateDir);
    warnInterrupted(store);
    CommandLifecycle run(o.runDir, store, fs);
    auto p = makePlan(o, fs, run.life);
    if (!p) return report(p.error());
    std::ostringstream os;
    if (o.json) os << planJson(*p).dump(2) << "\n";
    else printPlan(*p, os, o.explain);
    std::cout << os.str() << std::flush;
    return p->pendingCount() ? 2 : 0;
}

namespace {

json movedJson(const std::vector<MovedSetting>& moved, const char* when) {
    json out = json::array();
    for (const auto& m : moved) out.push_back({{"id", m.setting.id}, {"was", m.was}, {"found", m.found}, {"by", m.by}, {"when", when}});
    return out;
}

}  // namespace

int runApply(const TuneOptions& o) {
    FileTree fs("/");
    auto lock = StateLock::acquire(o.runDir);
    if (!lock) return report(lock.error());
    JournalStore store(o.stateDir);
    warnInterrupted(store);
    Profile profile;
    CommandLifecycle run(o.runDir, store, fs);
    auto p = makePlan(o, fs, run.life, &profile);
    if (!p) return report(p.error());
    KnobBackends backends(fs, o.bpfDir);
    const Knobs knobs = backends.knobs(fs);
    auto done = run.life.apply(*p, knobs, profile, isoUtc(std::time(nullptr)));
    if (!done) return report(done.error());
    const ApplyReport* r = &done->report;
    if (o.json) {
        json j = planJson(*p);
        j["written"] = r->written.size();
        j["pending_effect"] = pendingJson(r->pending);
        json moved = movedJson(done->movedBefore, "before_writes");
        for (auto& m : movedJson(done->movedAfter, "after_writes")) moved.push_back(std::move(m));
        j["moved"] = std::move(moved);
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    for (const auto& s : r->written) std::cout << "  set  " << std::left << std::setw(40) << s.id << " " << s.current << " -> " << s.desired << "\n";
    for (const auto* moved : {&done->movedBefore, &done->movedAfter})
        for (const auto& m : *moved)
            std::cout << "  moved " << std::left << std::setw(39) << m.setting.id << " " << m.was << " -> " << m.found << " by " << m.by
                      << (moved == &done->movedBefore ? ": set again" : ", after the write: put back") << "\n";
    for (const auto& s : p->skipped) std::cout << "  skip " << std::left << std::setw(40) << s.id << " " << s.reason << "\n";
    for (const auto& s : r->refused) std::cout << "  skip " << std::left << std::setw(40) << s.id << " " << s.reason << "\n";
    for (const auto& p : r->pending) std::cout << "  pending " << std::left << std::setw(37) << p.id << " " << p.what << "\n";
    const std::string putBack = done->movedAfter.empty() ? "" : ", " + std::to_string(done->movedAfter.size()) + " put back after a move";
    if (r->written.empty() && putBack.empty()) std::cout << "nothing to do: the host already matches profile " << p->profile << "\n";
    else std::cout << "applied profile " << p->profile << ": " << r->written.size() << " setting(s) changed" << putBack << "\n";
    return 0;
}

int runVerify(const TuneOptions& o) {
    FileTree fs("/");
    JournalStore store(o.stateDir);
    KnobBackends backends(fs, o.bpfDir);
    const Knobs knobs = backends.knobs(fs);
    CommandLifecycle run(o.runDir, store, fs);
    auto v = run.life.verify(knobs);
    if (!v) return report(v.error());
    if (!v->journal) return report(Error{ENOENT, "verify", store.path(), "nothing applied: no journal", {}});
    const auto& j = v->journal;
    const auto* drift = &v->drift;
    // In place but not in effect yet (an IRQ until its next interrupt): said, not drift (writing
    // it again would change nothing).
    const auto& pending = v->pending;
    if (o.json) {
        json out;
        out["profile"] = j->profile;
        out["in_sync"] = drift->empty();
        json d = json::array();
        for (const auto& x : *drift)
            d.push_back({{"id", x.id}, {"path", "/" + x.path}, {"desired", x.desired}, {"actual", x.actual}, {"missing", x.missing}});
        out["drift"] = std::move(d);
        out["pending"] = pendingJson(pending);
        std::cout << out.dump(2) << "\n";
    } else {
        for (const auto& x : *drift)
            std::cout << "  drift " << std::left << std::setw(40) << x.id << " "
                      << (x.missing ? std::string("(gone)") : x.actual) << " != " << x.desired << "   " << x.where << "\n";
        for (const auto& x : pending) std::cout << "  pending " << std::left << std::setw(38) << x.id << " " << x.what << "\n";
        if (drift->empty())
            std::cout << "in sync: " << j->applied.size() << " setting(s) of profile " << j->profile
                      << (pending.empty() ? "" : ", " + std::to_string(pending.size()) + " of them in effect at the next interrupt") << "\n";
        else
            std::cout << drift->size() << " setting(s) drifted from profile " << j->profile << "\n";
    }
    return drift->empty() ? 0 : 3;
}

int runRevert(const TuneOptions& o) {
    FileTree fs("/");
    auto lock = StateLock::acquire(o.runDir);
    if (!lock) return report(lock.error());
    JournalStore store(o.stateDir);
    auto had = store.load();
    if (!had) return report(had.error());
    if (!*had) {
        std::cout << "nothing to revert: no journal in " << o.stateDir << "\n";
        return 0;
    }
    KnobBackends backends(fs, o.bpfDir);
    const Knobs knobs = backends.knobs(fs);
    CommandLifecycle run(o.runDir, store, fs);
    auto r = run.life.revert(knobs);
    if (!r) return report(r.error());
    for (const auto& x : r->restored) std::cout << "  restored " << std::left << std::setw(40) << x.id << " " << trimmed(x.value) << "\n";
    for (const auto& x : r->gone) std::cout << "  gone     " << std::left << std::setw(40) << x.id << " (no longer exists)\n";
    std::cout << "reverted: " << r->restored.size() << " setting(s) restored, journal cleared\n";
    return 0;
}

}  // namespace rxtune
