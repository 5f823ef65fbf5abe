#include "core/topology.hpp"

namespace rxtune {

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
