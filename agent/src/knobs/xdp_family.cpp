// XDP cpumap steering on a device (bpf/xdp_steering): the spec installed, "" for none.
#include <algorithm>

#include "bpf/xdp_steering.hpp"
#include "knobs/path_key.hpp"
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

constexpr std::string_view kXdpName = "xdp";

// rxtune's XDP steering on the device now, as readInto found it ("" none, or not read).
std::string installed(const Nic& n) {
    const auto* spec = n.fact(kXdpInstalled);
    return spec ? *spec : std::string();
}

constexpr std::string_view kXdpPrefix = "sys/fs/bpf/rxtune/";  // a knob's path only; the pins live per netns

class XdpFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "xdp"; }
    std::string id(const KnobKey& k) const override { return k.device + " xdp steering"; }
    std::string path(const KnobKey& k) const override { return std::string(kXdpPrefix) + k.device; }
    std::string settingLabel(const KnobKey&) const override { return "steering"; }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto rest = pathkey::after(p, kXdpPrefix);
        if (!rest || rest->empty() || rest->find('/') != std::string_view::npos) return std::nullopt;
        return KnobKey{"xdp", std::string(*rest), "steering"};
    }

    // mode auto may have XDP steering on a device, or have had it: the plan must see what is there.
    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        const auto& c = profile.steering.autoThresholds.candidates;
        const bool autoXdp = profile.steering.mode == SteeringMode::kAuto && io.services.get<XdpSteering>() && std::find(c.begin(), c.end(), SteeringMode::kXdp) != c.end();
        if (profile.steering.mode != SteeringMode::kXdp && !autoXdp) return {};
        if (!io.services.get<XdpSteering>()) return fail(ENOTSUP, "steering.mode", "xdp", "XDP steering is not available here");
        for (auto& n : snap.nics) {
            auto cur = io.services.get<XdpSteering>()->current(n.name);
            if (!cur) return failWith(cur.error().withContext("interface " + n.name));
            n.facts.set(kXdpInstalled, *cur);  // "cpus=... mode=... qsize=...", "" none
        }
        return {};
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        if (d.mode != SteeringMode::kXdp) return {};
        const Steering& st = in.profile.steering;
        std::string why = "XDP cpumap steering to CPUs " + d.targets.toList() + d.notes;
        // The traps rxtune cannot see from here are said in the plan, never left silent.
        if (st.xdpNative && d.nic.kind == "veth")
            why += "; native XDP on veth: the peer needs TX checksum offload off (ethtool -K <peer> tx off) or TCP breaks";
        if (st.xdpNative && d.nic.kind == "tap") why += "; native XDP on tap: the writer must use non-blocking writes";
        const std::string spec = "cpus=" + d.targets.toList() + " mode=" + (st.xdpNative ? "native" : "generic") +
                                 " qsize=" + std::to_string(st.xdpQsize);
        p.settings.push_back(makeSetting(*this, {"xdp", d.nic.name, "steering"}, ValueKind::kXdp, installed(d.nic), spec, why));
        return {};
    }

    bool fileBacked(const KnobKey&) const override { return false; }
    Result<std::string> read(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        if (!io.services.get<XdpSteering>()) return fail(ENOTSUP, "xdp", path, "XDP steering is not available here");
        return io.services.get<XdpSteering>()->current(k.device);
    }
    Result<void> write(const KnobIo& io, const KnobKey& k, const std::string& path, const std::string& value) const override {
        if (!io.services.get<XdpSteering>()) return fail(ENOTSUP, "xdp", path, "XDP steering is not available here");
        if (value.empty()) return io.services.get<XdpSteering>()->remove(k.device);
        auto spec = XdpSpec::parse(value);
        if (!spec) return failWith(spec.error());
        return io.services.get<XdpSteering>()->install(k.device, *spec);
    }
    // Pins are removed even when the device is gone, so that nothing is left in bpffs.
    bool exists(const KnobIo&, const KnobKey&, const std::string&) const override { return true; }
    bool writable(const KnobIo&, const KnobKey&, const std::string&) const override { return true; }
    std::string where(const KnobIo&, const KnobKey& k, const std::string&) const override { return "xdp on " + k.device; }

    std::optional<SteeringView> steeringOf(const Setting& s) const override {
        if (s.desired.empty()) return std::nullopt;
        auto spec = XdpSpec::parse(s.desired);
        if (!spec) return std::nullopt;
        return SteeringView{"xdp", spec->cpus};
    }
};

const XdpFamily kXdpFamily;
const FamilyRegistration kXdpRegistered{kXdpFamily, 200};

}  // namespace

}  // namespace rxtune
