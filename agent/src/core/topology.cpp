#include "core/topology.hpp"

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

}  // namespace rxtune
