#include "apply/prepare.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/text.hpp"
#include "knobs/registry.hpp"
#include "inventory/softnet.hpp"
#include "inventory/stack_counters.hpp"

namespace rxtune {

Result<Prepared> preparePlan(const Profile& profile, const FileTree& fs, NetlinkSource& nl, const PlanRequest& req) {
    const auto& interfaces = req.interfaces;
    const auto* scope = req.scope;
    const auto* autoIn = req.autoIn;
    std::vector<std::string> only = interfaces;
    if (scope) {
        only.clear();
        for (const auto& n : *scope)
            if (interfaces.empty() || std::find(interfaces.begin(), interfaces.end(), n) != interfaces.end()) only.push_back(n);
    }
    // Names that are not there (yet) are left out by the snapshot itself: one query per name.
    const bool missingOk = req.skipMissing || scope;
    PlanOptions opts;
    opts.explicitInterfaces = !interfaces.empty();
    opts.explain = req.explain;
    opts.memory = req.memory;
    if (autoIn) {
        opts.autoTargets = autoIn->targets;
        opts.autoModes = autoIn->modes;
        opts.autoExplain = autoIn->explain;
    }
    Prepared out;
    if ((opts.explicitInterfaces || scope) && only.empty()) {
        // None of the named interfaces exists now: plan the host-wide settings only.
        auto topo = readTopology(fs);
        if (!topo) return failWith(topo.error().withContext("host"));
        out.snapshot.host = std::move(*topo);
    } else {
        auto snap = takeSnapshot(fs, nl, only, missingOk);
        if (!snap) return failWith(snap.error());
        out.snapshot = std::move(*snap);
    }
    if (opts.explicitInterfaces)
        for (const auto& n : out.snapshot.nics) opts.interfaces.push_back(n.name);
    // What the families need beyond the common snapshot (the sysctls a profile names, XDP steering
    // installed now, NAPI state).
    const SnapshotIo io{fs, nl, req.services};
    for (const KnobFamily* f : knobFamilies())
        if (auto r = f->readInto(profile, io, out.snapshot); !r) return failWith(r.error());
    if (auto ok = addCgroupCpus(profile, fs, out.snapshot.host, opts); !ok) return failWith(ok.error());
    auto p = plan(profile, out.snapshot, opts);
    if (!p) return failWith(p.error());
    out.plan = std::move(*p);
    return out;
}

Result<void> addCgroupCpus(const Profile& profile, const FileTree& fs, const Topology& host, PlanOptions& opts) {
    const auto& choice = profile.steering.cpus;
    if (choice.kind != CpuChoice::Kind::kCgroup) return {};
    auto cpus = cgroupCpus(fs, host, choice.cgroupPath);
    if (!cpus) return failWith(profileError(choice.where, "steering.cpus", cpus.error().message()));
    opts.cgroupCpus[choice.cgroupPath] = *cpus;
    // The quota is shown by plan --explain only: the daemon's auto step calls this every sample.
    if (!opts.explain) return {};
    auto quota = cgroupQuota(fs, host, choice.cgroupPath);
    if (!quota) return failWith(profileError(choice.where, "steering.cpus", quota.error().message()));
    opts.cgroupQuota[choice.cgroupPath] = *quota;
    return {};
}

Result<AutoRaw> readAutoRaw(const FileTree& fs, const HostSnapshot& snap) {
    AutoRaw raw;
    raw.at = SystemClock().monotonicSeconds();
    auto cpus = readProcStat(fs);
    if (!cpus) return failWith(cpus.error());
    raw.cpu = std::move(*cpus);
    auto softnet = readSoftnetStat(fs, snap.host.online.cpus());
    if (!softnet) return failWith(softnet.error());
    for (const auto& [cpu, row] : *softnet) {
        raw.softnetDrops += row.dropped;
        raw.squeezes[cpu] = row.timeSqueeze;
    }
    for (const auto& n : snap.nics) {
        raw.rxPackets[n.name] = n.stats.rxPackets;
        if (rxCountedAfterBacklog(n)) raw.rxAfterBacklog.insert(n.name);
    }
    auto stack = readStackCounters(fs);
    if (!stack) return failWith(stack.error());
    raw.stack = *stack;
    return raw;
}

Result<std::optional<StackCounters>> readStackCounters(const FileTree& fs) {
    // procfs's net/ is the reader's network namespace; snmp6 is absent where IPv6 is off. Without
    // snmp (a fixture tree) there is nothing to read and auto falls back to the device counters.
    if (!fs.exists("proc/net/snmp")) return std::optional<StackCounters>();
    auto snmp = fs.read("proc/net/snmp");
    auto netstat = fs.exists("proc/net/netstat") ? fs.read("proc/net/netstat") : Result<std::string>(std::string());
    auto snmp6 = fs.exists("proc/net/snmp6") ? fs.read("proc/net/snmp6") : Result<std::string>(std::string());
    for (const auto* r : {&snmp, &netstat, &snmp6})
        if (!*r) return failWith(r->error());
    auto c = stackCounters(*snmp, *snmp6, *netstat);
    if (!c) return failWith(c.error());
    return std::optional<StackCounters>(*c);
}

std::string keepAvailableCandidates(Profile& profile, NetlinkSource& nl, const FileTree& fs) {
    auto& c = profile.steering.autoThresholds.candidates;
    if (profile.steering.mode != SteeringMode::kAuto || std::find(c.begin(), c.end(), SteeringMode::kBusyPoll) == c.end()) return "";
    auto f = nl.napiFeatures();
    std::string kernel = "unknown";
    if (fs.exists("proc/sys/kernel/osrelease"))
        if (auto rel = fs.read("proc/sys/kernel/osrelease")) kernel = trimmed(*rel);
    auto here = availableCandidates(c, f ? &*f : nullptr, f ? "" : f.error().message(), kernel);
    c = std::move(here.modes);
    return here.note;
}

Result<AutoInputs> decideAutoOnce(const Profile& profile, const FileTree& fs, const HostSnapshot& snap, const std::vector<std::string>& interfaces,
                                  const AutoRaw& before, const AutoRaw& after) {
    AutoInputs in;
    PlanOptions opts;
    if (auto ok = addCgroupCpus(profile, fs, snap.host, opts); !ok) return failWith(ok.error());
    char span[64];
    std::snprintf(span, sizeof span, "%.1f s", after.at - before.at);
    for (const auto& name : interfaces) {
        auto nic = std::find_if(snap.nics.begin(), snap.nics.end(), [&](const Nic& n) { return n.name == name; });
        if (nic == snap.nics.end()) continue;
        const AutoSample sample = autoSample(before, after, name);
        auto scope = autoScope(profile, snap.host, *nic, opts, sample);
        if (!scope) return failWith(scope.error());
        const AutoThresholds& t = profile.steering.autoThresholds;
        auto c = AutoSteer(t).choose(sample, scope->rxCpu, scope->candidates, scope->siblings);
        in.targets[name] = c.targets;
        const SteeringMode first = t.candidates.empty() ? SteeringMode::kRps : t.candidates.front();
        in.modes[name] = first;
        auto& lines = in.explain[name];
        lines.push_back("mode auto, one look over " + std::string(span) + ": " + c.verdict);
        char margins[160];
        std::snprintf(margins, sizeof margins, "%.0f s each; keeps the one that delivers most if it beats no steering by %.0f%%",
                      t.windowSeconds, t.gainMargin * 100);
        // The daemon's own order (big/little hosts: each mode on the biggest cores first), onto the
        // CPUs this look chose, or where none qualifies now, every eligible one.
        const CpuSet onto = c.targets.empty() ? scope->candidates - CpuSet::of({scope->rxCpu}) : c.targets;
        // Predicted from this one look as the daemon predicts from its spell of samples (no trial has
        // corrected the model here: a one-shot command keeps nothing).
        LoadView look;
        look.add(sample);
        const auto order = plannedTrials(t.candidates.empty() ? std::vector<SteeringMode>{SteeringMode::kRps} : t.candidates, onto,
                                         scope->biggest, scope->rxCpu, look, {}, t, sample.at);
        lines.push_back("trials (steering.auto.candidates), in the daemon's order (by prediction): " + trialOrderText(order) + ", " +
                        margins + "; judged on what the stack delivered (TCP segments in, UDP datagrams read, forwarded), losses beside it");
        lines.push_back("this one-shot command cannot try them: it " +
                        std::string(c.targets.empty() ? "leaves steering off" : "applies the first, " + std::string(candidateName(first))) +
                        "; run the daemon to have them measured and the loser undone");
        lines.push_back("delivered now: " + rounded(sample.deliveredPps) + " packets/s (" + sample.source + " counters), lost " +
                        rounded(sample.lossPps) + "/s");
        lines.push_back("receive CPU " + std::to_string(scope->rxCpu) + " (" + scope->rxCpuSource + ")");
        for (const auto& [cpu, why] : c.why) lines.push_back("cpu " + std::to_string(cpu) + " " + why);
    }
    return in;
}

}  // namespace rxtune
