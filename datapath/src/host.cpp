#include "host.hpp"

#include <cstring>
#include <fstream>
#include <memory>

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/paths.hpp"
#include "sys/unique_fd.hpp"

namespace rxtune::dp {

namespace {

Result<uint32_t> ethtoolValue(int fd, const std::string& ifname, uint32_t cmd) {
    ethtool_value v{};
    v.cmd = cmd;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(&v);
    if (ioctl(fd, SIOCETHTOOL, &ifr) != 0) return fail(errno, "ioctl SIOCETHTOOL", ifname);
    return v.data;
}

}  // namespace

Result<KernelPort> checkKernelPort(const std::string& ifname) {
    KernelPort k;
    k.ifname = ifname;
    // The path built by appending: `"/" + string` trips GCC 12's -Wrestrict false positive at -O3.
    std::string mtuPath = paths::netDevFile(ifname, "mtu");
    mtuPath.insert(0, 1, '/');
    std::ifstream mtu(mtuPath);
    if (!(mtu >> k.mtu))
        return fail(ENODEV, "read", mtuPath,
                    "NIC interface '" + ifname + "' does not exist in this network namespace");
    UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return fail(errno, "socket", "AF_INET");
    if (auto g = ethtoolValue(fd.get(), ifname, ETHTOOL_GGRO)) k.gro = *g != 0;
    if (auto f = ethtoolValue(fd.get(), ifname, ETHTOOL_GFLAGS)) k.lro = (*f & ETH_FLAG_LRO) != 0;
    if (k.gro || k.lro)
        return fail(EINVAL, "check", ifname,
                    std::string(k.gro ? "GRO" : "LRO") +
                        " is on: merged frames exceed the MTU and af_packet truncates them; run `ethtool -K " +
                        ifname + (k.gro ? " gro off" : " lro off") + "` first");
    return k;
}

bool vhostNetAvailable() { return access("/dev/vhost-net", R_OK | W_OK) == 0; }

Result<void> addAddresses(const std::string& ifname, const std::vector<std::string>& cidrs) {
    if (cidrs.empty()) return {};
    const unsigned index = if_nametoindex(ifname.c_str());
    if (index == 0) return fail(errno, "if_nametoindex", ifname);
    std::unique_ptr<nl_sock, void (*)(nl_sock*)> sock(nl_socket_alloc(), nl_socket_free);
    if (!sock) return fail(ENOMEM, "nl_socket_alloc", "");
    if (int e = nl_connect(sock.get(), NETLINK_ROUTE); e < 0) return fail(EIO, "nl_connect", "NETLINK_ROUTE", nl_geterror(e));
    for (const auto& cidr : cidrs) {
        nl_addr* local = nullptr;
        if (int e = nl_addr_parse(cidr.c_str(), AF_UNSPEC, &local); e < 0)
            return fail(EINVAL, "parse", cidr, nl_geterror(e));
        std::unique_ptr<nl_addr, void (*)(nl_addr*)> localGuard(local, nl_addr_put);
        std::unique_ptr<rtnl_addr, void (*)(rtnl_addr*)> addr(rtnl_addr_alloc(), rtnl_addr_put);
        rtnl_addr_set_ifindex(addr.get(), static_cast<int>(index));
        rtnl_addr_set_family(addr.get(), nl_addr_get_family(local));
        if (int e = rtnl_addr_set_local(addr.get(), local); e < 0) return fail(EINVAL, "address", cidr, nl_geterror(e));
        if (int e = rtnl_addr_add(sock.get(), addr.get(), NLM_F_REPLACE); e < 0)
            return fail(EIO, "RTM_NEWADDR", ifname + " " + cidr, nl_geterror(e));
    }
    return {};
}

}  // namespace rxtune::dp
