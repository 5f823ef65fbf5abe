#include "sys/netlink.hpp"

#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <cctype>
#include <cstring>

namespace rxtune {

namespace {

// include/uapi/linux/netdev.h (generated from Documentation/netlink/specs/netdev.yaml); Debian 12's
// headers (6.1) predate the NAPI requests, so the numbers the kernel's ABI fixed are given here.
constexpr const char* kNetdevFamilyName = "netdev";
constexpr int kNetdevCmdQueueGet = 10;  // after dev-get(1) .. page-pool-stats-get(9)
constexpr int kNetdevCmdNapiGet = 11;
constexpr int kNetdevCmdNapiSet = 14;  // after qstats-get(12), bind-rx(13); 6.13+
enum : int {
    kNapiIfindex = 1,
    kNapiId,
    kNapiIrq,
    kNapiPid,
    kNapiDeferHardIrqs,
    kNapiGroFlushTimeout,
    kNapiIrqSuspendTimeout,  // 6.13+
    kNapiThreaded,           // 6.17+
    kNapiMax = 16,  // room for attributes newer kernels add
};
enum : int {
    kQueueId = 1,
    kQueueIfindex,
    kQueueType,  // 0 rx, 1 tx
    kQueueNapiId,
    kQueueMax = 16,
};
// linux/netlink.h's NL_ATTR_TYPE_UINT (6.8+), absent from Debian 12's headers.
constexpr std::uint32_t kNlAttrTypeUint = 17;

int libnlToErrno(int nlerr) {
    switch (-nlerr) {
        case NLE_OPNOTSUPP: return EOPNOTSUPP;
        case NLE_NODEV:
        case NLE_OBJ_NOTFOUND: return ENODEV;
        case NLE_PERM: return EPERM;
        case NLE_NOMEM: return ENOMEM;
        case NLE_INVAL: return EINVAL;
        case NLE_AGAIN: return EAGAIN;
        case NLE_BUSY: return EBUSY;
        case NLE_RANGE: return ERANGE;
        default: return EIO;
    }
}

struct CacheGuard {
    nl_cache* cache = nullptr;
    ~CacheGuard() {
        if (cache) nl_cache_free(cache);
    }
};

struct MsgGuard {
    nl_msg* msg = nullptr;
    ~MsgGuard() {
        if (msg) nlmsg_free(msg);
    }
};

struct CbGuard {
    nl_cb* cb = nullptr;
    ~CbGuard() {
        if (cb) nl_cb_put(cb);
    }
};

// State shared with the libnl callbacks of one request.
struct GenlReply {
    Channels ch;
    bool got = false;
    bool done = false;
    int err = 0;
};

// An ETHTOOL_MSG_CHANNELS_GET reply's counts (one device's, asked for or from a dump).
Channels channelsOf(nlattr** tb) {
    auto u32 = [&](int attr) -> std::uint32_t { return tb[attr] ? nla_get_u32(tb[attr]) : 0; };
    Channels ch;
    ch.source = "ethtool-netlink";
    ch.rx = u32(ETHTOOL_A_CHANNELS_RX_COUNT);
    ch.tx = u32(ETHTOOL_A_CHANNELS_TX_COUNT);
    ch.other = u32(ETHTOOL_A_CHANNELS_OTHER_COUNT);
    ch.combined = u32(ETHTOOL_A_CHANNELS_COMBINED_COUNT);
    ch.maxRx = u32(ETHTOOL_A_CHANNELS_RX_MAX);
    ch.maxTx = u32(ETHTOOL_A_CHANNELS_TX_MAX);
    ch.maxOther = u32(ETHTOOL_A_CHANNELS_OTHER_MAX);
    ch.maxCombined = u32(ETHTOOL_A_CHANNELS_COMBINED_MAX);
    return ch;
}

int onValid(nl_msg* msg, void* arg) {
    auto* r = static_cast<GenlReply*>(arg);
    nlattr* tb[ETHTOOL_A_CHANNELS_MAX + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, ETHTOOL_A_CHANNELS_MAX, nullptr) < 0) {
        r->err = EBADMSG;
        return NL_STOP;
    }
    r->ch = channelsOf(tb);
    r->got = true;
    return NL_OK;
}

int onError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    auto* r = static_cast<GenlReply*>(arg);
    r->err = -e->error;
    r->done = true;
    return NL_STOP;
}

int onAck(nl_msg*, void* arg) {
    static_cast<GenlReply*>(arg)->done = true;
    return NL_STOP;
}

bool fillIfreq(ifreq& ifr, const std::string& ifname) {
    if (ifname.size() >= IFNAMSIZ) return false;
    std::memset(&ifr, 0, sizeof ifr);
    std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());
    return true;
}

}  // namespace

LinkInfo linkInfoOf(rtnl_link* link) {
    LinkInfo li;
    const char* name = rtnl_link_get_name(link);
    li.name = name ? name : "";
    li.ifindex = rtnl_link_get_ifindex(link);
    const char* kind = rtnl_link_get_type(link);
    li.kind = kind ? kind : "";
    char buf[64];
    li.operstate = rtnl_link_operstate2str(rtnl_link_get_operstate(link), buf, sizeof buf);
    for (char& c : li.operstate) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    li.flags = rtnl_link_get_flags(link);
    li.mtu = rtnl_link_get_mtu(link);
    li.arptype = rtnl_link_get_arptype(link);
    li.numRxQueues = rtnl_link_get_num_rx_queues(link);
    li.numTxQueues = rtnl_link_get_num_tx_queues(link);
    li.stats.rxPackets = rtnl_link_get_stat(link, RTNL_LINK_RX_PACKETS);
    li.stats.rxBytes = rtnl_link_get_stat(link, RTNL_LINK_RX_BYTES);
    li.stats.rxDropped = rtnl_link_get_stat(link, RTNL_LINK_RX_DROPPED);
    li.stats.rxErrors = rtnl_link_get_stat(link, RTNL_LINK_RX_ERRORS);
    li.stats.rxMissed = rtnl_link_get_stat(link, RTNL_LINK_RX_MISSED_ERR);
    li.stats.txPackets = rtnl_link_get_stat(link, RTNL_LINK_TX_PACKETS);
    li.stats.txBytes = rtnl_link_get_stat(link, RTNL_LINK_TX_BYTES);
    li.stats.txDropped = rtnl_link_get_stat(link, RTNL_LINK_TX_DROPPED);
    li.stats.txErrors = rtnl_link_get_stat(link, RTNL_LINK_TX_ERRORS);
    return li;
}

Result<std::unique_ptr<Netlink>> Netlink::open() {
    std::unique_ptr<Netlink> nl(new Netlink());
    nl->route_ = nl_socket_alloc();
    if (!nl->route_) return fail(ENOMEM, "netlink", "NETLINK_ROUTE", "cannot allocate socket");
    if (int rc = nl_connect(nl->route_, NETLINK_ROUTE); rc < 0)
        return fail(libnlToErrno(rc), "netlink connect", "NETLINK_ROUTE", nl_geterror(rc));
    nl->genl_ = nl_socket_alloc();
    if (!nl->genl_) return fail(ENOMEM, "netlink", "NETLINK_GENERIC", "cannot allocate socket");
    if (int rc = genl_connect(nl->genl_); rc < 0)
        return fail(libnlToErrno(rc), "netlink connect", "NETLINK_GENERIC", nl_geterror(rc));
    // A kernel before 5.6 has no "ethtool" family: channel queries then go through the ioctl.
    int fam = genl_ctrl_resolve(nl->genl_, ETHTOOL_GENL_NAME);
    nl->ethtoolFamily_ = fam >= 0 ? fam : -1;
    int netdev = genl_ctrl_resolve(nl->genl_, kNetdevFamilyName);
    nl->netdevFamily_ = netdev >= 0 ? netdev : -1;
    // Replies are small and the buffer is big: no MSG_PEEK round before each read.
    for (nl_sock* sk : {nl->route_, nl->genl_}) {
        nl_socket_disable_msg_peek(sk);
        nl_socket_set_msg_buf_size(sk, 65536);
    }
    nl->ioctlFd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (nl->ioctlFd_ < 0) nl->ioctlFd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    if (nl->ioctlFd_ < 0) return fail(errno, "socket", "SIOCETHTOOL");
    return nl;
}

Netlink::~Netlink() {
    if (route_) nl_socket_free(route_);
    if (genl_) nl_socket_free(genl_);
    if (ioctlFd_ >= 0) ::close(ioctlFd_);
}

Result<std::optional<LinkInfo>> NetlinkSource::link(const std::string& name) {
    auto all = links();
    if (!all) return failWith(all.error());
    for (auto& l : *all)
        if (l.name == name) return std::optional<LinkInfo>(std::move(l));
    return std::optional<LinkInfo>();
}

Result<std::vector<LinkInfo>> Netlink::links() {
    CacheGuard g;
    if (int rc = rtnl_link_alloc_cache(route_, AF_UNSPEC, &g.cache); rc < 0)
        return fail(libnlToErrno(rc), "rtnetlink RTM_GETLINK", "dump", nl_geterror(rc));
    std::vector<LinkInfo> out;
    for (nl_object* o = nl_cache_get_first(g.cache); o; o = nl_cache_get_next(o))
        out.push_back(linkInfoOf(reinterpret_cast<rtnl_link*>(o)));
    std::sort(out.begin(), out.end(), [](const LinkInfo& a, const LinkInfo& b) { return a.ifindex < b.ifindex; });
    return out;
}

Result<std::optional<LinkInfo>> Netlink::link(const std::string& name) {
    if (name.empty() || name.size() >= IFNAMSIZ) return std::optional<LinkInfo>();
    rtnl_link* l = nullptr;
    int rc = rtnl_link_get_kernel(route_, 0, name.c_str(), &l);
    if (rc == -NLE_NODEV || rc == -NLE_OBJ_NOTFOUND) return std::optional<LinkInfo>();
    if (rc < 0) return fail(libnlToErrno(rc), "rtnetlink RTM_GETLINK", name, nl_geterror(rc));
    LinkInfo li = linkInfoOf(l);
    rtnl_link_put(l);
    return std::optional<LinkInfo>(std::move(li));
}

Result<std::optional<std::vector<NapiInfo>>> NetlinkSource::napis(int) { return std::optional<std::vector<NapiInfo>>(); }

Result<EthtoolValues> NetlinkSource::ethtoolGet(const EthtoolMessage&, const std::string&) {
    EthtoolValues v;
    v.error = "not asked (no ethtool netlink here)";
    return v;
}

Result<void> NetlinkSource::ethtoolSet(const EthtoolMessage& m, const std::string& ifname, const std::map<std::string, std::uint32_t>&) {
    return fail(EOPNOTSUPP, "ethtool " + m.name + " set", ifname);
}

Result<std::optional<std::map<std::string, Channels>>> NetlinkSource::allChannels() {
    return std::optional<std::map<std::string, Channels>>();
}

namespace {

struct ChannelsDump {
    std::map<std::string, Channels> out;
    int err = 0;
};

int onDumpValid(nl_msg* msg, void* arg) {
    auto* d = static_cast<ChannelsDump*>(arg);
    nlattr* tb[ETHTOOL_A_CHANNELS_MAX + 1] = {};
    nlattr* hdr[ETHTOOL_A_HEADER_MAX + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, ETHTOOL_A_CHANNELS_MAX, nullptr) < 0 || !tb[ETHTOOL_A_CHANNELS_HEADER] ||
        nla_parse_nested(hdr, ETHTOOL_A_HEADER_MAX, tb[ETHTOOL_A_CHANNELS_HEADER], nullptr) < 0 || !hdr[ETHTOOL_A_HEADER_DEV_NAME]) {
        d->err = EBADMSG;
        return NL_STOP;
    }
    Channels ch = channelsOf(tb);
    ch.supported = true;
    d->out[nla_get_string(hdr[ETHTOOL_A_HEADER_DEV_NAME])] = ch;
    return NL_OK;
}

int onDumpError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    static_cast<ChannelsDump*>(arg)->err = -e->error;
    return NL_STOP;
}

}  // namespace

Result<std::optional<std::map<std::string, Channels>>> Netlink::allChannels() {
    if (ethtoolFamily_ < 0 || channelsDumpRefused_) return std::optional<std::map<std::string, Channels>>();
    MsgGuard m{nlmsg_alloc()};
    if (!m.msg) return fail(ENOMEM, "ethtool CHANNELS_GET", "dump");
    if (!genlmsg_put(m.msg, NL_AUTO_PORT, NL_AUTO_SEQ, ethtoolFamily_, 0, NLM_F_DUMP, ETHTOOL_MSG_CHANNELS_GET, ETHTOOL_GENL_VERSION))
        return fail(ENOMEM, "ethtool CHANNELS_GET", "dump");
    // The header names no device, but carries its flags (0): Debian 12's 6.1 refuses a dump whose
    // header has none, the nest empty or absent alike (EINVAL); 5.6 onwards accept flags 0.
    nlattr* hdr = nla_nest_start(m.msg, ETHTOOL_A_CHANNELS_HEADER);
    if (!hdr || nla_put_u32(m.msg, ETHTOOL_A_HEADER_FLAGS, 0) < 0) return fail(ENOMEM, "ethtool CHANNELS_GET", "dump");
    nla_nest_end(m.msg, hdr);
    CbGuard cb{nl_cb_alloc(NL_CB_CUSTOM)};
    if (!cb.cb) return fail(ENOMEM, "ethtool CHANNELS_GET", "dump");
    ChannelsDump dump;
    nl_cb_set(cb.cb, NL_CB_VALID, NL_CB_CUSTOM, onDumpValid, &dump);
    nl_cb_err(cb.cb, NL_CB_CUSTOM, onDumpError, &dump);
    if (int rc = nl_send_auto(genl_, m.msg); rc < 0)
        return fail(libnlToErrno(rc), "ethtool CHANNELS_GET", "dump", nl_geterror(rc));
    // nl_recvmsgs returns once NLMSG_DONE ends the dump.
    if (int rc = nl_recvmsgs(genl_, cb.cb); rc < 0 && dump.err == 0)
        return fail(libnlToErrno(rc), "ethtool CHANNELS_GET", "dump", nl_geterror(rc));
    if (dump.err != 0) {
        // The kernel refuses the dump (a kernel of its own mind, a policy we do not know): every
        // later snapshot asks per device straight away instead of being refused again.
        channelsDumpRefused_ = true;
        return fail(dump.err, "ethtool CHANNELS_GET", "dump");
    }
    return std::optional<std::map<std::string, Channels>>(std::move(dump.out));
}

Result<Channels> Netlink::channels(const std::string& ifname) {
    if (ethtoolFamily_ < 0) return channelsIoctl(ifname);
    auto genl = channelsGenl(ifname);
    if (genl || genl.error().code == ENODEV) return genl;
    // ethtool netlink refused (not "the driver cannot"): the ioctl is the older way in; where it
    // fails too, the channels are unavailable, with both answers, and nothing else fails.
    auto ioctl = channelsIoctl(ifname);
    if (ioctl && ioctl->supported) return ioctl;
    if (!ioctl && ioctl.error().code == ENODEV) return ioctl;
    Channels ch;
    ch.source = "ethtool-netlink";
    ch.error = genl.error().message() + "; SIOCETHTOOL: " + (ioctl ? ioctl->error : ioctl.error().message());
    return ch;
}

Result<Channels> Netlink::channelsGenl(const std::string& ifname) {
    MsgGuard m{nlmsg_alloc()};
    if (!m.msg) return fail(ENOMEM, "ethtool CHANNELS_GET", ifname);
    if (!genlmsg_put(m.msg, NL_AUTO_PORT, NL_AUTO_SEQ, ethtoolFamily_, 0, NLM_F_ACK, ETHTOOL_MSG_CHANNELS_GET,
                     ETHTOOL_GENL_VERSION))
        return fail(ENOMEM, "ethtool CHANNELS_GET", ifname);
    nlattr* hdr = nla_nest_start(m.msg, ETHTOOL_A_CHANNELS_HEADER);
    if (!hdr || nla_put_string(m.msg, ETHTOOL_A_HEADER_DEV_NAME, ifname.c_str()) < 0)
        return fail(ENOMEM, "ethtool CHANNELS_GET", ifname);
    nla_nest_end(m.msg, hdr);

    CbGuard cb{nl_cb_alloc(NL_CB_CUSTOM)};
    if (!cb.cb) return fail(ENOMEM, "ethtool CHANNELS_GET", ifname);
    GenlReply reply;
    nl_cb_set(cb.cb, NL_CB_VALID, NL_CB_CUSTOM, onValid, &reply);
    nl_cb_set(cb.cb, NL_CB_ACK, NL_CB_CUSTOM, onAck, &reply);
    nl_cb_err(cb.cb, NL_CB_CUSTOM, onError, &reply);
    if (int rc = nl_send_auto(genl_, m.msg); rc < 0)
        return fail(libnlToErrno(rc), "ethtool CHANNELS_GET", ifname, nl_geterror(rc));
    while (!reply.done) {
        int rc = nl_recvmsgs(genl_, cb.cb);
        if (rc < 0 && !reply.done && reply.err == 0)
            return fail(libnlToErrno(rc), "ethtool CHANNELS_GET", ifname, nl_geterror(rc));
        if (reply.err != 0) break;
    }
    Channels ch = reply.ch;
    ch.source = "ethtool-netlink";
    if (reply.err == EOPNOTSUPP) {
        ch = Channels{};
        ch.source = "ethtool-netlink";
        ch.error = std::strerror(EOPNOTSUPP);
        return ch;
    }
    if (reply.err != 0) return fail(reply.err, "ethtool CHANNELS_GET", ifname);
    if (!reply.got) return fail(EBADMSG, "ethtool CHANNELS_GET", ifname, "no reply");
    ch.supported = true;
    return ch;
}

Result<Channels> Netlink::channelsIoctl(const std::string& ifname) {
    ifreq ifr{};
    if (!fillIfreq(ifr, ifname)) return fail(EINVAL, "SIOCETHTOOL ETHTOOL_GCHANNELS", ifname, "name too long");
    ethtool_channels ec{};
    ec.cmd = ETHTOOL_GCHANNELS;
    ifr.ifr_data = reinterpret_cast<char*>(&ec);
    Channels ch;
    ch.source = "ioctl";
    if (::ioctl(ioctlFd_, SIOCETHTOOL, &ifr) != 0) {
        if (errno == EOPNOTSUPP) {
            ch.error = std::strerror(EOPNOTSUPP);
            return ch;
        }
        return fail(errno, "SIOCETHTOOL ETHTOOL_GCHANNELS", ifname);
    }
    ch.supported = true;
    ch.rx = ec.rx_count;
    ch.tx = ec.tx_count;
    ch.other = ec.other_count;
    ch.combined = ec.combined_count;
    ch.maxRx = ec.max_rx;
    ch.maxTx = ec.max_tx;
    ch.maxOther = ec.max_other;
    ch.maxCombined = ec.max_combined;
    return ch;
}

Result<Netlink::Offloads> Netlink::offloads(const std::string& ifname) {
    auto value = [&](std::uint32_t cmd) -> Result<std::uint32_t> {
        ifreq ifr{};
        if (!fillIfreq(ifr, ifname)) return fail(EINVAL, "SIOCETHTOOL", ifname, "name too long");
        ethtool_value v{};
        v.cmd = cmd;
        ifr.ifr_data = reinterpret_cast<char*>(&v);
        if (::ioctl(ioctlFd_, SIOCETHTOOL, &ifr) != 0) return fail(errno, "SIOCETHTOOL", ifname);
        return v.data;
    };
    // A driver that cannot say (EOPNOTSUPP) does not merge.
    Offloads o;
    if (auto g = value(ETHTOOL_GGRO)) o.gro = *g != 0;
    if (auto f = value(ETHTOOL_GFLAGS)) o.lro = (*f & ETH_FLAG_LRO) != 0;
    return o;
}

Result<void> Netlink::addAddress(const std::string& ifname, const std::string& cidr) {
    const unsigned index = if_nametoindex(ifname.c_str());
    if (index == 0) return fail(errno, "if_nametoindex", ifname);
    nl_addr* local = nullptr;
    if (int e = nl_addr_parse(cidr.c_str(), AF_UNSPEC, &local); e < 0) return fail(EINVAL, "parse", cidr, nl_geterror(e));
    std::unique_ptr<nl_addr, void (*)(nl_addr*)> localGuard(local, nl_addr_put);
    std::unique_ptr<rtnl_addr, void (*)(rtnl_addr*)> addr(rtnl_addr_alloc(), rtnl_addr_put);
    if (!addr) return fail(ENOMEM, "rtnl_addr_alloc", cidr);
    rtnl_addr_set_ifindex(addr.get(), static_cast<int>(index));
    rtnl_addr_set_family(addr.get(), nl_addr_get_family(local));
    if (int e = rtnl_addr_set_local(addr.get(), local); e < 0) return fail(EINVAL, "address", cidr, nl_geterror(e));
    if (int e = rtnl_addr_add(route_, addr.get(), NLM_F_REPLACE); e < 0)
        return fail(libnlToErrno(e), "RTM_NEWADDR", ifname + " " + cidr, nl_geterror(e));
    return {};
}

Result<DriverInfo> Netlink::driverInfo(const std::string& ifname) {
    // ethtool netlink has no DRVINFO message; the ioctl is still the interface for it.
    ifreq ifr{};
    if (!fillIfreq(ifr, ifname)) return fail(EINVAL, "SIOCETHTOOL ETHTOOL_GDRVINFO", ifname, "name too long");
    ethtool_drvinfo di{};
    di.cmd = ETHTOOL_GDRVINFO;
    ifr.ifr_data = reinterpret_cast<char*>(&di);
    DriverInfo out;
    if (::ioctl(ioctlFd_, SIOCETHTOOL, &ifr) != 0) {
        if (errno == EOPNOTSUPP) {
            out.error = std::strerror(EOPNOTSUPP);
            return out;
        }
        return fail(errno, "SIOCETHTOOL ETHTOOL_GDRVINFO", ifname);
    }
    auto str = [](const char* s, size_t n) { return std::string(s, strnlen(s, n)); };
    out.available = true;
    out.driver = str(di.driver, sizeof di.driver);
    out.version = str(di.version, sizeof di.version);
    out.firmware = str(di.fw_version, sizeof di.fw_version);
    out.busInfo = str(di.bus_info, sizeof di.bus_info);
    return out;
}

namespace {

struct NapiDump {
    int ifindex = 0;
    std::vector<NapiInfo> out;
    int err = 0;
};

std::uint64_t uintAttr(nlattr* a) {
    // "uint" attributes are 4 or 8 bytes, as the value needs.
    return nla_len(a) >= 8 ? nla_get_u64(a) : nla_get_u32(a);
}

int onNapiValid(nl_msg* msg, void* arg) {
    auto* d = static_cast<NapiDump*>(arg);
    nlattr* tb[kNapiMax + 1] = {};
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, kNapiMax, nullptr) < 0 || !tb[kNapiId]) {
        d->err = EBADMSG;
        return NL_STOP;
    }
    // Kernels before the ifindex filter (6.9) dump every device's NAPIs: keep this one's.
    if (tb[kNapiIfindex] && static_cast<int>(nla_get_u32(tb[kNapiIfindex])) != d->ifindex) return NL_OK;
    NapiInfo n;
    n.id = nla_get_u32(tb[kNapiId]);
    if (tb[kNapiIrq]) n.irq = static_cast<int>(nla_get_u32(tb[kNapiIrq]));
    if (tb[kNapiPid]) n.pid = static_cast<int>(nla_get_u32(tb[kNapiPid]));
    if (tb[kNapiDeferHardIrqs]) n.deferHardIrqs = nla_get_u32(tb[kNapiDeferHardIrqs]);
    if (tb[kNapiGroFlushTimeout]) n.groFlushTimeout = uintAttr(tb[kNapiGroFlushTimeout]);
    if (tb[kNapiIrqSuspendTimeout]) n.irqSuspendTimeout = uintAttr(tb[kNapiIrqSuspendTimeout]);
    if (tb[kNapiThreaded]) n.threaded = nla_get_u32(tb[kNapiThreaded]);
    d->out.push_back(n);
    return NL_OK;
}

int onNapiError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    static_cast<NapiDump*>(arg)->err = -e->error;
    return NL_STOP;
}

}  // namespace

Result<std::optional<std::vector<NapiInfo>>> Netlink::napis(int ifindex) {
    if (netdevFamily_ < 0) return std::optional<std::vector<NapiInfo>>();
    const std::string what = "ifindex " + std::to_string(ifindex);
    MsgGuard m{nlmsg_alloc()};
    if (!m.msg) return fail(ENOMEM, "netdev NAPI_GET", what);
    if (!genlmsg_put(m.msg, NL_AUTO_PORT, NL_AUTO_SEQ, netdevFamily_, 0, NLM_F_DUMP, kNetdevCmdNapiGet, 1) ||
        nla_put_u32(m.msg, kNapiIfindex, static_cast<std::uint32_t>(ifindex)) < 0)
        return fail(ENOMEM, "netdev NAPI_GET", what);
    CbGuard cb{nl_cb_alloc(NL_CB_CUSTOM)};
    if (!cb.cb) return fail(ENOMEM, "netdev NAPI_GET", what);
    NapiDump dump;
    dump.ifindex = ifindex;
    nl_cb_set(cb.cb, NL_CB_VALID, NL_CB_CUSTOM, onNapiValid, &dump);
    nl_cb_err(cb.cb, NL_CB_CUSTOM, onNapiError, &dump);
    if (int rc = nl_send_auto(genl_, m.msg); rc < 0) return fail(libnlToErrno(rc), "netdev NAPI_GET", what, nl_geterror(rc));
    if (int rc = nl_recvmsgs(genl_, cb.cb); rc < 0 && dump.err == 0)
        return fail(libnlToErrno(rc), "netdev NAPI_GET", what, nl_geterror(rc));
    // A kernel with the family but not the request (6.0-6.7) answers EOPNOTSUPP.
    if (dump.err == EOPNOTSUPP || dump.err == EINVAL) return std::optional<std::vector<NapiInfo>>();
    if (dump.err != 0) return fail(dump.err, "netdev NAPI_GET", what);
    std::sort(dump.out.begin(), dump.out.end(), [](const NapiInfo& a, const NapiInfo& b) { return a.id < b.id; });
    return std::optional<std::vector<NapiInfo>>(std::move(dump.out));
}

namespace {

// One generic netlink request and every reply to it: each reply's attributes (up to maxAttr) go
// to onReply; the kernel's errno comes back (0: done), or an error of the socket.
struct Exchange {
    int maxAttr = 0;
    const std::function<void(nlattr**)>* onReply = nullptr;
    int err = 0;
};

int onExchangeValid(nl_msg* msg, void* arg) {
    auto* x = static_cast<Exchange*>(arg);
    std::vector<nlattr*> tb(static_cast<size_t>(x->maxAttr) + 1, nullptr);
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb.data(), x->maxAttr, nullptr) < 0) {
        x->err = EBADMSG;
        return NL_STOP;
    }
    (*x->onReply)(tb.data());
    return NL_OK;
}
int onExchangeError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    static_cast<Exchange*>(arg)->err = -e->error;
    return NL_STOP;
}
int onExchangeAck(nl_msg*, void*) { return NL_STOP; }

Result<int> genlExchange(nl_sock* sock, int family, int cmd, bool dump, const char* op, const std::string& what,
                         const std::function<bool(nl_msg*)>& fill, int maxAttr, const std::function<void(nlattr**)>& onReply) {
    MsgGuard m{nlmsg_alloc()};
    if (!m.msg) return fail(ENOMEM, op, what);
    if (!genlmsg_put(m.msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, dump ? NLM_F_DUMP : NLM_F_ACK, static_cast<std::uint8_t>(cmd), 1) ||
        !fill(m.msg))
        return fail(ENOMEM, op, what);
    CbGuard cb{nl_cb_alloc(NL_CB_CUSTOM)};
    if (!cb.cb) return fail(ENOMEM, op, what);
    Exchange x;
    x.maxAttr = maxAttr;
    x.onReply = &onReply;
    nl_cb_set(cb.cb, NL_CB_VALID, NL_CB_CUSTOM, onExchangeValid, &x);
    nl_cb_set(cb.cb, NL_CB_ACK, NL_CB_CUSTOM, onExchangeAck, &x);
    nl_cb_err(cb.cb, NL_CB_CUSTOM, onExchangeError, &x);
    if (int rc = nl_send_auto(sock, m.msg); rc < 0) return fail(libnlToErrno(rc), op, what, nl_geterror(rc));
    if (int rc = nl_recvmsgs(sock, cb.cb); rc < 0 && x.err == 0) return fail(libnlToErrno(rc), op, what, nl_geterror(rc));
    return x.err;
}

// One attribute's limits in a policy (netlink.h's NL_POLICY_TYPE_ATTR_*).
struct PolicyAttr {
    std::uint32_t type = 0;
    std::optional<std::uint64_t> maxU;
};

}  // namespace

Result<NapiFeatures> NetlinkSource::napiFeatures() { return NapiFeatures{}; }
Result<std::optional<std::vector<NapiQueue>>> NetlinkSource::napiQueues(int) { return std::optional<std::vector<NapiQueue>>(); }
Result<void> NetlinkSource::napiSet(unsigned napiId, const NapiSettings&) {
    return fail(EOPNOTSUPP, "netdev NAPI_SET", "napi " + std::to_string(napiId));
}

Result<NapiFeatures> Netlink::napiFeatures() {
    if (napiFeatures_) return *napiFeatures_;
    NapiFeatures f;
    if (netdevFamily_ < 0) return *(napiFeatures_ = f);
    // The policy of napi-set's do: CTRL_ATTR_OP_POLICY names its index, CTRL_ATTR_POLICY gives
    // each index's attributes with their limits. A kernel without the request refuses (ENOENT).
    std::optional<std::uint32_t> doIndex;
    std::map<std::uint32_t, std::map<int, PolicyAttr>> policies;
    const std::function<void(nlattr**)> onReply = [&](nlattr** tb) {
        if (tb[CTRL_ATTR_OP_POLICY]) {
            nlattr* op;
            int rem;
            nla_for_each_nested(op, tb[CTRL_ATTR_OP_POLICY], rem) {
                if (nla_type(op) != kNetdevCmdNapiSet) continue;
                nlattr* which[CTRL_ATTR_POLICY_DUMP_MAX + 1] = {};
                if (nla_parse_nested(which, CTRL_ATTR_POLICY_DUMP_MAX, op, nullptr) == 0 && which[CTRL_ATTR_POLICY_DO])
                    doIndex = nla_get_u32(which[CTRL_ATTR_POLICY_DO]);
            }
        }
        if (tb[CTRL_ATTR_POLICY]) {
            nlattr* idx;
            int rem;
            nla_for_each_nested(idx, tb[CTRL_ATTR_POLICY], rem) {
                nlattr* attr;
                int rem2;
                nla_for_each_nested(attr, idx, rem2) {
                    nlattr* props[NL_POLICY_TYPE_ATTR_MAX + 1] = {};
                    if (nla_parse_nested(props, NL_POLICY_TYPE_ATTR_MAX, attr, nullptr) != 0) continue;
                    PolicyAttr a;
                    if (props[NL_POLICY_TYPE_ATTR_TYPE]) a.type = nla_get_u32(props[NL_POLICY_TYPE_ATTR_TYPE]);
                    if (props[NL_POLICY_TYPE_ATTR_MAX_VALUE_U]) a.maxU = nla_get_u64(props[NL_POLICY_TYPE_ATTR_MAX_VALUE_U]);
                    policies[static_cast<std::uint32_t>(nla_type(idx))][nla_type(attr)] = a;
                }
            }
        }
    };
    auto err = genlExchange(
        genl_, GENL_ID_CTRL, CTRL_CMD_GETPOLICY, true, "nlctrl GETPOLICY", "netdev napi-set",
        [&](nl_msg* m) {
            return nla_put_u16(m, CTRL_ATTR_FAMILY_ID, static_cast<std::uint16_t>(netdevFamily_)) == 0 &&
                   nla_put_u32(m, CTRL_ATTR_OP, kNetdevCmdNapiSet) == 0;
        },
        CTRL_ATTR_MAX, onReply);
    if (!err) return failWith(err.error());
    // ENOENT / EOPNOTSUPP: no such request here (before 6.13), or no policy dump by op (before 5.10).
    if (*err != 0 && *err != ENOENT && *err != EOPNOTSUPP && *err != EINVAL) return fail(*err, "nlctrl GETPOLICY", "netdev napi-set");
    if (*err == 0 && doIndex) {
        f.napiSet = true;
        const auto& p = policies[*doIndex];
        auto has = [&](int attr, std::initializer_list<std::uint32_t> types) {
            auto it = p.find(attr);
            return it != p.end() && std::find(types.begin(), types.end(), it->second.type) != types.end();
        };
        f.deferHardIrqs = has(kNapiDeferHardIrqs, {NL_ATTR_TYPE_U32});
        f.groFlushTimeout = has(kNapiGroFlushTimeout, {kNlAttrTypeUint, NL_ATTR_TYPE_U64, NL_ATTR_TYPE_U32});
        f.irqSuspendTimeout = has(kNapiIrqSuspendTimeout, {kNlAttrTypeUint, NL_ATTR_TYPE_U64, NL_ATTR_TYPE_U32});
        f.threaded = has(kNapiThreaded, {NL_ATTR_TYPE_U32});
        if (f.threaded) f.threadedMax = static_cast<std::uint32_t>(p.at(kNapiThreaded).maxU.value_or(1));
    }
    return *(napiFeatures_ = f);
}

Result<std::optional<std::vector<NapiQueue>>> Netlink::napiQueues(int ifindex) {
    if (netdevFamily_ < 0) return std::optional<std::vector<NapiQueue>>();
    const std::string what = "ifindex " + std::to_string(ifindex);
    std::vector<NapiQueue> out;
    const std::function<void(nlattr**)> onReply = [&](nlattr** tb) {
        if (!tb[kQueueId] || !tb[kQueueType]) return;
        if (tb[kQueueIfindex] && static_cast<int>(nla_get_u32(tb[kQueueIfindex])) != ifindex) return;
        NapiQueue q;
        q.id = nla_get_u32(tb[kQueueId]);
        q.tx = nla_get_u32(tb[kQueueType]) == 1;
        if (tb[kQueueNapiId]) q.napiId = nla_get_u32(tb[kQueueNapiId]);
        out.push_back(q);
    };
    auto err = genlExchange(
        genl_, netdevFamily_, kNetdevCmdQueueGet, true, "netdev QUEUE_GET", what,
        [&](nl_msg* m) { return nla_put_u32(m, kQueueIfindex, static_cast<std::uint32_t>(ifindex)) == 0; }, kQueueMax, onReply);
    if (!err) return failWith(err.error());
    if (*err == EOPNOTSUPP || *err == EINVAL) return std::optional<std::vector<NapiQueue>>();
    if (*err != 0) return fail(*err, "netdev QUEUE_GET", what);
    return std::optional<std::vector<NapiQueue>>(std::move(out));
}

Result<void> Netlink::napiSet(unsigned napiId, const NapiSettings& v) {
    const std::string what = "napi " + std::to_string(napiId);
    if (netdevFamily_ < 0) return fail(EOPNOTSUPP, "netdev NAPI_SET", what, "no netdev generic netlink family");
    const std::function<void(nlattr**)> none = [](nlattr**) {};
    auto err = genlExchange(
        genl_, netdevFamily_, kNetdevCmdNapiSet, false, "netdev NAPI_SET", what,
        [&](nl_msg* m) {
            bool ok = nla_put_u32(m, kNapiId, napiId) == 0;
            if (v.deferHardIrqs) ok = ok && nla_put_u32(m, kNapiDeferHardIrqs, *v.deferHardIrqs) == 0;
            if (v.groFlushTimeout) ok = ok && nla_put_u64(m, kNapiGroFlushTimeout, *v.groFlushTimeout) == 0;
            if (v.irqSuspendTimeout) ok = ok && nla_put_u64(m, kNapiIrqSuspendTimeout, *v.irqSuspendTimeout) == 0;
            if (v.threaded) ok = ok && nla_put_u32(m, kNapiThreaded, *v.threaded) == 0;
            return ok;
        },
        kNapiMax, none);
    if (!err) return failWith(err.error());
    if (*err != 0) return fail(*err, "netdev NAPI_SET", what);
    return {};
}

namespace {

struct GetReply {
    const std::function<void(nlattr**)>* parse = nullptr;
    int maxAttr = 0;
    bool got = false, done = false;
    int err = 0;
};

int onGetValid(nl_msg* msg, void* arg) {
    auto* r = static_cast<GetReply*>(arg);
    if (!*r->parse) return NL_OK;
    std::vector<nlattr*> tb(static_cast<size_t>(r->maxAttr) + 1, nullptr);
    if (genlmsg_parse(nlmsg_hdr(msg), 0, tb.data(), r->maxAttr, nullptr) < 0) {
        r->err = EBADMSG;
        return NL_STOP;
    }
    (*r->parse)(tb.data());
    r->got = true;
    return NL_OK;
}

int onGetError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    auto* r = static_cast<GetReply*>(arg);
    r->err = -e->error;
    r->done = true;
    return NL_STOP;
}

int onGetAck(nl_msg*, void* arg) {
    static_cast<GetReply*>(arg)->done = true;
    return NL_STOP;
}

}  // namespace

Result<int> Netlink::ethtoolRequest(int cmd, int headerAttr, int maxAttr, const std::string& ifname, const char* what,
                                const std::function<void(nlattr**)>& parse, const std::function<bool(nl_msg*)>& fill) {
    if (ethtoolFamily_ < 0) return EOPNOTSUPP;
    MsgGuard m{nlmsg_alloc()};
    if (!m.msg || !genlmsg_put(m.msg, NL_AUTO_PORT, NL_AUTO_SEQ, ethtoolFamily_, 0, NLM_F_ACK, static_cast<std::uint8_t>(cmd),
                               ETHTOOL_GENL_VERSION))
        return fail(ENOMEM, what, ifname);
    nlattr* hdr = nla_nest_start(m.msg, headerAttr);
    if (!hdr || nla_put_string(m.msg, ETHTOOL_A_HEADER_DEV_NAME, ifname.c_str()) < 0) return fail(ENOMEM, what, ifname);
    nla_nest_end(m.msg, hdr);
    if (fill && !fill(m.msg)) return fail(ENOMEM, what, ifname);
    CbGuard cb{nl_cb_alloc(NL_CB_CUSTOM)};
    if (!cb.cb) return fail(ENOMEM, what, ifname);
    GetReply reply;
    reply.parse = &parse;
    reply.maxAttr = maxAttr;
    nl_cb_set(cb.cb, NL_CB_VALID, NL_CB_CUSTOM, onGetValid, &reply);
    nl_cb_set(cb.cb, NL_CB_ACK, NL_CB_CUSTOM, onGetAck, &reply);
    nl_cb_err(cb.cb, NL_CB_CUSTOM, onGetError, &reply);
    if (int rc = nl_send_auto(genl_, m.msg); rc < 0) return fail(libnlToErrno(rc), what, ifname, nl_geterror(rc));
    while (!reply.done) {
        int rc = nl_recvmsgs(genl_, cb.cb);
        if (rc < 0 && !reply.done && reply.err == 0) return fail(libnlToErrno(rc), what, ifname, nl_geterror(rc));
        if (reply.err != 0) break;
    }
    if (reply.err == 0 && !reply.got && parse) return fail(EBADMSG, what, ifname, "no reply");
    return reply.err;
}

Result<EthtoolValues> Netlink::ethtoolGet(const EthtoolMessage& m, const std::string& ifname) {
    EthtoolValues out;
    int maxAttr = m.headerAttr;
    for (const auto& a : m.attrs) maxAttr = std::max(maxAttr, a.type);
    const std::string what = "ethtool " + m.name + " get";
    auto rc = ethtoolRequest(m.getCmd, m.headerAttr, maxAttr, ifname, what.c_str(), [&](nlattr** tb) {
        for (const auto& a : m.attrs) {
            const nlattr* at = tb[a.type];
            if (!at) continue;
            // A kernel newer than these headers may widen nothing here: a length that is not the
            // type's is left out rather than misread.
            if (a.u8 && nla_len(at) >= 1) out.values[a.name] = nla_get_u8(const_cast<nlattr*>(at));
            else if (!a.u8 && nla_len(at) >= 4) out.values[a.name] = nla_get_u32(const_cast<nlattr*>(at));
        }
    });
    if (!rc) return failWith(rc.error());
    if (*rc == EOPNOTSUPP) {
        out.error = std::strerror(EOPNOTSUPP);
        return out;
    }
    if (*rc != 0) return fail(*rc, what, ifname);
    out.supported = true;
    return out;
}

Result<void> Netlink::ethtoolSet(const EthtoolMessage& m, const std::string& ifname, const std::map<std::string, std::uint32_t>& values) {
    int maxAttr = m.headerAttr;
    for (const auto& a : m.attrs) maxAttr = std::max(maxAttr, a.type);
    const std::string what = "ethtool " + m.name + " set";
    for (const auto& entry : values) {
        const std::string& name = entry.first;
        if (std::none_of(m.attrs.begin(), m.attrs.end(), [&name](const EthtoolMessage::Attr& a) { return a.name == name; }))
            return fail(EINVAL, what, ifname, "no attribute '" + name + "'");
    }
    auto rc = ethtoolRequest(m.setCmd, m.headerAttr, maxAttr, ifname, what.c_str(), {}, [&](nl_msg* msg) {
        for (const auto& a : m.attrs) {
            auto v = values.find(a.name);
            if (v == values.end()) continue;
            if (a.u8 ? nla_put_u8(msg, a.type, static_cast<std::uint8_t>(v->second)) < 0 : nla_put_u32(msg, a.type, v->second) < 0)
                return false;
        }
        return true;
    });
    if (!rc) return failWith(rc.error());
    if (*rc != 0) return fail(*rc, what, ifname);
    return {};
}

}  // namespace rxtune
