// NAPI deferral (nic.gro_flush_timeout, nic.napi_defer_hard_irqs, nic.irq_suspend_timeout): how
// long the poll may hold GRO packets, how many empty polls keep the device's IRQ masked, and how
// long a busy-polling application may keep it masked (Documentation/networking/napi.rst). Where
// the kernel's napi-set takes the attribute (its policy says, 6.13+) and the device has NAPI
// instances, each NAPI is written on its own, named by the queue it serves (its id changes at a
// device reset, its queue does not; the kernel keeps the values across the reset). Elsewhere the
// device's sysfs file, which sets every NAPI instance's, including those the driver adds later;
// irq_suspend_timeout has no such file.
#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/napi_defer_profile.hpp"
#include "knobs/napi_keys.hpp"
#include "knobs/path_key.hpp"
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

// What readNapiState found of the device; nothing (no threaded file, no instance) where it was not read.
const NapiState& napiStateOfNapiDefer(const Nic& n) {
    static const NapiState none;
    const NapiState* st = napiOf(n);
    return st ? *st : none;
}


// One attribute: its profile key, what napi-set says of it, its per-NAPI value and whether the
// device has a sysfs file of its name.
struct Attr {
    Slot<DeferValue> slot;
    bool NapiFeatures::*perNapi;
    std::optional<std::uint64_t> (*of)(const NapiInfo&);
    void (*set)(NapiSettings&, std::uint64_t);
    bool sysfs;
    std::string_view name() const { return deferAttribute(slot); }
};

const Attr kAttrs[] = {
    {kGroFlushTimeout, &NapiFeatures::groFlushTimeout, [](const NapiInfo& n) { return n.groFlushTimeout; },
     [](NapiSettings& s, std::uint64_t v) { s.groFlushTimeout = v; }, true},
    {kNapiDeferHardIrqs, &NapiFeatures::deferHardIrqs,
     [](const NapiInfo& n) { return n.deferHardIrqs ? std::optional<std::uint64_t>(*n.deferHardIrqs) : std::nullopt; },
     [](NapiSettings& s, std::uint64_t v) { s.deferHardIrqs = static_cast<std::uint32_t>(v); }, true},
    {kIrqSuspendTimeout, &NapiFeatures::irqSuspendTimeout, [](const NapiInfo& n) { return n.irqSuspendTimeout; },
     [](NapiSettings& s, std::uint64_t v) { s.irqSuspendTimeout = v; }, false},
};

const Attr* attrNamed(std::string_view name) {
    for (const auto& a : kAttrs)
        if (a.name() == name) return &a;
    return nullptr;
}

KnobKey deviceKey(const std::string& dev, std::string_view attr) { return {"napi_defer", dev, std::string(attr)}; }
KnobKey napiKey(const std::string& dev, std::string_view attr, const NapiRole& role) {
    return napiRoleKey("napi_defer", dev, std::string(attr), role);
}

const DeferValue* wanted(const Profile& p, const Attr& a) { return deferValueOf(p, a.slot); }

class NapiDeferFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "napi_defer"; }
    std::string id(const KnobKey& k) const override {
        auto role = napiRoleOf(k);
        return k.device + (role ? " napi " + role->str() + " " : " ") + k.name;
    }
    std::string path(const KnobKey& k) const override {
        auto role = napiRoleOf(k);
        return paths::netDevFile(k.device, role ? napiKnobFile(*role, k.name) : k.name);
    }
    std::string settingLabel(const KnobKey& k) const override {
        auto role = napiRoleOf(k);
        return role ? k.name + " " + role->str() : k.name;
    }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto dev = pathkey::netDevice(p);
        if (!dev) return std::nullopt;
        const std::string_view file = dev->second;
        if (auto perNapi = parseNapiKnobFile(file)) {
            if (!attrNamed(perNapi->second)) return std::nullopt;
            return napiKey(dev->first, perNapi->second, perNapi->first);
        }
        const Attr* a = attrNamed(file);
        if (!a || !a->sysfs) return std::nullopt;
        return deviceKey(dev->first, file);
    }

    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        bool any = false;
        for (const auto& a : kAttrs) any = any || wanted(profile, a);
        if (!any) return {};
        for (auto& n : snap.nics)
            if (auto r = readNapiState(io.fs, io.nl, n); !r) return failWith(r.error());
        return {};
    }

    void detectJson(const Nic& n, nlohmann::ordered_json& j) const override {
        const NapiState* st = napiOf(n);
        if (!st) return;
        auto num = [](const std::optional<std::string>& v) {
            std::uint64_t x = 0;
            return v && parseUnsigned(trimmed(*v), x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
        };
        j["napi_defer"] = {{"gro_flush_timeout", num(st->groFlushTimeout)},
                           {"napi_defer_hard_irqs", num(st->deferHardIrqs)},
                           {"written_through", perNapiFor(*st, kAttrs[0]) ? "napi-set" : "sysfs"}};
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        const NapiState* st = napiOf(n);
        if (!st) return;
        out << "    gro_flush_timeout " << (st->groFlushTimeout ? trimmed(*st->groFlushTimeout) + " ns" : std::string("(absent)"))
            << ", napi_defer_hard_irqs " << (st->deferHardIrqs ? trimmed(*st->deferHardIrqs) : std::string("(absent)"))
            << (perNapiFor(*st, kAttrs[0]) ? " (device-wide; rxtune writes them per NAPI, napi-set)" : "") << "\n";
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        const Nic& nic = d.nic;
        const NapiState& napi = napiStateOfNapiDefer(nic);
        for (const Attr& a : kAttrs) {
            const DeferValue* value = wanted(in.profile, a);
            if (!value) continue;
            const std::string profileWhere = "profile " + value->where.str() + " (nic." + std::string(a.name()) + ")";
            const std::string desired = std::to_string(value->value);
            if (perNapiFor(napi, a)) {
                for (const auto& [role, n] : napiRoles(napi.instances, napi.queues.value_or(std::vector<NapiQueue>{}))) {
                    const KnobKey k = napiKey(nic.name, a.name(), role);
                    const auto cur = a.of(*n);
                    if (!cur) {
                        p.skipped.push_back({id(k), "napi-get shows no " + std::string(a.name()) + " for NAPI " + std::to_string(n->id)});
                        continue;
                    }
                    std::string why = profileWhere + ", through napi-set: NAPI " + std::to_string(n->id) + " (" + role.str() +
                                      (role.kind == NapiRole::kOrdinal ? ", the kernel links no queue to it: its place in id order"
                                                                       : ", the NAPI of that queue") +
                                      "), kept by the kernel across device resets";
                    p.settings.push_back(makeSetting(*this, k, ValueKind::kInteger, std::to_string(*cur), desired, why));
                }
                continue;
            }
            if (!a.sysfs) {
                p.skipped.push_back({id(deviceKey(nic.name, a.name())),
                                     std::string(a.name()) + " is set per NAPI through netdev napi-set" +
                                         (napi.features.*a.perNapi ? ", and " + nic.name + " has no NAPI instance with an id now"
                                                                   : ", which this kernel does not take (Linux 6.13+)")});
                continue;
            }
            const KnobKey k = deviceKey(nic.name, a.name());
            const auto& cur = a.slot.name == kGroFlushTimeout.name ? napi.groFlushTimeout : napi.deferHardIrqs;
            if (!cur) {
                p.skipped.push_back({id(k), "the kernel shows no " + std::string(a.name()) + " for " + nic.name});
                continue;
            }
            p.settings.push_back(makeSetting(*this, k, ValueKind::kInteger, trimmed(*cur), desired,
                                             profileWhere + ", through sysfs: every NAPI instance of the device", *cur));
        }
        return {};
    }

    bool fileBacked(const KnobKey& k) const override { return !napiRoleOf(k); }
    Result<std::string> read(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        auto role = napiRoleOf(k);
        if (!role) return io.fs.read(path);
        const Attr* a = attrNamed(k.name);
        auto* nl = io.services.get<NetlinkSource>();
        if (!a || !nl) return fail(ENOTSUP, "netdev NAPI_GET", id(k), "no netlink here");
        auto live = liveNapi(*nl, k.device, *role);
        if (!live) return failWith(live.error().withContext(id(k)));
        auto v = a->of(*live);
        if (!v) return fail(EOPNOTSUPP, "netdev NAPI_GET", id(k), "napi-get shows no " + k.name);
        return std::to_string(*v);
    }
    Result<void> write(const KnobIo& io, const KnobKey& k, const std::string& path, const std::string& value) const override {
        auto role = napiRoleOf(k);
        if (!role) return io.fs.write(path, value);
        const Attr* a = attrNamed(k.name);
        auto* nl = io.services.get<NetlinkSource>();
        if (!a || !nl) return fail(ENOTSUP, "netdev NAPI_SET", id(k), "no netlink here");
        std::uint64_t n = 0;
        if (!parseUnsigned(trimmed(value), n)) return fail(EINVAL, "netdev NAPI_SET", id(k), "not a number: " + value);
        auto live = liveNapi(*nl, k.device, *role);
        if (!live) return failWith(live.error().withContext(id(k)));
        NapiSettings s;
        a->set(s, n);
        if (auto r = nl->napiSet(live->id, s); !r) return failWith(r.error().withContext(id(k)));
        return {};
    }
    bool exists(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        return napiRoleOf(k) ? io.fs.exists(paths::netDev(k.device)) : io.fs.exists(path);
    }
    bool writable(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        return napiRoleOf(k) ? true : io.fs.writable(path);
    }
    std::string where(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        auto role = napiRoleOf(k);
        return role ? "netdev napi-set of " + k.device + " NAPI " + role->str() : io.fs.full(path);
    }

private:
    // Whether the attribute goes per NAPI on this device: napi-set takes it and napi-get listed
    // instances with an id (a NAPI found only by its kthread's name cannot be named to napi-set).
    static bool perNapiFor(const NapiState& st, const Attr& a) {
        if (!(st.features.*a.perNapi)) return false;
        for (const auto& n : st.instances)
            if (n.id != 0) return true;
        return false;
    }
};

const NapiDeferFamily kNapiDeferFamily;
const FamilyRegistration kNapiDeferRegistered{kNapiDeferFamily, 230};

}  // namespace

}  // namespace rxtune
