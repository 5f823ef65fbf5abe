#include "core/topology.hpp"

#include <algorithm>
#include <functional>

#include <cstdio>

namespace rxtune {

std::string describe(const CpuQuota& q, unsigned cpusetCpus) {
    if (!q.limited) return "none (no CFS bandwidth limit on the cgroup's path)";
    char buf[256];
    std::snprintf(buf, sizeof buf, "%.2f CPUs' worth of time (%lld/%lld us, %s)", q.cpus, static_cast<long long>(q.quotaUs),
                  static_cast<long long>(q.periodUs), q.source.c_str());
    std::string out = buf;
    if (cpusetCpus > 0 && q.cpus < 0.5 * cpusetCpus) {
        std::snprintf(buf, sizeof buf, ": far below its cpuset's %u CPUs (a container limits CPU time, not CPU count)", cpusetCpus);
        out += buf;
    }
    return out;
}

const std::vector<SysctlSpec>& managedSysctls() {
    // hostGlobal: registered in init_net only (net_core_table), so absent in other namespaces.
    static const std::vector<SysctlSpec> kSpecs = {
        {"net.core.netdev_max_backlog", true},
        {"net.core.netdev_budget", true},
        {"net.core.netdev_budget_usecs", true},
        {"net.core.dev_weight", true},
        {"net.core.rps_sock_flow_entries", true},
        {"net.core.flow_limit_table_len", true},
        {"net.core.busy_poll", true},
        {"net.core.busy_read", true},
        {"net.core.rps_default_mask", false},
        {"net.core.rmem_max", false},
        {"net.core.wmem_max", false},
        {"net.core.rmem_default", false},
        {"net.core.wmem_default", false},
        {"net.core.somaxconn", false},
        {"net.ipv4.tcp_rmem", false},
        {"net.ipv4.tcp_wmem", false},
        {"net.ipv4.tcp_max_syn_backlog", false},
    };
    return kSpecs;
}

std::vector<CpuClass> cpuClasses(const Topology& t) {
    std::vector<CpuClass> out;
    if (!t.capacity.empty()) {
        // Highest capacity first; a CPU the kernel gives none falls in with the smallest.
        std::map<unsigned, CpuSet, std::greater<>> by;
        unsigned smallest = ~0u;
        for (const auto& [cpu, c] : t.capacity) smallest = std::min(smallest, c);
        for (unsigned cpu : t.online.cpus()) {
            auto it = t.capacity.find(cpu);
            by[it == t.capacity.end() ? smallest : it->second].add(cpu);
        }
        for (const auto& [c, cpus] : by) out.push_back({"", cpus, c, ""});
    } else if (!t.coreType.empty()) {
        CpuSet core, atom, other;
        for (unsigned cpu : t.online.cpus()) {
            auto it = t.coreType.find(cpu);
            const std::string type = it == t.coreType.end() ? "" : it->second;
            (type == "core" ? core : type == "atom" ? atom : other).add(cpu);
        }
        if (!core.empty()) out.push_back({"", core, 0, "core"});
        if (!other.empty()) out.push_back({"", other, 0, ""});
        if (!atom.empty()) out.push_back({"", atom, 0, "atom"});
    }
    if (out.size() <= 1) return {{"big", t.online, out.empty() ? 0 : out.front().capacity, out.empty() ? "" : out.front().coreType}};
    for (size_t i = 0; i < out.size(); ++i) out[i].name = i == 0 ? "big" : i + 1 == out.size() ? "little" : "middle";
    return out;
}

CpuSet biggestOf(const Topology& t, const CpuSet& among) {
    for (const auto& c : cpuClasses(t))
        if (auto in = c.cpus & among; !in.empty()) return in;
    return among;
}

std::string describeCapacity(const Topology& t, unsigned cpu) {
    if (auto c = t.capacity.find(cpu); c != t.capacity.end()) return "capacity " + std::to_string(c->second);
    if (auto k = t.coreType.find(cpu); k != t.coreType.end()) return "core type " + k->second;
    return "";
}

}  // namespace rxtune
