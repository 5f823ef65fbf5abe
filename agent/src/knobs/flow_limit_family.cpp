// The RPS flow limit (steering.flow_limit): net.core.flow_limit_cpu_bitmap holds the CPUs whose
// backlog drops from the flows that fill it first, net.core.flow_limit_table_len the length of
// each such CPU's flow table (Documentation/networking/scaling.rst, "Per-flow rate limiting").
// RPS queues every packet on its target CPU's backlog: an elephant flow hashed to a target can
// fill it, and the small flows on that CPU wait behind it or are dropped with it. The bitmap is
// the RPS targets and the RX CPUs (where netif_rx queues a non-NAPI device's packets) of every
// device steered by RPS. The kernel looks at the flows only while a CPU's backlog holds more
// than half of net.core.netdev_max_backlog (skb_flow_limit, net/core/dev.c): the plan says where
// that is, and advises where it is a deep queue already.
//
// Order: the table length first, then the bitmap (the kernel sizes a CPU's table when the CPU
// enters the bitmap; a CPU already in it keeps the table it has). Revert goes the other way.
#include <algorithm>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/flow_limit_profile.hpp"
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

constexpr std::string_view kBitmap = "flow_limit_cpu_bitmap";
constexpr std::string_view kTableLen = "flow_limit_table_len";
const std::string kBitmapSysctl = "net.core.flow_limit_cpu_bitmap";
const std::string kTableLenSysctl = "net.core.flow_limit_table_len";
const std::string kBacklogSysctl = "net.core.netdev_max_backlog";
constexpr std::string_view kCpusGauge = "rxtune_flow_limit_cpus";

// Past this many packets queued on one CPU before the kernel limits flows, the plan advises a
// smaller netdev_max_backlog: at a million packets a second that is 5 ms of queue already.
constexpr std::uint64_t kDeepThreshold = 5000;

// Planned from an event's devices alone (the daemon's re-apply on a netlink event): the others'
// CPUs stay in the bitmap (beforePlan lends this; a command and a whole-host run plan it exact).
struct FlowLimitMemory {
    bool partial = false;
};
constexpr Slot<FlowLimitMemory> kMemory{"flow_limit"};

KnobKey flowKey(std::string_view name) { return {"flow_limit", "", std::string(name)}; }

const FlowLimitIntent* wanted(const Profile& p) {
    const FlowLimitIntent* in = p.section(kFlowLimit);
    return in && in->enabled ? in : nullptr;
}

const SysctlValue* present(const HostSnapshot& s, const std::string& key) {
    const SysctlValue* v = findSysctl(s.host, key);
    return v && v->present ? v : nullptr;
}

// Where the kernel starts limiting flows as the host is now: half its netdev_max_backlog.
std::optional<std::uint64_t> actsAbove(const HostSnapshot& s) {
    const SysctlValue* b = present(s, kBacklogSysctl);
    std::uint64_t n = 0;
    if (!b || !parseUnsigned(b->value, n)) return std::nullopt;
    return n / 2;
}

Setting* settingAt(Plan& p, const std::string& path) {
    auto it = std::find_if(p.settings.begin(), p.settings.end(), [&](const Setting& s) { return s.path == path; });
    return it == p.settings.end() ? nullptr : &*it;
}

class FlowLimitFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "flow_limit"; }
    std::string id(const KnobKey& k) const override { return "sysctl net.core." + k.name; }
    std::string path(const KnobKey& k) const override { return paths::sysctl("net.core." + k.name); }
    std::string settingLabel(const KnobKey& k) const override { return "net.core." + k.name; }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        for (const auto name : {kBitmap, kTableLen})
            if (p == path(flowKey(name))) return flowKey(name);
        return std::nullopt;
    }

    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        if (!wanted(profile)) return {};
        return addSysctls(io.fs, snap.host, {kBitmapSysctl});
    }
    // detect shows the flow limit where the kernel has it (a plan that asks for it where it does
    // not says so).
    Result<void> readDetect(const SnapshotIo& io, HostSnapshot& snap) const override {
        if (!io.fs.exists(paths::sysctl(kBitmapSysctl))) return {};
        return addSysctls(io.fs, snap.host, {kBitmapSysctl});
    }
    void detectHostJson(const HostSnapshot& s, nlohmann::ordered_json& host) const override {
        const SysctlValue* bitmap = present(s, kBitmapSysctl);
        if (!bitmap) return;
        const SysctlValue* len = present(s, kTableLenSysctl);
        auto cpus = CpuSet::parseMask(bitmap->value);
        nlohmann::ordered_json j = {{"cpus", cpus ? nlohmann::ordered_json(cpus->toList()) : nlohmann::ordered_json(bitmap->value)}};
        if (len) j["table_len"] = len->value;
        if (auto above = actsAbove(s)) j["acts_above_backlog"] = *above;
        host["flow_limit"] = std::move(j);
    }
    void detectHostText(const HostSnapshot& s, std::ostream& out) const override {
        const SysctlValue* bitmap = present(s, kBitmapSysctl);
        if (!bitmap) return;
        out << "  flow limit\n";
        auto cpus = CpuSet::parseMask(bitmap->value);
        const std::string list = cpus ? cpus->toList() : bitmap->value;
        out << "    CPUs " << (list.empty() ? "none" : list);
        if (const SysctlValue* len = present(s, kTableLenSysctl)) out << ", table_len " << len->value;
        if (auto above = actsAbove(s)) out << ", acts while a backlog holds more than " << *above << " packets";
        out << "\n";
    }

    std::vector<CounterSpec> gauges() const override {
        return {{std::string(kCpusGauge), "CPUs in net.core.flow_limit_cpu_bitmap (their backlog drops from the flows filling it first)"}};
    }
    void exportSnapshot(const HostSnapshot& s, GaugeSink& g) const override {
        if (const SysctlValue* bitmap = present(s, kBitmapSysctl))
            if (auto cpus = CpuSet::parseMask(bitmap->value)) g.set(std::string(kCpusGauge), {}, cpus->count());
    }

    void beforePlan(HookContext&, const Profile&, bool wholeHost, PlanMemory& memory) const override {
        memory.families.set(kMemory, FlowLimitMemory{!wholeHost});
    }

    Result<void> planHost(const PlanInput& in, Plan& p) const override {
        const FlowLimitIntent* intent = wanted(in.profile);
        if (!intent) return {};
        if (!present(in.snap, kBitmapSysctl))
            p.skipped.push_back({"sysctl " + kBitmapSysctl, "the kernel has no flow limit here (built without CONFIG_NET_FLOW_LIMIT, "
                                                            "or a network namespace other than the host's)"});
        else if (Setting* s = settingAt(p, path(flowKey(kBitmap))); s && s->key.family != name())
            p.skipped.push_back({"steering.flow_limit", "the profile sets sysctl " + kBitmapSysctl + " itself (" + s->why + ")"});
        return {};
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        const FlowLimitIntent* intent = wanted(in.profile);
        const SysctlValue* bitmap = present(in.snap, kBitmapSysctl);
        if (!intent || !bitmap || d.mode != SteeringMode::kRps || d.targets.empty()) return {};
        const std::string bitmapPath = path(flowKey(kBitmap));
        Setting* mine = settingAt(p, bitmapPath);
        if (mine && mine->key.family != name()) return {};  // the profile's own sysctl (planHost said so)
        const CpuSet cpus = d.targets | irqCpus(d.nic);
        const std::string why = d.nic.name + ": its RPS targets and RX CPUs " + cpus.toList();
        if (mine) {
            auto planned = CpuSet::parseMask(mine->desired);
            mine->desired = ((planned ? *planned : CpuSet()) | cpus).toMask();
            mine->why += "; " + why;
            return {};
        }
        if (intent->tableLen) {
            const KnobKey k = flowKey(kTableLen);
            if (const SysctlValue* len = present(in.snap, kTableLenSysctl))
                p.settings.push_back(makeSetting(*this, k, ValueKind::kInteger, len->value, std::to_string(*intent->tableLen),
                                                 "profile " + intent->where.str() +
                                                     " (steering.flow_limit.table_len): each flow-limited CPU's flow table; a CPU "
                                                     "already in the bitmap keeps the table it has"));
            else
                p.skipped.push_back({id(k), "not shown by this kernel"});
        }
        const FlowLimitMemory* memory = in.opts.memory.families.get(kMemory);
        CpuSet want = cpus;
        std::string how = "profile " + intent->where.str() + " (steering.flow_limit): " + why;
        if (memory && memory->partial) {
            // An event's plan: the devices it does not cover keep their CPUs.
            if (auto now = CpuSet::parseMask(bitmap->value)) want = want | *now;
            how += "; the CPUs of devices this run did not plan are kept";
        }
        p.settings.push_back(makeSetting(*this, flowKey(kBitmap), ValueKind::kCpuMask, normalise(ValueKind::kCpuMask, bitmap->value),
                                         want.toMask(), how));
        return {};
    }

    // Where the kernel starts limiting, from the backlog this plan leaves (the profile's
    // netdev_max_backlog where it sets one).
    Result<void> planLate(const PlanInput& in, Plan& p) const override {
        const FlowLimitIntent* intent = wanted(in.profile);
        if (!intent || !present(in.snap, kBitmapSysctl)) return {};
        Setting* mine = settingAt(p, path(flowKey(kBitmap)));
        if (!mine) {
            p.skipped.push_back({"sysctl " + kBitmapSysctl, "no device here is steered by RPS: the flow limit acts on the backlog RPS fills"});
            return {};
        }
        if (mine->key.family != name()) return {};
        std::string backlog;
        if (const Setting* b = settingAt(p, paths::sysctl(kBacklogSysctl))) backlog = b->desired;
        else if (const SysctlValue* v = present(in.snap, kBacklogSysctl)) backlog = v->value;
        std::uint64_t n = 0;
        if (!parseUnsigned(backlog, n)) return {};
        const std::uint64_t threshold = n / 2;
        mine->why += "; the kernel limits flows while a CPU's backlog holds more than " + std::to_string(threshold) +
                     " packets (netdev_max_backlog " + std::to_string(n) + " / 2)";
        if (threshold > kDeepThreshold)
            p.advice.push_back({"host", "steering.flow_limit: with net.core.netdev_max_backlog " + std::to_string(n) +
                                            " the flow limit acts only once a CPU's backlog holds " + std::to_string(threshold) +
                                            " packets (" + std::to_string(threshold / 1000) +
                                            " ms at 1 Mpps): it then drops from the elephant flows rather than from all, but the "
                                            "small flows wait behind that queue first. Where their latency matters more than a "
                                            "burst absorbed, set netdev_max_backlog to a few thousand (the limit then acts from "
                                            "half of it); see docs/BENCHMARKS.md, \"RPS flow limit\""});
        return {};
    }
};

const FlowLimitFamily kFlowLimitFamily;
const FamilyRegistration kFlowLimitRegistered{kFlowLimitFamily, 120};

}  // namespace

}  // namespace rxtune
