#include <net/if.h>
#include <net/if_arp.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/snapshot.hpp"

namespace rxtune {

namespace {

constexpr unsigned kIffTap = 0x0002;  // IFF_TAP in tun_flags

std::string kindOf(const FileTree& fs, const LinkInfo& li) {
    if (li.kind == "tun") {
        auto flags = fs.read(paths::netDevFile(li.name, "tun_flags"));
        unsigned v = 0;
        if (flags) {
            std::string t = trimmed(*flags);
            if (t.starts_with("0x")) t = t.substr(2);
            std::from_chars(t.data(), t.data() + t.size(), v, 16);
        }
        return (v & kIffTap) ? "tap" : "tun";
    }
    if (!li.kind.empty()) return li.kind;
    if (li.arptype == ARPHRD_LOOPBACK || (li.flags & IFF_LOOPBACK)) return "loopback";
    if (fs.exists(paths::netDevFile(li.name, "device"))) return "physical";
    return "virtual";
}

Result<void> readQueues(const FileTree& fs, Nic& nic) {
    auto entries = fs.list(paths::queuesDir(nic.name));
    if (!entries) return failWith(entries.error());
    for (const auto& e : *entries) {
        unsigned idx = 0;
        if (e.starts_with("rx-") && parseUnsigned(std::string_view(e).substr(3), idx)) {
            RxQueue q;
            q.index = idx;
            const auto maskPath = paths::queueFile(nic.name, paths::QueueDir::kRx, idx, "rps_cpus");
            if (auto text = fs.read(maskPath)) {
                auto set = CpuSet::parseMask(*text);
                if (!set) return fail(EINVAL, "parse", fs.full(maskPath), set.error().detail);
                q.rpsCpus = *set;
            } else if (text.error().code != ENOENT) {
                return failWith(text.error());
            }
            const auto cntPath = paths::queueFile(nic.name, paths::QueueDir::kRx, idx, "rps_flow_cnt");
            if (auto text = fs.read(cntPath)) {
                if (!parseUnsigned(trimmed(*text), q.rpsFlowCnt))
                    return fail(EINVAL, "parse", fs.full(cntPath), "'" + trimmed(*text) + "' is not a count");
            } else if (text.error().code != ENOENT) {
                return failWith(text.error());
            }
            nic.rx.push_back(std::move(q));
        } else if (e.starts_with("tx-") && parseUnsigned(std::string_view(e).substr(3), idx)) {
            TxQueue q;
            q.index = idx;
            const auto xpsPath = paths::queueFile(nic.name, paths::QueueDir::kTx, idx, "xps_cpus");
            if (auto text = fs.read(xpsPath)) {
                auto set = CpuSet::parseMask(*text);
                if (!set) return fail(EINVAL, "parse", fs.full(xpsPath), set.error().detail);
                q.xpsCpus = *set;
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

// IRQ numbers: MSI vectors of the device (for virtio, of the PCI function above it), the legacy
// line, and any /proc/interrupts action named after the interface ("eth0-TxRx-0").
std::set<unsigned> irqNumbers(const FileTree& fs, const Nic& nic, const InterruptTable& table) {
    std::set<unsigned> out;
    const std::string dev = paths::netDevFile(nic.name, "device");
    std::vector<std::string> msiDirs = {dev + "/msi_irqs"};
    if (auto sub = fs.readLink(dev + "/subsystem"); sub && sub->ends_with("/virtio")) msiDirs.push_back(dev + "/../msi_irqs");
    for (const auto& d : msiDirs) {
        if (auto names = fs.list(d)) {
            for (const auto& n : *names) {
                unsigned irq = 0;
                if (parseUnsigned(n, irq)) out.insert(irq);
            }
            if (!out.empty()) break;
        }
    }
    if (out.empty()) {
        if (auto legacy = fs.read(dev + "/irq")) {
            unsigned irq = 0;
            if (parseUnsigned(trimmed(*legacy), irq) && irq != 0) out.insert(irq);
        }
    }
    for (const auto& line : table.lines) {
        if (!line.numeric) continue;
        for (const auto& a : line.actions)
            if (a == nic.name || a.starts_with(nic.name + "-") || a.starts_with(nic.name + "@")) out.insert(line.irq);
    }
    return out;
}

Result<void> readIrqs(const FileTree& fs, const InterruptTable& table, Nic& nic) {
    for (unsigned irq : irqNumbers(fs, nic, table)) {
        Irq i;
        i.number = irq;
        for (const auto& line : table.lines) {
            if (!line.numeric || line.irq != irq) continue;
            for (const auto& a : line.actions) i.name += (i.name.empty() ? "" : ",") + a;
            for (auto c : line.counts) i.total += c;
        }
        i.role = irqRole(i.name);
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
    return {};
}

Result<Nic> readNic(const FileTree& fs, NetlinkSource& nl, const InterruptTable& table, const LinkInfo& li) {
    Nic nic;
    nic.name = li.name;
    nic.ifindex = li.ifindex;
    nic.kind = kindOf(fs, li);
    nic.operstate = li.operstate;
    nic.mtu = li.mtu;
    nic.numRxQueues = li.numRxQueues;
    nic.numTxQueues = li.numTxQueues;
    nic.stats = li.stats;
    if (auto sp = fs.read(paths::netDevFile(li.name, "speed"))) {
        std::int64_t v = 0;
        if (parseSigned(trimmed(*sp), v) && v > 0) nic.speedMbps = v;
    }
    if (auto r = readQueues(fs, nic); !r) return failWith(r.error());
    if (auto numa = fs.read(paths::netDevFile(li.name, "device/numa_node"))) {
        std::int64_t v = -1;
        if (!parseSigned(trimmed(*numa), v))
            return fail(EINVAL, "parse", fs.full(paths::netDevFile(li.name, "device/numa_node")),
                        "'" + trimmed(*numa) + "' is not a node number");
        nic.numaNode = static_cast<int>(v);
    }
    if (auto r = readIrqs(fs, table, nic); !r) return failWith(r.error());
    auto ch = nl.channels(li.name);
    if (!ch) return failWith(ch.error());
    nic.channels = *ch;
    auto drv = nl.driverInfo(li.name);
    if (!drv) return failWith(drv.error());
    nic.driver = *drv;
    nic.verdict = classify(nic);
    return nic;
}

}  // namespace

Result<std::vector<Nic>> readNics(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only) {
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
        if (!*l) return fail(ENODEV, "interface", want, "no such device in this network namespace");
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
    std::vector<Nic> out;
    for (const auto& li : *links) {
        if (!only.empty() && std::find(only.begin(), only.end(), li.name) == only.end()) continue;
        // Names from the kernel still go through the same check before they become paths.
        if (auto ok = validateIfName(li.name); !ok) return failWith(ok.error());
        auto nic = readNic(fs, nl, *table, li);
        if (!nic) return failWith(nic.error().withContext("interface " + li.name));
        out.push_back(std::move(*nic));
    }
    return out;
}

Result<HostSnapshot> takeSnapshot(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only) {
    HostSnapshot s;
    auto topo = readTopology(fs);
    if (!topo) return failWith(topo.error().withContext("host"));
    s.host = std::move(*topo);
    auto nics = readNics(fs, nl, only);
    if (!nics) return failWith(nics.error());
    s.nics = std::move(*nics);
    return s;
}

}  // namespace rxtune
