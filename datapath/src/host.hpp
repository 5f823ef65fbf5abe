// What rxtune-dp checks and sets on the kernel side: the interface behind an af_packet/af_xdp
// port (it must deliver whole frames the mbufs can hold) and the TAP's addresses.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "core/result.hpp"

namespace rxtune::dp {

struct KernelPort {
    std::string ifname;
    unsigned mtu = 0;
    bool gro = false, lro = false;
};

// Reads MTU, GRO and LRO of the kernel interface behind the NIC port. An interface that merges
// frames (GRO/LRO) hands af_packet frames larger than the MTU, which it truncates: refused, with
// the ethtool command that fixes it.
Result<KernelPort> checkKernelPort(const std::string& ifname);

// Adds each CIDR address to the interface (rtnetlink, replace semantics: a restart is idempotent).
Result<void> addAddresses(const std::string& ifname, const std::vector<std::string>& cidrs);

}  // namespace rxtune::dp
