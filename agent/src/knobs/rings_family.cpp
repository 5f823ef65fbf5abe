// Ring sizes (nic.rings.rx / .tx: max | N) through ethtool netlink (RINGS_GET / RINGS_SET). A device without rings (veth, tap) is skipped with
// the driver's answer. A ring change may reset the link: the events it fires find the ring at the
// size wanted, so the daemon writes nothing again.
#include <linux/ethtool_netlink.h>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/path_key.hpp"
#include "knobs/registry.hpp"
#include "knobs/rings_profile.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

namespace {

constexpr std::string_view kRingsDir = "ethtool-rings/";  // not a file: the device's ring sizes

using json = nlohmann::ordered_json;

// RINGS_GET / RINGS_SET's sizes, by the names detect shows (and fixtures hold).
const EthtoolMessage& messageRings() {
    static const EthtoolMessage m{"rings",
                                  ETHTOOL_MSG_RINGS_GET,
                                  ETHTOOL_MSG_RINGS_SET,
                                  ETHTOOL_A_RINGS_HEADER,
                                  {{ETHTOOL_A_RINGS_RX, "rx", false},
                                   {ETHTOOL_A_RINGS_RX_MAX, "rx_max", false},
                                   {ETHTOOL_A_RINGS_TX, "tx", false},
                                   {ETHTOOL_A_RINGS_TX_MAX, "tx_max", false}}};
    return m;
}

// A device's ring sizes (a Nic fact); unsupported where the driver has none (veth, tap).
struct Rings {
    bool supported = false;
    std::string error;
    std::uint32_t rx = 0, rxMax = 0, tx = 0, txMax = 0;
};
constexpr Slot<Rings> kRingsFacts{"rings"};

Result<Rings> askRings(NetlinkSource& nl, const std::string& dev) {
    auto v = nl.ethtoolGet(messageRings(), dev);
    if (!v) return failWith(v.error());
    Rings r;
    r.supported = v->supported;
    r.error = v->error;
    auto get = [&](const char* k) {
        auto it = v->values.find(k);
        return it == v->values.end() ? 0u : it->second;
    };
    r.rx = get("rx"), r.rxMax = get("rx_max"), r.tx = get("tx"), r.txMax = get("tx_max");
    return r;
}

const Rings* ringsOf(const Nic& n) { return n.fact(kRingsFacts); }

const RingsIntent& intentOfRings(const Profile& p) { return ringsIntentOf(p); }

// What says the RX ring runs short, "" for nothing: the device's drops and missed frames (drivers
// count a full ring in one or the other), and softnet's squeezes and drops on the CPUs that take
// the device's RX IRQ(s) (a squeeze: the poll's budget ran out with frames still in the ring; a
// drop there: that CPU's backlog was full). All since boot, like the device's counters.
std::string ringPressure(const Nic& nic, const HostSnapshot& snap) {
    std::vector<std::string> parts;
    std::string device;
    if (nic.stats.rxDropped > 0) device = std::to_string(nic.stats.rxDropped) + " dropped";
    if (nic.stats.rxMissed > 0) device += (device.empty() ? "" : " and ") + std::to_string(nic.stats.rxMissed) + " missed";
    if (!device.empty()) parts.push_back("the device counts " + device + " packets");
    if (const SoftnetByCpu* softnet = softnetOf(snap)) {
        const CpuSet cpus = irqCpus(nic);
        std::uint64_t dropped = 0, squeezed = 0;
        for (unsigned c : cpus.cpus())
            if (auto it = softnet->find(c); it != softnet->end()) {
                dropped += it->second.dropped;
                squeezed += it->second.squeezed;
            }
        if (dropped + squeezed > 0)
            parts.push_back("softnet counts " + std::to_string(squeezed) + " squeezes and " + std::to_string(dropped) +
                            " drops on CPU(s) " + cpus.toList() + ", which take its RX IRQ");
    }
    std::string out;
    for (const auto& s : parts) out += (out.empty() ? "" : " and ") + s;
    return out;
}

class RingsFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "rings"; }
    std::string id(const KnobKey& k) const override { return k.device + " ring " + k.name; }
    std::string path(const KnobKey& k) const override { return paths::netDev(k.device) + "/" + std::string(kRingsDir) + k.name; }
    std::string settingLabel(const KnobKey& k) const override { return "ring_" + k.name; }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto dev = pathkey::netDevice(p);
        if (!dev) return std::nullopt;
        auto which = pathkey::after(dev->second, kRingsDir);
        if (!which || (*which != "rx" && *which != "tx")) return std::nullopt;
        return KnobKey{"rings", dev->first, std::string(*which)};
    }

    // Physical NICs' rings are read for every plan (the advice below); virtual devices have none.
    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        const bool asked = intentOfRings(profile).rx.set() || intentOfRings(profile).tx.set();
        bool couldGrow = false;
        for (auto& n : snap.nics) {
            if (!ringsOf(n) && (asked || n.kind == "physical")) {
                auto r = askRings(io.nl, n.name);
                if (!r) return failWith(r.error().withContext("interface " + n.name));
                n.facts.set(kRingsFacts, *r);
            }
            const Rings* r = ringsOf(n);
            couldGrow = couldGrow || (r && r->supported && r->rx < r->rxMax);
        }
        // The advice below also asks softnet, for the CPUs that take a ring's IRQ.
        if (couldGrow) return readSoftnetInto(io.fs, snap);
        return {};
    }
    Result<void> readDetect(const SnapshotIo& io, HostSnapshot& snap) const override {
        for (auto& n : snap.nics) {
            auto r = askRings(io.nl, n.name);
            if (!r) return failWith(r.error().withContext("interface " + n.name));
            n.facts.set(kRingsFacts, *r);
        }
        return {};
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        const Nic& nic = d.nic;
        const RingsIntent& want = intentOfRings(in.profile);
        const Rings* rings = ringsOf(nic);
        if (rings && rings->supported && !want.rx.set() && rings->rx < rings->rxMax)
            if (auto why = ringPressure(nic, in.snap); !why.empty())
                p.advice.push_back({nic.name, "RX ring " + std::to_string(rings->rx) + " of at most " + std::to_string(rings->rxMax) +
                                                  " while " + why + ": a larger ring absorbs bursts (nic.rings.rx: max)"});
        auto one = [&](const char* which, const RingSize& size, std::uint32_t now, std::uint32_t max) {
            if (!size.set()) return;
            const KnobKey k{"rings", nic.name, which};
            if (!rings || !rings->supported) {
                p.skipped.push_back({id(k), "the driver has no rings to set (" + (rings ? rings->error : std::string("not read")) + ")"});
                return;
            }
            const std::uint32_t target = size.max ? max : *size.n;
            if (target > max) {
                p.skipped.push_back({id(k), std::to_string(target) + " is above the driver's maximum " + std::to_string(max)});
                return;
            }
            p.settings.push_back(makeSetting(*this, k, ValueKind::kInteger, std::to_string(now), std::to_string(target),
                                             "profile " + want.where.str() + " (nic.rings." + which + ": " +
                                                 (size.max ? "max" : std::to_string(*size.n)) + "), ethtool RINGS_SET"));
        };
        if (rings) {
            one("rx", want.rx, rings->rx, rings->rxMax);
            one("tx", want.tx, rings->tx, rings->txMax);
        } else {
            one("rx", want.rx, 0, 0);
            one("tx", want.tx, 0, 0);
        }
        return {};
    }

    bool fileBacked(const KnobKey&) const override { return false; }
    Result<std::string> read(const KnobIo& io, const KnobKey& k, const std::string&) const override {
        if (!io.services.get<NetlinkSource>()) return fail(ENOTSUP, "ethtool RINGS_GET", k.device, "no netlink here");
        auto r = askRings(*io.services.get<NetlinkSource>(), k.device);
        if (!r) return failWith(r.error());
        if (!r->supported) return fail(EOPNOTSUPP, "ethtool RINGS_GET", k.device, r->error);
        return std::to_string(k.name == "rx" ? r->rx : r->tx);
    }
    Result<void> write(const KnobIo& io, const KnobKey& k, const std::string&, const std::string& value) const override {
        if (!io.services.get<NetlinkSource>()) return fail(ENOTSUP, "ethtool RINGS_SET", k.device, "no netlink here");
        std::uint32_t n = 0;
        if (!parseUnsigned(trimmed(value), n)) return fail(EINVAL, "ethtool RINGS_SET", k.device, "'" + value + "' is not a ring size");
        return io.services.get<NetlinkSource>()->ethtoolSet(messageRings(), k.device, {{k.name, n}});
    }
    bool exists(const KnobIo& io, const KnobKey& k, const std::string&) const override { return io.fs.exists(paths::netDev(k.device)); }
    bool writable(const KnobIo&, const KnobKey&, const std::string&) const override { return true; }
    std::string where(const KnobIo&, const KnobKey& k, const std::string&) const override { return "ethtool rings of " + k.device; }

    void detectJson(const Nic& n, json& j) const override {
        if (const Rings* r = ringsOf(n)) {
            if (r->supported)
                j["rings"] = {{"rx", r->rx}, {"rx_max", r->rxMax}, {"tx", r->tx}, {"tx_max", r->txMax}};
            else
                j["rings"] = {{"supported", false}, {"error", r->error}};
        }
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        if (const Rings* r = ringsOf(n)) {
            if (r->supported)
                out << "    rings rx " << r->rx << "/" << r->rxMax << " tx " << r->tx << "/" << r->txMax << "\n";
            else
                out << "    rings: " << r->error << "\n";
        }
    }
};

const RingsFamily kRingsFamily;
const FamilyRegistration kRingsRegistered{kRingsFamily, 250};

}  // namespace

}  // namespace rxtune
