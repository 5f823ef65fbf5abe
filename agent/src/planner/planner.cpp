#include "planner/planner.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/busypoll_profile.hpp"
#include "knobs/registry.hpp"
#include "planner/auto_steer.hpp"

namespace rxtune {


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
        case CpuChoice::Kind::kBig: {
            const auto classes = cpuClasses(host);
            t.cpus = classes.front().cpus;
            if (classes.size() == 1) {
                t.notes.push_back("big: the CPUs are alike (the kernel gives no capacity or core type that tells them apart): all of them");
            } else {
                std::string left;
                for (size_t i = 1; i < classes.size(); ++i)
                    left += (left.empty() ? "" : ", ") + classes[i].cpus.toList() + " (" + describeCapacity(host, classes[i].cpus.cpus().front()) + ")";
                t.notes.push_back("big: CPUs " + t.cpus.toList() + " (" + describeCapacity(host, t.cpus.cpus().front()) + "); left out " + left);
            }
            break;
        }
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
        else if (profile.steering.cpus.kind == CpuChoice::Kind::kBig)
            why = "left out: a smaller core (" + describeCapacity(host, cpu) + "; steering.cpus big)";
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

// steering mode busypoll: the CPU each RX NAPI's kthread polls on, and where RPS fans out from
// there; false (with the reason in p.skipped) where the device is not busy-polled at all.
static Result<bool> busyPollers(const Profile& profile, const Topology& host, const PinnedBusyThreads* pinned, const Nic& nic,
                                DeviceSteering& d, Plan& p) {
    const std::string what = nic.name + " steering";
    const NapiState* st = napiOf(nic);
    // What the kernel's napi-set takes decides, not its version; the version is what the user can act on.
    if (!st || !st->features.busyPoll()) {
        const std::string kernel = st && !st->kernel.empty() ? st->kernel : "unknown";
        p.skipped.push_back({what, "mode busypoll: busy-poll needs Linux 6.19 (this kernel: " + kernel + ")"});
        return false;
    }
    std::vector<NapiRole> rx, tx;
    for (const auto& [role, n] : napiRoles(st->instances, st->queues.value_or(std::vector<NapiQueue>{}))) {
        if (role.kind == NapiRole::kRx) rx.push_back(role);
        if (role.kind == NapiRole::kTx) tx.push_back(role);
    }
    if (rx.empty()) {
        p.skipped.push_back({what, "mode busypoll: the kernel links no NAPI of " + nic.name +
                                       " to an RX queue (queue-get shows no napi-id" +
                                       (nic.kind == "veth" ? ": veth's queues have none" : "") + "): nothing to poll"});
        return false;
    }
    const BusyPollIntent& bp = profile.sectionOr(kBusyPoll);
    std::vector<unsigned> cpus;
    std::string hotNote;
    CpuSet hot;  // the CPUs of the applications' busy pinned threads among the targets
    if (bp.cpus) {
        for (unsigned cpu : bp.cpus->cpus()) {
            if (!host.online.contains(cpu))
                return failWith(profileError(bp.cpusWhere, "steering.busypoll.cpus",
                                             "CPU " + std::to_string(cpu) + " is not online (online: " + host.online.toList() + ")"));
            if (!host.cgroupCpus.empty() && !host.cgroupCpus.contains(cpu))
                return failWith(profileError(bp.cpusWhere, "steering.busypoll.cpus",
                                             "CPU " + std::to_string(cpu) + " is outside rxtune's cpuset (" + host.cgroupCpus.toList() +
                                                 ", " + host.cgroupCpusSource + "): the kthread could not be pinned there"));
        }
        cpus = bp.cpus->cpus();
    } else {
        // The biggest targets first, the highest-numbered of them first: CPU 0 and the low ones
        // are where the scheduler and the RX IRQ start, and a poll takes its CPU whole. Never the
        // CPU of an application's thread pinned there and keeping it busy (its hot thread).
        std::string hotWhy;
        if (pinned)
            for (const auto& t : *pinned) {
                if (!d.targets.contains(t.cpu)) continue;
                hot.add(t.cpu);
                hotWhy += (hotWhy.empty() ? "" : ", ") + std::string("CPU ") + std::to_string(t.cpu) + " (" + t.comm + ", tid " +
                          std::to_string(t.tid) + ", " + std::to_string(std::lround(t.share * 100)) + " % of it)";
            }
        const CpuSet unheld = d.targets - hot;
        const CpuSet big = biggestOf(host, unheld);
        for (const CpuSet& tier : {big, unheld - big}) {
            auto list = tier.cpus();
            cpus.insert(cpus.end(), list.rbegin(), list.rend());
        }
        if (!hot.empty()) hotNote = "; not the CPU(s) of the applications' busy pinned threads: " + hotWhy + " (steering.busypoll.cpus names one)";
    }
    if (cpus.size() < rx.size()) {
        p.skipped.push_back({what, "mode busypoll: " + nic.name + " has " + std::to_string(rx.size()) + " RX NAPIs and " +
                                       (bp.cpus ? "steering.busypoll.cpus names " : "the targets hold ") + std::to_string(cpus.size()) +
                                       " CPU(s): each poll takes a CPU of its own" + hotNote});
        return false;
    }
    d.notes += hotNote;
    CpuSet polled;
    for (size_t i = 0; i < rx.size(); ++i) {
        d.pollers.emplace_back(rx[i], cpus[i]);
        polled.add(cpus[i]);
    }
    if (bp.txThreaded) {
        // tx-N beside rx-N's poll: its completions free the buffers that poll's replies used.
        for (const NapiRole& t : tx) d.txThreads.emplace_back(t, cpus[std::min<size_t>(t.index, rx.size() - 1)]);
        const auto& queues = st->queues.value_or(std::vector<NapiQueue>{});
        const bool idless = std::any_of(queues.begin(), queues.end(), [](const NapiQueue& q) { return q.tx && !q.napiId; });
        if (idless && !st->threaded) {
            p.skipped.push_back({nic.name + " napi tx", "steering.busypoll.tx threaded: a TX queue of " + nic.name +
                                                            " names no NAPI with an id, and the kernel shows no " + nic.name + "/threaded"});
        } else if (idless && rx.size() > 1) {
            p.skipped.push_back({nic.name + " napi tx", "steering.busypoll.tx threaded: a TX queue of " + nic.name +
                                                            " names no NAPI with an id, which only the device's threaded file reaches; "
                                                            "its kthreads are pinned together, so only with one RX NAPI (it has " +
                                                            std::to_string(rx.size()) + ")"});
        } else if (idless) {
            d.txByDevice = true;
        } else if (tx.empty()) {
            p.skipped.push_back({nic.name + " napi tx", "steering.busypoll.tx threaded: " + nic.name +
                                                            " has no TX-only NAPI (its RX NAPIs serve its TX queues too)"});
        }
    }
    if (bp.rpsFanout) {
        // Not onto a busy pinned thread's CPU either: RPS work there competes with the application.
        d.fanout = d.targets - polled - hot;
        if (d.fanout.empty())
            p.skipped.push_back({nic.name + " rps", "steering.busypoll.fanout rps: no target CPU is left beside the poll CPU(s) " +
                                                        polled.toList()});
    }
    return true;
}

// How one chosen device is steered (mode, targets, the notes every family's reason carries);
// skips and plan --explain lines go into p.
// nic: the device as the families will leave it (its RX IRQ where the plan puts it); the
// returned steering names `original`, the device as it is.
static Result<DeviceSteering> deviceSteering(const Profile& profile, const Topology& host, const PinnedBusyThreads* pinned,
                                             const Nic& original, const Nic& nic,
                                             const PlanOptions& opts, Plan& p) {
    DeviceSteering d{.nic = original, .mode = SteeringMode::kNone, .targets = {}, .notes = {}};
    if (profile.steering.mode == SteeringMode::kNone) return d;
    auto targets = steeringTargets(profile, host, &nic, opts);
    if (!targets) return failWith(targets.error());
    SteeringMode mode = profile.steering.mode;
    if (mode == SteeringMode::kAuto) {
        auto ex = opts.autoExplain.find(nic.name);
        if (opts.explain && ex != opts.autoExplain.end())
            for (const auto& line : ex->second) p.explanation.push_back(nic.name + ": " + line);
        if (opts.explain)
            for (const auto& n : targets->notes) p.explanation.push_back(nic.name + ": " + n);
        auto it = opts.autoTargets.find(nic.name);
        if (it == opts.autoTargets.end() || it->second.empty()) {
            p.skipped.push_back({nic.name + " steering", "mode auto: off (the measurement does not call for it)"});
            return d;
        }
        targets->cpus = it->second & targets->cpus;
        auto how = opts.autoModes.find(nic.name);
        mode = how == opts.autoModes.end() ? SteeringMode::kRps : how->second;
        targets->notes = {"mode auto: measured saturation"};
    } else if (opts.explain) {
        auto lines = explainTargets(profile, host, nic, targets->cpus, targets->notes);
        p.explanation.insert(p.explanation.end(), lines.begin(), lines.end());
    }
    if (targets->cpus.empty()) {
        p.skipped.push_back({nic.name + " steering", "no CPU left after exclusions"});
        return d;
    }
    d.mode = mode;
    d.targets = targets->cpus;
    for (const auto& n : targets->notes) d.notes += "; " + n;
    if (mode == SteeringMode::kBusyPoll) {
        auto polled = busyPollers(profile, host, pinned, original, d, p);
        if (!polled) return failWith(polled.error());
        if (!*polled) return DeviceSteering{.nic = original, .mode = SteeringMode::kNone, .targets = {}, .notes = {}};
    }
    return d;
}

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
    const PlanInput in{profile, snap, opts, nics, hostTargets->cpus};

    // 1. host-wide knobs (sysctls, the default RPS mask).
    for (const KnobFamily* f : knobFamilies())
        if (auto r = f->planHost(in, p); !r) return failWith(r.error());

    // 2. each chosen device: how it is steered, decided here once, then every family's knobs.
    for (const Nic* nic : nics) {
        p.interfaces.push_back(nic->name);
        if (profile.recommendDatapath && nic->verdict == Verdict::kSingleQueue) p.advice.push_back(datapathAdvice(profile, host, *nic, opts));
        Nic shaped = *nic;
        for (const KnobFamily* f : knobFamilies()) f->shapeDevice(in, shaped);
        auto steering = deviceSteering(profile, host, snap.fact(kPinnedBusyThreads), *nic, shaped, opts, p);
        if (!steering) return failWith(steering.error());
        for (const KnobFamily* f : knobFamilies())
            if (auto r = f->planDevice(in, *steering, p); !r) return failWith(r.error());
    }

    // 3. per-CPU knobs (the governor).
    for (const KnobFamily* f : knobFamilies())
        if (auto r = f->planLate(in, p); !r) return failWith(r.error());
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
    if (CpuSet big = biggestOf(host, a.candidates); big != a.candidates) a.biggest = big;
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
