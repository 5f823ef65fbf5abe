#include "cli/detect_output.hpp"

#include <iomanip>
#include <sstream>

#include "knobs/registry.hpp"

namespace rxtune {

using json = nlohmann::ordered_json;

namespace {

json cpuMap(const std::map<unsigned, CpuSet>& m) {
    json j = json::object();
    for (const auto& [k, v] : m) j[std::to_string(k)] = v.toList();
    return j;
}

std::string orDash(const std::string& s) { return s.empty() ? "-" : s; }

json quotaJson(const CpuQuota& q) {
    if (!q.limited) return {{"limited", false}};
    return {{"limited", true}, {"cpus", q.cpus}, {"quota_us", q.quotaUs}, {"period_us", q.periodUs}, {"source", q.source}};
}

std::string nowMax(std::uint32_t now, std::uint32_t max) { return std::to_string(now) + "/" + std::to_string(max); }

}  // namespace

Result<HostSnapshot> detectSnapshot(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only) {
    auto snap = takeSnapshot(fs, nl, only);
    if (!snap) return failWith(snap.error());
    const SnapshotIo io{fs, nl, {}};
    for (const KnobFamily* f : knobFamilies())
        if (auto r = f->readDetect(io, *snap); !r) return failWith(r.error());
    return snap;
}

json toJson(const Topology& h) {
    json j;
    j["cpus"] = {{"online", h.online.toList()},
                 {"possible", h.possible.toList()},
                 {"isolated", h.isolated.toList()},
                 {"nohz_full", h.nohzFull.toList()}};
    j["smt_siblings"] = cpuMap(h.smtSiblings);
    j["numa_nodes"] = cpuMap(h.numaNodes);
    j["llc"] = cpuMap(h.llc);
    // Per CPU: the kernel's cpu_capacity (null where it gives none) and x86 hybrid's core type;
    // the classes biggest first.
    json cap = json::object();
    for (unsigned cpu : h.online.cpus()) {
        json e;
        auto c = h.capacity.find(cpu);
        e["capacity"] = c == h.capacity.end() ? json(nullptr) : json(c->second);
        auto t = h.coreType.find(cpu);
        e["core_type"] = t == h.coreType.end() ? json(nullptr) : json(t->second);
        cap[std::to_string(cpu)] = std::move(e);
    }
    j["cpu_capacity"] = std::move(cap);
    json classes = json::array();
    for (const auto& c : cpuClasses(h)) {
        json e = {{"class", c.name}, {"cpus", c.cpus.toList()}};
        e["capacity"] = c.capacity ? json(c.capacity) : json(nullptr);
        e["core_type"] = c.coreType.empty() ? json(nullptr) : json(c.coreType);
        classes.push_back(std::move(e));
    }
    j["cpu_classes"] = std::move(classes);
    j["cgroup"] = {{"version", h.cgroupVersion},
                   {"path", h.cgroupPath},
                   {"effective_cpus", h.cgroupCpus.toList()},
                   {"source", h.cgroupCpusSource},
                   {"cpu_quota", quotaJson(h.cgroupQuota)}};
    j["initial_netns"] = h.initialNetns;
    return j;
}

json toJson(const Nic& n) {
    json j;
    j["name"] = n.name;
    j["ifindex"] = n.ifindex;
    j["kind"] = n.kind;
    j["operstate"] = n.operstate;
    j["mtu"] = n.mtu;
    j["speed_mbps"] = n.speedMbps ? json(*n.speedMbps) : json(nullptr);
    j["driver"] = {{"available", n.driver.available},
                   {"name", n.driver.driver},
                   {"version", n.driver.version},
                   {"firmware", n.driver.firmware},
                   {"bus_info", n.driver.busInfo}};
    json ch = {{"supported", n.channels.supported}, {"source", n.channels.source}};
    if (n.channels.supported) {
        ch["rx"] = n.channels.rx;
        ch["tx"] = n.channels.tx;
        ch["other"] = n.channels.other;
        ch["combined"] = n.channels.combined;
        ch["max_rx"] = n.channels.maxRx;
        ch["max_tx"] = n.channels.maxTx;
        ch["max_other"] = n.channels.maxOther;
        ch["max_combined"] = n.channels.maxCombined;
    } else {
        ch["error"] = n.channels.error;
    }
    ch["can_raise"] = n.channels.canRaise();
    j["channels"] = std::move(ch);
    j["queues"] = {{"rx", n.rx.size()},
                   {"tx", n.tx.size()},
                   {"rtnl_num_rx", n.numRxQueues},
                   {"rtnl_num_tx", n.numTxQueues}};
    j["numa_node"] = n.numaNode;
    j["verdict"] = toString(n.verdict);
    for (const KnobFamily* f : knobFamilies()) f->detectJson(n, j);
    return j;
}

json toJson(const HostSnapshot& s) {
    json j;
    j["host"] = toJson(s.host);
    for (const KnobFamily* f : knobFamilies()) f->detectHostJson(s, j["host"]);
    json ifs = json::array();
    for (const auto& n : s.nics) ifs.push_back(toJson(n));
    j["interfaces"] = std::move(ifs);
    return j;
}

void printTable(const HostSnapshot& s, std::ostream& out) {
    const auto& h = s.host;
    out << "Host\n";
    out << "  CPUs online " << h.online.toList() << " (possible " << h.possible.toList() << ")"
        << ", isolated " << orDash(h.isolated.toList()) << ", nohz_full " << orDash(h.nohzFull.toList()) << "\n";
    out << "  NUMA";
    for (const auto& [node, cpus] : h.numaNodes) out << "  node" << node << ": " << cpus.toList();
    out << "\n";
    bool smt = false;
    for (const auto& [cpu, sib] : h.smtSiblings) smt = smt || sib.count() > 1;
    out << "  SMT " << (smt ? "on" : "off") << "\n";
    // Big and little cores, grouped by capacity (or core type); one group: alike.
    const auto classes = cpuClasses(h);
    out << "  cores";
    if (classes.size() == 1 && !classes.front().capacity && classes.front().coreType.empty()) out << " alike (the kernel gives no capacity or core type)";
    else if (classes.size() == 1) out << " alike: " << describeCapacity(h, classes.front().cpus.cpus().front()) << " on " << classes.front().cpus.toList();
    else
        for (const auto& c : classes) out << "  " << c.name << " " << c.cpus.toList() << " (" << describeCapacity(h, c.cpus.cpus().front()) << ")";
    out << "\n";
    out << "  last-level cache" << (h.llc.empty() ? " -" : "");
    for (const auto& [cpu, shared] : h.llc)  // each cache once, where its lowest CPU comes up
        if (shared.cpus().front() == cpu) out << " [" << shared.toList() << "]";
    out << "\n";
    out << "  cgroup " << h.cgroupVersion << " " << orDash(h.cgroupPath) << ", effective cpuset "
        << h.cgroupCpus.toList() << " (" << h.cgroupCpusSource << ")\n";
    out << "  CPU quota " << describe(h.cgroupQuota, h.cgroupCpus.count()) << "\n";
    out << "  network namespace: " << (h.initialNetns ? "initial" : "non-initial (host-global sysctls absent)")
        << "\n";
    for (const KnobFamily* f : knobFamilies()) f->detectHostText(s, out);

    out << "\nInterfaces\n";
    out << "  " << std::left << std::setw(16) << "NAME" << std::setw(10) << "KIND" << std::setw(8) << "STATE"
        << std::setw(13) << "DRIVER" << std::setw(9) << "RX q" << std::setw(9) << "TX q" << std::setw(14)
        << "CHANNELS" << std::setw(6) << "NUMA" << "VERDICT\n";
    for (const auto& n : s.nics) {
        std::string channels = "n/a";
        if (n.channels.supported) {
            channels = n.channels.combined || n.channels.maxCombined
                           ? "comb " + nowMax(n.channels.combined, n.channels.maxCombined)
                           : "rx " + nowMax(n.channels.rx, n.channels.maxRx);
        }
        out << "  " << std::left << std::setw(16) << n.name << std::setw(10) << n.kind << std::setw(8)
            << n.operstate << std::setw(13) << orDash(n.driver.driver) << std::setw(9)
            << nowMax(static_cast<std::uint32_t>(n.rx.size()), n.numRxQueues) << std::setw(9)
            << nowMax(static_cast<std::uint32_t>(n.tx.size()), n.numTxQueues) << std::setw(14) << channels
            << std::setw(6) << (n.numaNode < 0 ? std::string("-") : std::to_string(n.numaNode))
            << toString(n.verdict) << "\n";
    }
    for (const auto& n : s.nics) {
        out << "\n  " << n.name << ": mtu " << n.mtu;
        if (n.speedMbps) out << ", " << *n.speedMbps << " Mb/s";
        if (!n.driver.busInfo.empty()) out << ", bus " << n.driver.busInfo;
        if (!n.channels.supported) out << ", channels: " << orDash(n.channels.error);
        else if (n.channels.canRaise()) out << ", channels can be raised (ethtool -L)";
        out << "\n";
        if (n.verdict == Verdict::kSingleQueue)
            out << "    one RX queue that cannot be raised: software steering (rxtune plan), or kernel bypass with rxtune-dp "
                   "(profile kernel-bypass, rxtune-dp(8))\n";
        for (const KnobFamily* f : knobFamilies()) f->detectText(n, out);
    }
}

}  // namespace rxtune
