#include "planner/planner.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <tuple>
#include <bit>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "planner/auto_steer.hpp"

namespace rxtune {

namespace {

std::uint32_t roundUpPow2(std::uint32_t v) { return v <= 1 ? v : std::bit_ceil(v); }

const SysctlValue* findSysctl(const Topology& h, const std::string& key) {
    for (const auto& v : h.sysctls)
        if (v.key == key) return &v;
    return nullptr;
}

bool knownHostGlobal(const std::string& key) {
    for (const auto& s : managedSysctls())
        if (key == s.key) return s.hostGlobal;
    return false;
}

std::vector<std::int64_t> numbersOf(const std::string& v) {
    std::vector<std::int64_t> out;
    for (const auto& f : splitFields(v)) {
        std::int64_t n = 0;
        if (!parseSigned(f, n)) return {};
        out.push_back(n);
    }
    return out;
}

std::string joinNumbers(const std::vector<std::int64_t>& v) {
    std::string out;
    for (auto n : v) out += (out.empty() ? "" : " ") + std::to_string(n);
    return out;
}

}  // namespace

CpuSet irqCpus(const Nic& nic) {
    CpuSet out;
    bool anyRx = std::any_of(nic.irqs.begin(), nic.irqs.end(),
                             [](const Irq& i) { return i.role == "rx" || i.role == "rxtx"; });
    for (const auto& i : nic.irqs) {
        if (anyRx && i.role != "rx" && i.role != "rxtx") continue;
        out = out | (i.effective && !i.effective->empty() ? *i.effective : i.affinity);
    }
    return out;
}

bool matches(const Match& m, const Nic& nic) {
    if (nic.kind == "loopback") return false;
    if (nic.verdict == Verdict::kVirtual && !m.includeVirtual) return false;
    if (!m.interfaces.empty() &&
        std::none_of(m.interfaces.begin(), m.interfaces.end(),
                     [&](const std::string& g) { return fnmatch(g.c_str(), nic.name.c_str(), 0) == 0; }))
        return false;
    if (!m.drivers.empty() && std::find(m.drivers.begin(), m.drivers.end(), nic.driver.driver) == m.drivers.end())
        return false;
    if (m.verdict && nic.verdict != *m.verdict && nic.verdict != Verdict::kVirtual) return false;
    return true;
}

bool mayMatch(const Match& m, const std::string& name, const std::string& linkKind) {
    if (name == "lo") return false;
    if (!linkKind.empty() && !m.includeVirtual) return false;  // a kind: veth, tun, bridge, vlan ...: virtual
    if (!m.interfaces.empty() &&
        std::none_of(m.interfaces.begin(), m.interfaces.end(),
                     [&](const std::string& g) { return fnmatch(g.c_str(), name.c_str(), 0) == 0; }))
        return false;
    return true;
}

Result<CpuTargets> steeringTargets(const Profile& profile, const Topology& host, const Nic* nic,
                                   const PlanOptions& opts) {
    const auto& choice = profile.steering.cpus;
    CpuTargets t;
    switch (choice.kind) {
        case CpuChoice::Kind::kAll: t.cpus = host.online; break;
        case CpuChoice::Kind::kNumaLocal:
            if (nic && nic->numaNode >= 0 && host.numaNodes.count(static_cast<unsigned>(nic->numaNode))) {
                t.cpus = host.numaNodes.at(static_cast<unsigned>(nic->numaNode)) & host.online;
                t.notes.push_back("numa-local: node " + std::to_string(nic->numaNode) + " CPUs " + t.cpus.toList());
            } else {
                t.cpus = host.online;
                if (nic) t.notes.push_back("numa-local: device has no NUMA node, using all online CPUs");
            }
            break;
        case CpuChoice::Kind::kList: {
            CpuSet missing = choice.list - host.online;
            if (!missing.empty())
                return failWith(profileError(choice.where, "steering.cpus",
                                   "CPU " + missing.toList() + " does not exist or is offline (online: " +
                                       host.online.toList() + ")"));
            t.cpus = choice.list;
            break;
        }
        case CpuChoice::Kind::kCgroup: {
            auto it = opts.cgroupCpus.find(choice.cgroupPath);
            if (it == opts.cgroupCpus.end())
                return failWith(profileError(choice.where, "steering.cpus", "cgroup " + choice.cgroupPath + " does not exist"));
            t.cpus = it->second & host.online;
            t.notes.push_back("cgroup " + choice.cgroupPath + " runs on CPUs " + t.cpus.toList());
            if (auto q = opts.cgroupQuota.find(choice.cgroupPath); q != opts.cgroupQuota.end() && q->second.limited)
                t.notes.push_back("cgroup " + choice.cgroupPath + " CPU quota: " + describe(q->second, t.cpus.count()));
            break;
        }
    }
    if (profile.steering.excludeIsolated) {
        CpuSet iso = (host.isolated | host.nohzFull) & t.cpus;
        if (!iso.empty()) {
            t.cpus = t.cpus - iso;
            t.notes.push_back("left out isolated/nohz_full CPUs " + iso.toList());
        }
    }
    if (profile.steering.excludeIrqCpus && nic) {
        CpuSet irq = irqCpus(*nic);
        CpuSet withSiblings = irq;
        for (unsigned c : irq.cpus())
            if (auto s = host.smtSiblings.find(c); s != host.smtSiblings.end()) withSiblings = withSiblings | s->second;
        withSiblings = withSiblings & t.cpus;
        if (!withSiblings.empty()) {
            t.cpus = t.cpus - withSiblings;
            t.notes.push_back("left out IRQ CPUs and their SMT siblings " + withSiblings.toList());
        }
    }
    return t;
}

// Kernel bypass for a NIC whose one RX queue cannot be raised: rxtune-dp polls it on the CPU its
// RX IRQ uses now (where that work already runs) and fans flows out to the steering targets.
static Advice datapathAdvice(const Profile& profile, const Topology& host, const Nic& nic, const PlanOptions& opts) {
    std::optional<unsigned> rxCpu;
    if (CpuSet irq = irqCpus(nic); !irq.empty()) rxCpu = irq.cpus().front();
    std::string text = "one RX queue and the driver cannot raise it: the profile asks for kernel bypass. rxtune-dp "
                       "(package rxtune-datapath, see rxtune-dp(8)) polls the queue and fans flows out to a TAP with "
                       "one queue per worker";
    auto targets = steeringTargets(profile, host, &nic, opts);
    CpuSet workers = targets ? targets->cpus : CpuSet{};
    if (rxCpu && workers.count() > 1) workers.remove(*rxCpu);
    // Every packet's mbuf goes from the RX core to a worker and back: across last-level caches that
    // costs the RX core about twice the cycles per packet (docs/BENCHMARKS.md, rxtune-dp), so the
    // workers are the targets that share the RX CPU's last-level cache, where there are any.
    std::string llcNote;
    if (auto llc = rxCpu ? host.llc.find(*rxCpu) : host.llc.end(); llc != host.llc.end() && !workers.empty()) {
        const CpuSet near = workers & llc->second, far = workers - llc->second;
        if (!near.empty() && !far.empty()) {
            workers = near;
            llcNote = "; workers only on CPUs that share CPU " + std::to_string(*rxCpu) + "'s last-level cache (" +
                      llc->second.toList() + "): a worker on " + far.toList() +
                      " would cost the RX core a cross-cache transfer for every packet it hands over";
        } else if (near.empty()) {
            llcNote = "; no steering target shares CPU " + std::to_string(*rxCpu) + "'s last-level cache (" +
                      llc->second.toList() + "): every packet handed to a worker crosses caches";
        }
    }
    if (!workers.empty()) {
        text += "; e.g. rxtune-dp --nic net_af_xdp0,iface=" + nic.name;
        if (rxCpu) text += " --rx-cpu " + std::to_string(*rxCpu);
        text += " --worker-cpus " + workers.toList() + " --tap " + (nic.name.size() <= 13 ? nic.name + "dp" : std::string("rxdp0"));
    }
    return {nic.name, text + llcNote};
}

// plan --explain for the static modes: every online CPU, chosen or left out and by which rule.
static std::vector<std::string> explainTargets(const Profile& profile, const Topology& host, const Nic& nic,
                                               const CpuSet& chosen, const std::vector<std::string>& notes) {
    std::vector<std::string> out;
    const CpuSet irq = irqCpus(nic);
    CpuSet siblings;
    for (unsigned c : irq.cpus())
        if (auto it = host.smtSiblings.find(c); it != host.smtSiblings.end()) siblings = siblings | it->second;
    for (unsigned cpu : host.online.cpus()) {
        std::string why;
        if (chosen.contains(cpu)) why = "chosen";
        else if (profile.steering.excludeIsolated && (host.isolated.contains(cpu) || host.nohzFull.contains(cpu)))
            why = "left out: isolated/nohz_full (steering.exclude_isolated)";
        else if (profile.steering.excludeIrqCpus && irq.contains(cpu)) why = "left out: serves the RX IRQ (steering.exclude_irq_cpus)";
        else if (profile.steering.excludeIrqCpus && siblings.contains(cpu))
            why = "left out: SMT sibling of an RX IRQ CPU (steering.exclude_irq_cpus)";
        else why = "left out: not in steering.cpus (" + profile.steering.cpus.str() + ")";
        if (chosen.contains(cpu) && irq.contains(cpu)) why += " (serves the RX IRQ)";
        out.push_back(nic.name + ": cpu " + std::to_string(cpu) + " " + why);
    }
    for (const auto& n : notes) out.push_back(nic.name + ": " + n);
    return out;
}

namespace {

Nic canonical(const Nic& n) {
    Nic c = n;
    auto byIndex = [](const auto& a, const auto& b) { return a.index < b.index; };
    std::sort(c.rx.begin(), c.rx.end(), byIndex);
    std::sort(c.tx.begin(), c.tx.end(), byIndex);
    std::sort(c.irqs.begin(), c.irqs.end(), [](const Irq& a, const Irq& b) { return a.number < b.number; });
    return c;
}

}  // namespace

Result<Plan> plan(const Profile& profile, const HostSnapshot& snap, const PlanOptions& opts) {
    const Topology& host = snap.host;
    Plan p;
    p.profile = profile.name;
    p.rpsDropped = host.isolated | host.nohzFull;
    p.profileFiles = profile.files;

    // CPU lists and cgroups are checked even when no interface ends up steered: bad input is an error.
    auto hostTargets = steeringTargets(profile, host, nullptr, opts);
    if (!hostTargets) return failWith(hostTargets.error());

    // The plan does not depend on the order the snapshot lists things in: the chosen devices are
    // planned by ifindex, their queues and IRQs by number.
    std::vector<Nic> chosenNics;
    for (const auto& n : snap.nics) {
        const bool byList = opts.explicitInterfaces || !opts.interfaces.empty();
        bool chosen = byList ? std::find(opts.interfaces.begin(), opts.interfaces.end(), n.name) != opts.interfaces.end()
                             : matches(profile.match, n);
        if (chosen) chosenNics.push_back(canonical(n));
    }
    std::sort(chosenNics.begin(), chosenNics.end(),
              [](const Nic& a, const Nic& b) { return std::tie(a.ifindex, a.name) < std::tie(b.ifindex, b.name); });
    std::vector<const Nic*> nics;
    for (const auto& n : chosenNics) nics.push_back(&n);
    const bool autoMode = profile.steering.mode == SteeringMode::kAuto;
    // auto keeps the RFS table ready for whichever interface it turns RPS on for.
    const bool rpsAnywhere = profile.steering.mode == SteeringMode::kRps || autoMode;
    const std::uint32_t entries = roundUpPow2(profile.steering.flowEntries);

    // 1. sysctls: the profile's own, then what steering needs.
    std::map<std::string, std::pair<std::string, std::string>> sysctlDesired;  // key -> (value, why)
    for (const auto& [key, in] : profile.sysctls) {
        const SysctlValue* cur = findSysctl(host, key);
        if (!cur || !cur->present) {
            if (knownHostGlobal(key) && !host.initialNetns) {
                p.skipped.push_back({"sysctl " + key, "host-global sysctl, absent in this (non-initial) network namespace"});
                continue;
            }
            return failWith(profileError(in.where, "sysctl." + key, "no such sysctl on this host"));
        }
        if (!cur->writable) {
            p.skipped.push_back({"sysctl " + key, "read-only here (inside a non-initial network namespace the kernel "
                                                  "shows the host's value)"});
            continue;
        }
        auto now = numbersOf(cur->value);
        if (now.size() != in.values.size())
            return failWith(profileError(in.where, "sysctl." + key,
                               "the kernel holds " + std::to_string(now.size()) + " number(s) ('" + cur->value +
                                   "'), the profile gives " + std::to_string(in.values.size())));
        std::vector<std::int64_t> want = in.values;
        for (size_t i = 0; i < want.size(); ++i) {
            if (in.guard == Guard::kAtLeast) want[i] = std::max(want[i], now[i]);
            if (in.guard == Guard::kAtMost) want[i] = std::min(want[i], now[i]);
        }
        const char* guard = in.guard == Guard::kAtLeast ? " (only raised)" : in.guard == Guard::kAtMost ? " (only lowered)" : "";
        sysctlDesired[key] = {joinNumbers(want), "profile " + in.where.str() + guard};
    }
    if (rpsAnywhere && !nics.empty() && !profile.sysctls.count("net.core.rps_sock_flow_entries")) {
        const std::string key = "net.core.rps_sock_flow_entries";
        const SysctlValue* cur = findSysctl(host, key);
        if (cur && cur->present && cur->writable)
            sysctlDesired[key] = {std::to_string(entries), entries ? "RFS flow table (steering.rfs.flow_entries)" : "RFS off"};
        else
            p.skipped.push_back({"sysctl " + key, "host-global sysctl, absent in this (non-initial) network namespace"});
    }
    for (const auto& [key, dv] : sysctlDesired) {
        const SysctlValue* cur = findSysctl(host, key);
        ValueKind kind = numbersOf(cur->value).size() > 1 ? ValueKind::kNumbers : ValueKind::kInteger;
        p.settings.push_back({"sysctl " + key, paths::sysctl(key), kind, normalise(kind, cur->value), dv.first, dv.second, {}});
    }
    if (profile.steering.mode == SteeringMode::kRps && profile.steering.defaultMask && !nics.empty()) {
        const SysctlValue* cur = findSysctl(host, "net.core.rps_default_mask");
        if (cur && cur->present && cur->writable)
            p.settings.push_back({"sysctl net.core.rps_default_mask", paths::sysctl("net.core.rps_default_mask"),
                                  ValueKind::kCpuMask, normalise(ValueKind::kCpuMask, cur->value),
                                  hostTargets->cpus.toMask(), "devices created later start steered", {}});
        else
            p.skipped.push_back({"sysctl net.core.rps_default_mask", "not available on this kernel (added in 6.3)"});
    }

    // 2. per-interface steering.
    for (const Nic* nic : nics) {
        p.interfaces.push_back(nic->name);
        if (profile.recommendDatapath && nic->verdict == Verdict::kSingleQueue) p.advice.push_back(datapathAdvice(profile, host, *nic, opts));
        if (profile.steering.mode == SteeringMode::kNone) continue;
        auto targets = steeringTargets(profile, host, nic, opts);
        if (!targets) return failWith(targets.error());
        bool rps = profile.steering.mode == SteeringMode::kRps;
        if (autoMode) {
            auto ex = opts.autoExplain.find(nic->name);
            if (opts.explain && ex != opts.autoExplain.end())
                for (const auto& line : ex->second) p.explanation.push_back(nic->name + ": " + line);
            if (opts.explain)
                for (const auto& n : targets->notes) p.explanation.push_back(nic->name + ": " + n);
            auto it = opts.autoTargets.find(nic->name);
            if (it == opts.autoTargets.end() || it->second.empty()) {
                p.skipped.push_back({nic->name + " steering", "mode auto: off (the measurement does not call for it)"});
                continue;
            }
            targets->cpus = it->second & targets->cpus;
            auto how = opts.autoModes.find(nic->name);
            rps = how == opts.autoModes.end() || how->second != SteeringMode::kXdp;
            targets->notes = {"mode auto: measured saturation"};
        } else if (opts.explain) {
            auto lines = explainTargets(profile, host, *nic, targets->cpus, targets->notes);
            p.explanation.insert(p.explanation.end(), lines.begin(), lines.end());
        }
        if (targets->cpus.empty()) {
            p.skipped.push_back({nic->name + " steering", "no CPU left after exclusions"});
            continue;
        }
        std::string why = (rps ? "RPS to CPUs " : "XDP cpumap steering to CPUs ") + targets->cpus.toList();
        for (const auto& n : targets->notes) why += "; " + n;
        if (!rps) {
            // XDP steers before the stack; RPS on the same queues would steer twice.
            // The traps rxtune cannot see from here are said in the plan, never left silent.
            if (profile.steering.xdpNative && nic->kind == "veth")
                why += "; native XDP on veth: the peer needs TX checksum offload off (ethtool -K <peer> tx off) or TCP breaks";
            if (profile.steering.xdpNative && nic->kind == "tap")
                why += "; native XDP on tap: the writer must use non-blocking writes";
            std::string spec = "cpus=" + targets->cpus.toList() + " mode=" + (profile.steering.xdpNative ? "native" : "generic") +
                               " qsize=" + std::to_string(profile.steering.xdpQsize);
            p.settings.push_back({nic->name + " xdp steering", paths::xdpSteering(nic->name), ValueKind::kXdp,
                                  nic->xdpSteering, spec, why, {}});
            for (const auto& q : nic->rx)
                p.settings.push_back({nic->name + " rx-" + std::to_string(q.index) + " rps_cpus",
                                      paths::queueFile(nic->name, paths::QueueDir::kRx, q.index, "rps_cpus"),
                                      ValueKind::kCpuMask, q.rpsCpus.toMask(), "0", "XDP steering replaces RPS", q.rpsCpusRaw});
        }
        const std::uint32_t nrx = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(nic->rx.size()));
        const std::uint32_t perQueue = entries ? roundUpPow2((entries + nrx - 1) / nrx) : 0;
        for (const auto& q : rps ? nic->rx : std::vector<RxQueue>{}) {
            const std::string qn = nic->name + " rx-" + std::to_string(q.index);
            p.settings.push_back({qn + " rps_cpus", paths::queueFile(nic->name, paths::QueueDir::kRx, q.index, "rps_cpus"),
                                  ValueKind::kCpuMask, q.rpsCpus.toMask(), targets->cpus.toMask(), why, q.rpsCpusRaw});
            p.settings.push_back({qn + " rps_flow_cnt",
                                  paths::queueFile(nic->name, paths::QueueDir::kRx, q.index, "rps_flow_cnt"),
                                  ValueKind::kInteger, std::to_string(q.rpsFlowCnt), std::to_string(perQueue),
                                  "RFS: " + std::to_string(entries) + " entries over " + std::to_string(nrx) + " RX queue(s)",
                                  q.rpsFlowCntRaw});
        }
        if (!profile.steering.xps) continue;
        if (nic->tx.size() <= 1) {
            p.skipped.push_back({nic->name + " xps", "one TX queue: XPS has nothing to choose"});
            continue;
        }
        auto cpus = targets->cpus.cpus();
        for (const auto& q : nic->tx) {
            const std::string id = nic->name + " tx-" + std::to_string(q.index) + " xps_cpus";
            if (!q.xpsCpus) {
                p.skipped.push_back({id, "the kernel does not show xps_cpus (" + q.xpsError + ")"});
                continue;
            }
            CpuSet mine;
            for (size_t i = 0; i < cpus.size(); ++i)
                if (i % nic->tx.size() == q.index % nic->tx.size()) mine.add(cpus[i]);
            p.settings.push_back({id, paths::queueFile(nic->name, paths::QueueDir::kTx, q.index, "xps_cpus"),
                                  ValueKind::kCpuMask, q.xpsCpus->toMask(), mine.toMask(),
                                  "XPS: CPUs round-robin over " + std::to_string(nic->tx.size()) + " TX queues", q.xpsRaw});
        }
    }

    // 3. CPU governor: the first of the profile's list that the host offers.
    if (!profile.governors.empty()) {
        if (!host.cpufreq) {
            p.skipped.push_back({"cpu governor", "cpufreq is absent on this host: nothing to set"});
        } else {
            std::string chosen;
            for (const auto& g : profile.governors)
                if (std::find(host.availableGovernors.begin(), host.availableGovernors.end(), g) != host.availableGovernors.end()) {
                    chosen = g;
                    break;
                }
            if (chosen.empty()) {
                p.skipped.push_back({"cpu governor", "none of the profile's governors is available (available: " +
                                                         joinFields([&] {
                                                             std::string s;
                                                             for (const auto& a : host.availableGovernors) s += a + " ";
                                                             return s;
                                                         }()) + ")"});
            } else {
                for (const auto& [cpu, gov] : host.governors)
                    p.settings.push_back({"cpu" + std::to_string(cpu) + " governor",
                                          paths::cpuDir(cpu) + "/cpufreq/scaling_governor", ValueKind::kWord, gov,
                                          chosen, "profile " + profile.governorsWhere.str(), {}});
            }
        }
    }
    return p;
}

Result<AutoScope> autoScope(const Profile& profile, const Topology& host, const Nic& nic, const PlanOptions& opts,
                            const AutoSample& sample) {
    Profile p = profile;
    p.steering.excludeIrqCpus = false;  // auto leaves the receive CPU out itself, where there are enough others
    auto t = steeringTargets(p, host, &nic, opts);
    if (!t) return failWith(t.error());
    AutoScope a;
    a.candidates = t->cpus;
    if (CpuSet irq = irqCpus(nic); !irq.empty()) {
        a.rxCpu = irq.cpus().front();
        a.rxCpuSource = "RX IRQ";
    } else {
        a.rxCpu = busiestRxCpu(sample);
        a.rxCpuSource = "busiest NET_RX CPU";
    }
    auto sib = host.smtSiblings.find(a.rxCpu);
    a.siblings = sib != host.smtSiblings.end() ? sib->second : CpuSet::of({a.rxCpu});
    return a;
}

}  // namespace rxtune
