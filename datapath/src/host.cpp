#include "host.hpp"

#include <unistd.h>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "sys/file_tree.hpp"
#include "sys/netlink.hpp"

namespace rxtune::dp {

Result<KernelPort> checkKernelPort(const std::string& ifname) {
    KernelPort k;
    k.ifname = ifname;
    FileTree fs("/");
    auto mtu = fs.read(paths::netDevFile(ifname, "mtu"));
    if (!mtu || !parseUnsigned(trimmed(*mtu), k.mtu))
        return fail(ENODEV, "read", fs.full(paths::netDevFile(ifname, "mtu")),
                    "NIC interface '" + ifname + "' does not exist in this network namespace");
    auto nl = Netlink::open();
    if (!nl) return failWith(nl.error());
    auto off = (*nl)->offloads(ifname);
    if (!off) return failWith(off.error());
    k.gro = off->gro;
    k.lro = off->lro;
    if (k.gro || k.lro)
        return fail(EINVAL, "check", ifname,
                    std::string(k.gro ? "GRO" : "LRO") +
                        " is on: merged frames exceed the MTU and af_packet truncates them; run `ethtool -K " +
                        ifname + (k.gro ? " gro off" : " lro off") + "` first");
    return k;
}

Result<void> addAddresses(const std::string& ifname, const std::vector<std::string>& cidrs) {
    if (cidrs.empty()) return {};
    auto nl = Netlink::open();
    if (!nl) return failWith(nl.error());
    for (const auto& cidr : cidrs)
        if (auto ok = (*nl)->addAddress(ifname, cidr); !ok) return failWith(ok.error());
    return {};
}

}  // namespace rxtune::dp
