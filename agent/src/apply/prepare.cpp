#include "apply/prepare.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "inventory/softnet.hpp"

namespace rxtune {

Result<Prepared> preparePlan(const Profile& profile, const FileTree& fs, NetlinkSource& nl,
                             const std::vector<std::string>& interfaces, bool skipMissing, const XdpSteering* xdp,
                             const AutoInputs* autoIn, bool explain) {
    std::vector<std::string> only = interfaces;
    if (skipMissing && !interfaces.empty()) {
        auto links = nl.links();
        if (!links) return failWith(links.error());
        std::erase_if(only, [&](const std::string& n) {
            return std::none_of(links->begin(), links->end(), [&](const LinkInfo& l) { return l.name == n; });
        });
    }
    PlanOptions opts;
    opts.interfaces = only;
    opts.explicitInterfaces = !interfaces.empty();
    opts.explain = explain;
    if (autoIn) {
        opts.autoTargets = autoIn->targets;
        opts.autoExplain = autoIn->explain;
    }
    Prepared out;
    if (opts.explicitInterfaces && only.empty()) {
        // None of the named interfaces exists now: plan the host-wide settings only.
        auto topo = readTopology(fs);
        if (!topo) return failWith(topo.error().withContext("host"));
        out.snapshot.host = std::move(*topo);
    } else {
        auto snap = takeSnapshot(fs, nl, only);
        if (!snap) return failWith(snap.error());
        out.snapshot = std::move(*snap);
    }
    if (profile.steering.mode == SteeringMode::kXdp) {
        if (!xdp) return fail(ENOTSUP, "steering.mode", "xdp", "XDP steering is not available here");
        for (auto& n : out.snapshot.nics) {
            auto cur = xdp->current(n.name);
            if (!cur) return failWith(cur.error().withContext("interface " + n.name));
            n.xdpSteering = *cur;
        }
    }
    std::vector<std::string> keys;
    for (const auto& [k, v] : profile.sysctls) keys.push_back(k);
    if (auto r = addSysctls(fs, out.snapshot.host, keys); !r) return failWith(r.error());
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
    return {};
}

Result<AutoRaw> readAutoRaw(const FileTree& fs, const HostSnapshot& snap, const std::map<unsigned, SoftnetRow>* softnet) {
    AutoRaw raw;
    raw.at = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    auto stat = fs.read("proc/stat");
    if (!stat) return failWith(stat.error());
    auto cpus = parseProcStat(*stat);
    if (!cpus) return failWith(cpus.error());
    raw.cpu = std::move(*cpus);
    std::map<unsigned, SoftnetRow> read;
    if (!softnet) {
        auto text = fs.read("proc/net/softnet_stat");
        if (!text) return failWith(text.error());
        auto rows = parseSoftnetStat(*text, snap.host.online.cpus());
        if (!rows) return failWith(rows.error());
        read = std::move(*rows);
        softnet = &read;
    }
    for (const auto& [cpu, row] : *softnet) {
        raw.softnetDrops += row.dropped;
        raw.squeezes[cpu] = row.timeSqueeze;
    }
    for (const auto& n : snap.nics) raw.rxPackets[n.name] = n.stats.rxPackets;
    return raw;
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
        auto c = AutoSteer(profile.steering.autoThresholds).choose(sample, scope->rxCpu, scope->candidates, scope->siblings);
        in.targets[name] = c.targets;
        auto& lines = in.explain[name];
        lines.push_back("mode auto, one look over " + std::string(span) + " (the daemon also measures the effect and undoes a change that made things worse): " + c.verdict);
        lines.push_back("receive CPU " + std::to_string(scope->rxCpu) + " (" + scope->rxCpuSource + ")");
        for (const auto& [cpu, why] : c.why) lines.push_back("cpu " + std::to_string(cpu) + " " + why);
    }
    return in;
}

}  // namespace rxtune
