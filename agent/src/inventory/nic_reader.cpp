#include <net/if.h>
#include <net/if_arp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "core/parallel.hpp"
#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/snapshot.hpp"
#include "sys/napi_threads.hpp"

namespace rxtune {

namespace {

constexpr unsigned kIffTap = 0x0002;   // IFF_TAP in tun_flags
constexpr unsigned kIffNapi = 0x0010;  // IFF_NAPI in tun_flags
constexpr const char* kOneTxQueue = "one TX queue: not used";

// A tun driver device's tun_flags ("0x1012") at rel; 0 where absent or unreadable.
unsigned tunFlags(const FileTree& fs, const std::string& rel) {
    auto flags = fs.read(rel);
    unsigned v = 0;
    if (flags) {
        std::string t = trimmed(*flags);
        if (t.starts_with("0x")) t = t.substr(2);
        std::from_chars(t.data(), t.data() + t.size(), v, 16);
    }
    return v;
}

// dev: the device's own directory (sys/class/net/<name>) as a tree.
std::string kindOf(const FileTree& dev, const LinkInfo& li, bool hasDevice) {
    if (li.kind == "tun") return (tunFlags(dev, "tun_flags") & kIffTap) ? "tap" : "tun";
    if (!li.kind.empty()) return li.kind;
    if (li.arptype == ARPHRD_LOOPBACK || (li.flags & IFF_LOOPBACK)) return "loopback";
    return hasDevice ? "physical" : "virtual";
}

Result<void> readQueues(const FileTree& dev, Nic& nic) {
    auto entries = dev.list("queues");
    if (!entries) return failWith(entries.error());
    const auto txQueues = std::count_if(entries->begin(), entries->end(), [](const std::string& e) { return e.starts_with("tx-"); });
    for (const auto& e : *entries) {
        unsigned idx = 0;
        if (e.starts_with("rx-") && parseUnsigned(std::string_view(e).substr(3), idx)) {
            RxQueue q;
            q.index = idx;
            const auto maskPath = paths::queueRel(paths::QueueDir::kRx, idx, "rps_cpus");
            if (auto text = dev.read(maskPath)) {
                auto set = CpuSet::parseMask(*text);
                if (!set) return fail(EINVAL, "parse", dev.full(maskPath), set.error().detail);
                q.rpsCpus = *set;
                q.rpsCpusRaw = std::move(*text);
            } else if (text.error().code != ENOENT) {
                return failWith(text.error());
            }
            const auto cntPath = paths::queueRel(paths::QueueDir::kRx, idx, "rps_flow_cnt");
            if (auto text = dev.read(cntPath)) {
                if (!parseUnsigned(trimmed(*text), q.rpsFlowCnt))
                    return fail(EINVAL, "parse", dev.full(cntPath), "'" + trimmed(*text) + "' is not a count");
                q.rpsFlowCntRaw = std::move(*text);
            } else if (text.error().code != ENOENT) {
                return failWith(text.error());
            }
            nic.rx.push_back(std::move(q));
        } else if (e.starts_with("tx-") && parseUnsigned(std::string_view(e).substr(3), idx)) {
            TxQueue q;
            q.index = idx;
            const auto xpsPath = paths::queueRel(paths::QueueDir::kTx, idx, "xps_cpus");
            if (txQueues == 1) {
                // The kernel hides xps_cpus there (the read fails) and picks the one queue without
                // looking at XPS (netdev_core_pick_tx): on a node of veths, one open per device saved.
                q.xpsError = kOneTxQueue;
            } else if (auto text = dev.read(xpsPath)) {
                auto set = CpuSet::parseMask(*text);
                if (!set) return fail(EINVAL, "parse", dev.full(xpsPath), set.error().detail);
                q.xpsCpus = *set;
                q.xpsRaw = std::move(*text);
            } else {
                // The kernel refuses xps_cpus on some devices (ENOENT, EINVAL); report, don't fail.
                q.xpsError = std::strerror(text.error().code);
            }
            nic.tx.push_back(std::move(q));
        }
    }
    auto byIndex = [](const auto& a, const auto& b) { return a.index < b.index; };
    std::sort(nic.rx.begin(), nic.rx.end(), byIndex);
    std::sort(nic.tx.begin(), nic.tx.end(), byIndex);
    return {};
}

// A virtio NIC's virtio device ("virtio0"), or "" for another bus.
std::string virtioDevice(const FileTree& dev) {
    auto sub = dev.readLink("device/subsystem");
    if (!sub || !sub->ends_with("/virtio")) return "";
    auto target = dev.readLink("device");
    if (!target) return "";
    const auto slash = target->rfind('/');
    return slash == std::string::npos ? *target : target->substr(slash + 1);
}

// IRQ numbers: MSI vectors of the device (for virtio, of the PCI function above it), the legacy
// line, and any /proc/interrupts action named after the interface ("eth0-TxRx-0") or, for a
// virtio-mmio device (no PCI function: microVMs, arm64 virt), after its virtio device: its one
// interrupt's action is "virtio0" (virtio_mmio.c requests it under the virtio device's name).
std::set<unsigned> irqNumbers(const FileTree& dev, const Nic& nic, const InterruptTable& table, bool hasDevice) {
    std::set<unsigned> out;
    const std::string virtio = hasDevice ? virtioDevice(dev) : "";
    if (hasDevice) {
        std::vector<std::string> msiDirs = {"device/msi_irqs"};
        if (!virtio.empty()) msiDirs.push_back("device/../msi_irqs");
        for (const auto& d : msiDirs) {
            if (auto names = dev.list(d)) {
                for (const auto& n : *names) {
                    unsigned irq = 0;
                    if (parseUnsigned(n, irq)) out.insert(irq);
                }
                if (!out.empty()) break;
            }
        }
        if (out.empty())
            if (auto legacy = dev.read("device/irq")) {
                unsigned irq = 0;
                if (parseUnsigned(trimmed(*legacy), irq) && irq != 0) out.insert(irq);
            }
    }
    for (const auto& line : table.lines) {
        if (!line.numeric) continue;
        for (const auto& a : line.actions)
            if (a == nic.name || a.starts_with(nic.name + "-") || a.starts_with(nic.name + "@") || (!virtio.empty() && a == virtio))
                out.insert(line.irq);
    }
    return out;
}

Result<void> readIrqs(const FileTree& fs, const FileTree& dev, const InterruptTable& table, Nic& nic, bool hasDevice) {
    const std::string virtio = hasDevice ? virtioDevice(dev) : "";
    for (unsigned irq : irqNumbers(dev, nic, table, hasDevice)) {
        Irq i;
        i.number = irq;
        for (const auto& line : table.lines) {
            if (!line.numeric || line.irq != irq) continue;
            for (const auto& a : line.actions) i.name += (i.name.empty() ? "" : ",") + a;
            for (auto c : line.counts) i.total += c;
        }
        i.role = irqRole(i.name);
        // A virtio-mmio NIC's one interrupt ("virtio0") serves receive and transmit both.
        if (i.role == "other" && !virtio.empty() && i.name == virtio) i.role = "rxtx";
        const auto affPath = paths::irqFile(irq, "smp_affinity_list");
        if (auto text = fs.read(affPath)) {
            auto set = CpuSet::parseList(*text);
            if (!set) return fail(EINVAL, "parse", fs.full(affPath), set.error().detail);
            i.affinity = *set;
        } else if (text.error().code != ENOENT) {
            return failWith(text.error());
        }
        const auto effPath = paths::irqFile(irq, "effective_affinity_list");
        if (auto text = fs.read(effPath)) {
            auto set = CpuSet::parseList(*text);
            if (!set) return fail(EINVAL, "parse", fs.full(effPath), set.error().detail);
            i.effective = *set;
        }
        nic.irqs.push_back(std::move(i));
    }
    // The device's only interrupt, named after it (r8169's one vector, a platform NIC's "eth0"),
    // serves receive and transmit both. Beside others (igb, e1000e) that name is the link's.
    if (nic.irqs.size() == 1 && nic.irqs[0].role == "other" && nic.irqs[0].name == nic.name) nic.irqs[0].role = "rxtx";
    return {};
}

// net: sys/class/net as a tree (fs, the root, serves proc/irq); dumped: every device's channels
// from one ethtool dump, or null to ask per device.
Result<Nic> readNic(const FileTree& fs, const FileTree& net, NetlinkSource& nl, const InterruptTable& table, const LinkInfo& li,
                    const std::map<std::string, Channels>* dumped) {
    Nic nic;
    nic.name = li.name;
    nic.ifindex = li.ifindex;
    // A device with no parent (veth, tun, bridge: most of a node's thousands) has no IRQs, NUMA
    // node, PCI function or real speed to read: one stat says so, instead of a handful of failing
    // opens.
    auto dev = net.subtree(li.name);
    if (!dev) return failWith(dev.error());
    const bool hasDevice = (*dev)->exists("device");
    nic.kind = kindOf(**dev, li, hasDevice);
    nic.operstate = li.operstate;
    nic.mtu = li.mtu;
    nic.numRxQueues = li.numRxQueues;
    nic.numTxQueues = li.numTxQueues;
    nic.stats = li.stats;
    if (auto r = readQueues(**dev, nic); !r) return failWith(r.error());
    if (hasDevice) {
        if (auto sp = (*dev)->read("speed")) {
            std::int64_t v = 0;
            if (parseSigned(trimmed(*sp), v) && v > 0) nic.speedMbps = v;
        }
        if (auto numa = (*dev)->read("device/numa_node")) {
            std::int64_t v = -1;
            if (!parseSigned(trimmed(*numa), v))
                return fail(EINVAL, "parse", (*dev)->full("device/numa_node"), "'" + trimmed(*numa) + "' is not a node number");
            nic.numaNode = static_cast<int>(v);
        }
    }
    if (auto r = readIrqs(fs, **dev, table, nic, hasDevice); !r) return failWith(r.error());
    if (dumped) {
        if (auto it = dumped->find(li.name); it != dumped->end()) {
            nic.channels = it->second;
        } else {
            nic.channels.source = "ethtool-netlink";  // the dump leaves out devices that do not answer
            nic.channels.error = std::strerror(EOPNOTSUPP);
        }
    } else if (auto ch = nl.channels(li.name)) {
        nic.channels = *ch;
    } else if (ch.error().code == ENODEV) {
        return failWith(ch.error());
    } else {
        // Channels are one fact of many: unavailable, with the kernel's answer, and detect goes on.
        nic.channels.error = ch.error().message();
    }
    auto drv = nl.driverInfo(li.name);
    if (!drv) return failWith(drv.error());
    nic.driver = *drv;
    nic.verdict = classify(nic);
    return nic;
}

}  // namespace

Result<std::vector<Nic>> readNics(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only, bool skipMissing) {
    // Named devices are asked for one by one: on a host with thousands of devices, an event about
    // one of them costs the same as on a host with two (no dump).
    Result<std::vector<LinkInfo>> links = std::vector<LinkInfo>();
    if (only.empty()) {
        links = nl.links();
        if (!links) return failWith(links.error());
    }
    for (const auto& want : only) {
        auto l = nl.link(want);
        if (!l) return failWith(l.error());
        if (!*l) {
            if (skipMissing) continue;
            return fail(ENODEV, "interface", want, "no such device in this network namespace");
        }
        links->push_back(std::move(**l));
    }
    auto byIndex = [](const LinkInfo& a, const LinkInfo& b) { return a.ifindex < b.ifindex; };
    std::sort(links->begin(), links->end(), byIndex);
    links->erase(std::unique(links->begin(), links->end(), [](const LinkInfo& a, const LinkInfo& b) { return a.ifindex == b.ifindex; }),
                 links->end());
    auto irqText = fs.read("proc/interrupts");
    if (!irqText) return failWith(irqText.error());
    auto table = parseInterrupts(*irqText);
    if (!table) return failWith(table.error().withContext(fs.full("proc/interrupts")));
    // A whole-host snapshot asks for every device's channels at once (one dump, not one request each).
    // A kernel that refuses the dump (Debian 12's 6.1 did, for a header it did not like) is asked
    // per device instead: the dump saves requests, it is not the only way to the answer.
    std::optional<std::map<std::string, Channels>> dumped;
    if (only.empty() && links->size() > 1)
        if (auto all = nl.allChannels()) dumped = std::move(*all);
    // Names from the kernel still go through the same check before they become paths.
    for (const auto& li : *links)
        if (auto ok = validateIfName(li.name); !ok) return failWith(ok.error());
    // With the channels dumped, what is left per device is sysfs reads and one ioctl, all safe to
    // run side by side; the kernel's sysfs lookups are the cost, so a host with hundreds of devices
    // spreads them over a few threads.
    // Each device's directory is looked up from sys/class/net, opened once, not from the root.
    const size_t n = links->size();
    std::vector<Result<Nic>> got(n);
    if (n > 0) {
        auto net = fs.subtree(paths::netClass());
        if (!net) return failWith(net.error());
        forEachOn(dumped ? threadsFor(n) : 1, n,
                  [&](size_t i) { got[i] = readNic(fs, **net, nl, *table, (*links)[i], dumped ? &*dumped : nullptr); });
    }
    std::vector<Nic> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        if (!got[i]) return failWith(got[i].error().withContext("interface " + (*links)[i].name));
        out.push_back(std::move(*got[i]));
    }
    return out;
}

Result<HostSnapshot> takeSnapshot(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only, bool skipMissing) {
    HostSnapshot s;
    auto topo = readTopology(fs);
    if (!topo) return failWith(topo.error().withContext("host"));
    s.host = std::move(*topo);
    auto nics = readNics(fs, nl, only, skipMissing);
    if (!nics) return failWith(nics.error());
    s.nics = std::move(*nics);
    return s;
}

Result<void> readNapiState(const FileTree& fs, NetlinkSource& nl, Nic& nic) {
    if (napiOf(nic)) return {};
    NapiState st;
    auto opt = [&](std::string_view file) -> Result<std::optional<std::string>> {
        const std::string path = paths::netDevFile(nic.name, file);
        if (!fs.exists(path)) return std::optional<std::string>();
        auto v = fs.read(path);
        if (!v) return failWith(v.error());
        return std::optional<std::string>(*v);
    };
    for (auto [file, field] : {std::pair{"threaded", &st.threaded}, std::pair{"gro_flush_timeout", &st.groFlushTimeout},
                               std::pair{"napi_defer_hard_irqs", &st.deferHardIrqs}}) {
        auto v = opt(file);
        if (!v) return failWith(v.error().withContext("interface " + nic.name));
        *field = std::move(*v);
    }
    // With threaded off there is no kthread to find by name: napi-get's answer is the whole one.
    const bool threadedOn = st.threaded && trimmed(*st.threaded) != "0";
    auto inst = napiInstances(fs, nl, nic.name, nic.ifindex, &st.source, threadedOn);
    if (!inst) return failWith(inst.error());
    st.instances = std::move(*inst);
    auto features = nl.napiFeatures();
    if (!features) return failWith(features.error().withContext("interface " + nic.name));
    st.features = *features;
    if (fs.exists("proc/sys/kernel/osrelease"))
        if (auto rel = fs.read("proc/sys/kernel/osrelease")) st.kernel = trimmed(*rel);
    if (!st.instances.empty()) {
        auto queues = nl.napiQueues(nic.ifindex);
        if (!queues) return failWith(queues.error().withContext("interface " + nic.name));
        st.queues = std::move(*queues);
    }
    if (st.instances.empty() && (nic.kind == "tap" || nic.kind == "tun"))
        st.unlisted = (tunFlags(fs, paths::netDevFile(nic.name, "tun_flags")) & kIffNapi) != 0;
    nic.facts.set(kNapiFacts, std::move(st));
    return {};
}

}  // namespace rxtune
