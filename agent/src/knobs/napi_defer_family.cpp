// NAPI deferral (nic.gro_flush_timeout, nic.napi_defer_hard_irqs): how long the poll may hold
// GRO packets and how many empty polls keep the device's IRQ masked (Documentation/networking/
// napi.rst). Written through sysfs, which sets the device's value and every NAPI instance's,
// including those the driver creates later; napi-get's per-NAPI values are shown by detect.
#include "core/paths.hpp"
#include "inventory/snapshot.hpp"
#include "core/text.hpp"
#include "knobs/path_key.hpp"
#include "knobs/registry.hpp"
#include "knobs/napi_defer_profile.hpp"

namespace rxtune {

namespace {

// What readNapiState found of the device; nothing (no threaded file, no instance) where it was not read.
const NapiState& napiStateOf(const Nic& n) {
    static const NapiState none;
    const NapiState* st = napiOf(n);
    return st ? *st : none;
}

constexpr std::string_view kNet = "sys/class/net/";

const std::string_view kGro = deferAttribute(kGroFlushTimeout);
const std::string_view kDefer = deferAttribute(kNapiDeferHardIrqs);

const DeferValue* wanted(const Profile& p, std::string_view key) {
    return deferValueOf(p, key == kGro ? kGroFlushTimeout : kNapiDeferHardIrqs);
}

class NapiDeferFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "napi_defer"; }
    std::string id(const KnobKey& k) const override { return k.device + " " + k.name; }
    std::string path(const KnobKey& k) const override { return paths::netDevFile(k.device, k.name); }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto rest = pathkey::after(p, kNet);
        if (!rest) return std::nullopt;
        auto dev = pathkey::head(*rest);
        if (!dev || (dev->second != kGro && dev->second != kDefer)) return std::nullopt;
        return KnobKey{"napi_defer", dev->first, std::string(dev->second)};
    }

    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        if (!wanted(profile, kGro) && !wanted(profile, kDefer)) return {};
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
        j["napi_defer"] = {{"gro_flush_timeout", num(st->groFlushTimeout)}, {"napi_defer_hard_irqs", num(st->deferHardIrqs)},
                           {"written_through", "sysfs"}};
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        const NapiState* st = napiOf(n);
        if (!st) return;
        out << "    gro_flush_timeout " << (st->groFlushTimeout ? trimmed(*st->groFlushTimeout) + " ns" : std::string("(absent)"))
            << ", napi_defer_hard_irqs " << (st->deferHardIrqs ? trimmed(*st->deferHardIrqs) : std::string("(absent)")) << "\n";
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        const Nic& nic = d.nic;
        const NapiState& napi = napiStateOf(nic);
        auto one = [&](std::string_view name, const std::optional<std::string>& cur) {
            const DeferValue* value = wanted(in.profile, name);
            if (!value) return;
            const KnobKey k{"napi_defer", nic.name, std::string(name)};
            if (!cur) {
                p.skipped.push_back({id(k), "the kernel shows no " + std::string(name) + " for " + nic.name});
                return;
            }
            p.settings.push_back(makeSetting(*this, k, ValueKind::kInteger, trimmed(*cur), std::to_string(value->value),
                                             "profile " + value->where.str() + " (nic." + std::string(name) +
                                                 "), through sysfs: every NAPI instance of the device",
                                             *cur));
        };
        one(kGro, napi.groFlushTimeout);
        one(kDefer, napi.deferHardIrqs);
        return {};
    }
};

const NapiDeferFamily kFamily;
const FamilyRegistration kRegistered{kFamily, 230};

}  // namespace

}  // namespace rxtune
