// Interrupt coalescing (nic.coalesce: rx_usecs, rx_frames, tx_usecs, tx_frames, adaptive_rx,
// adaptive_tx) through ethtool netlink (COALESCE_GET / COALESCE_SET): how long and for how many
// frames a device holds an interrupt back. A parameter the driver does not report is one it does
// not offer (the kernel puts only its supported ones in the reply) and is skipped, as is a device
// without coalescing ops (veth) with the driver's answer. Sets only what the profile asks; advises
// adaptive RX where the driver offers it off and the CPUs of the device's RX IRQ run out of budget.
// detect shows every device's values.
#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/coalesce_profile.hpp"
#include "knobs/path_key.hpp"
#include "knobs/registry.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kCoalesceDir = "ethtool-coalesce/";  // not a file: the device's coalescing

const EthtoolMessage::Attr* attrOf(std::string_view name) {
    for (const auto& a : coalesceMessage().attrs)
        if (a.name == name) return &a;
    return nullptr;
}

constexpr Slot<EthtoolValues> kCoalesceFacts{"coalesce"};

const EthtoolValues* factsOf(const Nic& n) { return n.fact(kCoalesceFacts); }

std::string shown(const EthtoolMessage::Attr& a, std::uint32_t v) { return a.u8 ? (v ? "on" : "off") : std::to_string(v); }

// What says the RX IRQ's CPUs run out of budget, "" for nothing: softnet's squeezes there (the
// poll's budget or time ran out with frames still waiting), since boot.
std::string squeezes(const Nic& nic, const HostSnapshot& snap) {
    const SoftnetByCpu* softnet = softnetOf(snap);
    if (!softnet) return "";
    const CpuSet cpus = irqCpus(nic);
    std::uint64_t squeezed = 0;
    for (unsigned c : cpus.cpus())
        if (auto it = softnet->find(c); it != softnet->end()) squeezed += it->second.squeezed;
    if (squeezed == 0) return "";
    return "softnet counts " + std::to_string(squeezed) + " squeezes on CPU(s) " + cpus.toList() + ", which take its RX IRQ";
}

class CoalesceFamily final : public KnobFamily {
public:
    std::string_view name() const override { return kCoalesceName; }
    std::string id(const KnobKey& k) const override { return k.device + " coalesce " + k.name; }
    std::string path(const KnobKey& k) const override { return paths::netDev(k.device) + "/" + std::string(kCoalesceDir) + k.name; }
    std::string settingLabel(const KnobKey& k) const override { return "coalesce_" + k.name; }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto dev = pathkey::netDevice(p);
        if (!dev) return std::nullopt;
        auto which = pathkey::after(dev->second, kCoalesceDir);
        if (!which || !attrOf(*which)) return std::nullopt;
        return KnobKey{std::string(kCoalesceName), dev->first, std::string(*which)};
    }

    // Physical NICs' coalescing is read for every plan (the advice below), any chosen device's
    // where the profile sets it; virtual devices mostly have none.
    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        const bool asked = coalesceIntentOf(profile) != nullptr;
        bool couldAdapt = false;
        for (auto& n : snap.nics) {
            if (!factsOf(n) && (asked || n.kind == "physical"))
                if (auto r = read(io, n); !r) return r;
            const EthtoolValues* c = factsOf(n);
            couldAdapt = couldAdapt || (c && c->supported && c->values.count("adaptive_rx") && c->values.at("adaptive_rx") == 0);
        }
        if (couldAdapt) return readSoftnetInto(io.fs, snap);
        return {};
    }
    Result<void> readDetect(const SnapshotIo& io, HostSnapshot& snap) const override {
        for (auto& n : snap.nics)
            if (auto r = read(io, n); !r) return r;
        return {};
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        const Nic& nic = d.nic;
        const EthtoolValues* now = factsOf(nic);
        const CoalesceIntent* want = coalesceIntentOf(in.profile);
        if (now && now->supported && (!want || !want->values.count("adaptive_rx")))
            if (auto a = now->values.find("adaptive_rx"); a != now->values.end() && a->second == 0)
                if (auto why = squeezes(nic, in.snap); !why.empty())
                    p.advice.push_back({nic.name, "adaptive RX coalescing is off while " + why +
                                                      ": the driver can batch interrupts under load and answer at once when idle (nic.coalesce.adaptive_rx: true)"});
        if (!want) return {};
        for (const auto& a : coalesceMessage().attrs) {
            auto v = want->values.find(a.name);
            if (v == want->values.end()) continue;
            const KnobKey k{std::string(kCoalesceName), nic.name, a.name};
            if (!now || !now->supported) {
                p.skipped.push_back({id(k), "the driver has no coalescing to set (" + (now ? now->error : std::string("not read")) + ")"});
                continue;
            }
            auto cur = now->values.find(a.name);
            if (cur == now->values.end()) {
                p.skipped.push_back({id(k), "the driver does not offer " + a.name + " (ethtool -c shows it n/a)"});
                continue;
            }
            p.settings.push_back(makeSetting(*this, k, a.u8 ? ValueKind::kWord : ValueKind::kInteger, shown(a, cur->second),
                                             shown(a, v->second),
                                             "profile " + want->where.str() + " (nic.coalesce." + a.name + "), ethtool COALESCE_SET"));
        }
        return {};
    }

    bool fileBacked(const KnobKey&) const override { return false; }
    Result<std::string> read(const KnobIo& io, const KnobKey& k, const std::string&) const override {
        if (!io.services.get<NetlinkSource>()) return fail(ENOTSUP, "ethtool coalesce get", k.device, "no netlink here");
        const auto* a = attrOf(k.name);
        if (!a) return fail(EINVAL, "ethtool coalesce get", k.device, "no parameter '" + k.name + "'");
        auto c = io.services.get<NetlinkSource>()->ethtoolGet(coalesceMessage(), k.device);
        if (!c) return failWith(c.error());
        if (!c->supported) return fail(EOPNOTSUPP, "ethtool coalesce get", k.device, c->error);
        auto v = c->values.find(k.name);
        if (v == c->values.end()) return fail(EOPNOTSUPP, "ethtool coalesce get", k.device, "the driver does not offer " + k.name);
        return shown(*a, v->second);
    }
    Result<void> write(const KnobIo& io, const KnobKey& k, const std::string&, const std::string& value) const override {
        if (!io.services.get<NetlinkSource>()) return fail(ENOTSUP, "ethtool coalesce set", k.device, "no netlink here");
        const auto* a = attrOf(k.name);
        if (!a) return fail(EINVAL, "ethtool coalesce set", k.device, "no parameter '" + k.name + "'");
        const std::string v = trimmed(value);
        std::uint32_t n = 0;
        if (a->u8 && (v == "on" || v == "off")) n = v == "on" ? 1 : 0;
        else if (a->u8 || !parseUnsigned(v, n))
            return fail(EINVAL, "ethtool coalesce set", k.device, "'" + value + "' is not a value of " + k.name);
        return io.services.get<NetlinkSource>()->ethtoolSet(coalesceMessage(), k.device, {{k.name, n}});
    }
    bool exists(const KnobIo& io, const KnobKey& k, const std::string&) const override { return io.fs.exists(paths::netDev(k.device)); }
    bool writable(const KnobIo&, const KnobKey&, const std::string&) const override { return true; }
    std::string where(const KnobIo&, const KnobKey& k, const std::string&) const override { return "ethtool coalescing of " + k.device; }

    void detectJson(const Nic& n, json& j) const override {
        const EthtoolValues* c = factsOf(n);
        if (!c) return;
        if (!c->supported) {
            j["coalesce"] = {{"supported", false}, {"error", c->error}};
            return;
        }
        json out = json::object();
        for (const auto& a : coalesceMessage().attrs) {
            auto v = c->values.find(a.name);
            out[a.name] = v == c->values.end() ? json(nullptr) : a.u8 ? json(v->second != 0) : json(v->second);
        }
        j["coalesce"] = std::move(out);
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        const EthtoolValues* c = factsOf(n);
        if (!c) return;
        if (!c->supported) {
            out << "    coalesce: " << c->error << "\n";
            return;
        }
        auto v = [&](const char* k) {
            auto it = c->values.find(k);
            return it == c->values.end() ? std::string("-") : std::to_string(it->second);
        };
        auto b = [&](const char* k) {
            auto it = c->values.find(k);
            return it == c->values.end() ? std::string("-") : std::string(it->second ? "on" : "off");
        };
        out << "    coalesce rx-usecs " << v("rx_usecs") << " rx-frames " << v("rx_frames") << " adaptive-rx " << b("adaptive_rx")
            << ", tx-usecs " << v("tx_usecs") << " tx-frames " << v("tx_frames") << " adaptive-tx " << b("adaptive_tx") << "\n";
    }

private:
    static Result<void> read(const SnapshotIo& io, Nic& n) {
        auto c = io.nl.ethtoolGet(coalesceMessage(), n.name);
        if (!c) return failWith(c.error().withContext("interface " + n.name));
        n.facts.set(kCoalesceFacts, *c);
        return {};
    }
};

const CoalesceFamily kCoalesceFamily;
const FamilyRegistration kCoalesceRegistered{kCoalesceFamily, 260};

}  // namespace

}  // namespace rxtune
