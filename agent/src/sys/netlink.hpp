// Netlink: rtnetlink links and ethtool channels/driver info, behind an interface tests can fake.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/nic.hpp"
#include "core/result.hpp"

struct nl_sock;
struct rtnl_link;
struct nlattr;
struct nl_msg;

namespace rxtune {

// One ethtool netlink message of flat attributes (u8 or u32), named: how a knob family asks for the
// numbers of a message (coalescing) without a method of its own here. A fake answers by the names.
struct EthtoolMessage {
    std::string name;  // "coalesce": errors say "ethtool coalesce"; a fake's netlink.json key
    int getCmd = 0, setCmd = 0, headerAttr = 0;
    struct Attr {
        int type = 0;
        std::string name;  // "rx_usecs"
        bool u8 = false;   // a flag (u8) rather than a u32
    };
    std::vector<Attr> attrs;
};
// What a device answered: the attributes it reported, by name (absent: it does not report it).
struct EthtoolValues {
    bool supported = false;  // false: the driver cannot answer (EOPNOTSUPP), error says so
    std::string error;
    std::map<std::string, std::uint32_t> values;
};

struct LinkInfo {
    std::string name;
    int ifindex = 0;
    std::string kind;  // IFLA_INFO_KIND ("veth", "tun", "bridge"), empty for hardware and loopback
    std::string operstate;
    std::uint32_t flags = 0;  // IFF_*
    std::uint32_t mtu = 0;
    std::uint32_t arptype = 0;
    std::uint32_t numRxQueues = 0, numTxQueues = 0;
    LinkStats stats;
};

// libnl's link object -> LinkInfo (sys/ only: the dump, the one-link query and the link watch).
LinkInfo linkInfoOf(::rtnl_link* link);

class NetlinkSource {
public:
    virtual ~NetlinkSource() = default;
    // Every link of the current network namespace, by ifindex.
    virtual Result<std::vector<LinkInfo>> links() = 0;
    // One link by name, asked for alone (no dump); nullopt when there is none. The default filters
    // links(), for fakes.
    virtual Result<std::optional<LinkInfo>> link(const std::string& name);
    // Channel counts; a driver that cannot answer, or a kernel that refuses the question, gives
    // supported=false with the answer, not an error (ENODEV: the device is gone, is one).
    virtual Result<Channels> channels(const std::string& ifname) = 0;
    // Every device's channels in one ethtool dump; a device absent from it does not answer channel
    // queries. nullopt: no dump here (fakes, the ioctl fallback): ask channels() per device.
    virtual Result<std::optional<std::map<std::string, Channels>>> allChannels();
    virtual Result<DriverInfo> driverInfo(const std::string& ifname) = 0;
    // The device's NAPI instances (netdev family napi-get, Linux 6.8+: id, irq, kthread pid,
    // per-NAPI deferral); nullopt where the kernel has no such request (then look in /proc).
    virtual Result<std::optional<std::vector<NapiInfo>>> napis(int ifindex);
    // What napi-set takes on this kernel, from its policy (the default, for fakes: nothing).
    virtual Result<NapiFeatures> napiFeatures();
    // The device's queues and the NAPI serving each (queue-get, 6.8+); nullopt where there is none.
    virtual Result<std::optional<std::vector<NapiQueue>>> napiQueues(int ifindex);
    // napi-set of one NAPI instance (6.13+): EOPNOTSUPP where the kernel has no such request (the
    // default), the kernel's errno otherwise (ENOENT: no NAPI of that id now).
    virtual Result<void> napiSet(unsigned napiId, const NapiSettings& values);
    // An ethtool message's GET for the device (ring sizes, coalescing): a driver (or kernel) that
    // cannot answer gives supported=false with the reason, not an error (the default answers so,
    // for fakes without them); its SET of the values given (by attribute name): EOPNOTSUPP where
    // the driver cannot (the default), the kernel's errno otherwise.
    virtual Result<EthtoolValues> ethtoolGet(const EthtoolMessage& m, const std::string& ifname);
    virtual Result<void> ethtoolSet(const EthtoolMessage& m, const std::string& ifname,
                                    const std::map<std::string, std::uint32_t>& values);
};

// The real thing: libnl-3 route cache, ethtool generic netlink, SIOCETHTOOL as fallback.
class Netlink final : public NetlinkSource {
public:
    static Result<std::unique_ptr<Netlink>> open();
    ~Netlink() override;
    Netlink(const Netlink&) = delete;
    Netlink& operator=(const Netlink&) = delete;

    Result<std::vector<LinkInfo>> links() override;
    Result<std::optional<LinkInfo>> link(const std::string& name) override;
    Result<Channels> channels(const std::string& ifname) override;
    Result<std::optional<std::map<std::string, Channels>>> allChannels() override;
    Result<DriverInfo> driverInfo(const std::string& ifname) override;
    Result<std::optional<std::vector<NapiInfo>>> napis(int ifindex) override;
    Result<NapiFeatures> napiFeatures() override;
    Result<std::optional<std::vector<NapiQueue>>> napiQueues(int ifindex) override;
    Result<void> napiSet(unsigned napiId, const NapiSettings& values) override;
    Result<EthtoolValues> ethtoolGet(const EthtoolMessage& m, const std::string& ifname) override;
    Result<void> ethtoolSet(const EthtoolMessage& m, const std::string& ifname,
                            const std::map<std::string, std::uint32_t>& values) override;

    bool ethtoolNetlink() const { return ethtoolFamily_ >= 0; }

    // Whether the device merges received frames (GRO, LRO): rxtune-dp's af_packet port refuses it.
    struct Offloads {
        bool gro = false, lro = false;
    };
    Result<Offloads> offloads(const std::string& ifname);
    // Adds an address ("10.0.0.1/24", "fd00::1/64") to the device, replacing an equal one.
    Result<void> addAddress(const std::string& ifname, const std::string& cidr);

private:
    Netlink() = default;
    // One ETHTOOL_MSG_*_GET for ifname: parse gets the reply's attributes (max: its highest).
    // Returns the kernel's errno (EOPNOTSUPP: the driver cannot answer), 0 on success.
    // fill adds the request's attributes after the header (null: none); parse null: no reply body.
    Result<int> ethtoolRequest(int cmd, int headerAttr, int maxAttr, const std::string& ifname, const char* what,
                           const std::function<void(nlattr**)>& parse, const std::function<bool(nl_msg*)>& fill = {});
    Result<Channels> channelsGenl(const std::string& ifname);
    Result<Channels> channelsIoctl(const std::string& ifname);

    ::nl_sock* route_ = nullptr;
    ::nl_sock* genl_ = nullptr;
    int ethtoolFamily_ = -1;
    int netdevFamily_ = -1;  // "netdev" generic netlink family, -1: none (before 6.0)
    int ioctlFd_ = -1;
    bool channelsDumpRefused_ = false;
    std::optional<NapiFeatures> napiFeatures_;  // asked once: the kernel's policy does not change  // the kernel refused the channels dump once: ask per device
};

}  // namespace rxtune
