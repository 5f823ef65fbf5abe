// Queue knobs: RPS (rps_cpus) and RFS (rps_flow_cnt) on every RX queue, XPS (xps_cpus) on TX queues.
#include <algorithm>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "knobs/path_key.hpp"
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

constexpr std::string_view kSteeringCpus = "rxtune_queue_steering_cpus";


KnobKey queueKey(const std::string& dev, bool tx, unsigned index, std::string file) {
    KnobKey k{"queue", dev, std::move(file)};
    k.queue = static_cast<int>(index);
    k.tx = tx;
    return k;
}

class QueueFamily final : public KnobFamily {
public:
    std::vector<CounterSpec> gauges() const override {
        return {{std::string(kSteeringCpus), "CPUs in the queue's rps_cpus (rx) or xps_cpus (tx); 0 = no software steering"}};
    }
    void exportSnapshot(const HostSnapshot& snap, GaugeSink& g) const override {
        for (const auto& n : snap.nics) {
            for (const auto& r : n.rx)
                g.set(std::string(kSteeringCpus), {{"interface", n.name}, {"queue", "rx-" + std::to_string(r.index)}}, r.rpsCpus.count());
            for (const auto& t : n.tx)
                if (t.xpsCpus)
                    g.set(std::string(kSteeringCpus), {{"interface", n.name}, {"queue", "tx-" + std::to_string(t.index)}}, t.xpsCpus->count());
        }
    }

    // detect: each queue's steering CPUs (and RFS flow count).
    void detectJson(const Nic& n, nlohmann::ordered_json& j) const override {
        auto rx = nlohmann::ordered_json::array();
        for (const auto& q : n.rx) rx.push_back({{"index", q.index}, {"rps_cpus", q.rpsCpus.toList()}, {"rps_flow_cnt", q.rpsFlowCnt}});
        auto tx = nlohmann::ordered_json::array();
        for (const auto& q : n.tx) {
            nlohmann::ordered_json e = {{"index", q.index}};
            e["xps_cpus"] = q.xpsCpus ? nlohmann::ordered_json(q.xpsCpus->toList()) : nlohmann::ordered_json(nullptr);
            if (!q.xpsError.empty()) e["xps_error"] = q.xpsError;
            tx.push_back(std::move(e));
        }
        j["rx_queues"] = std::move(rx);
        j["tx_queues"] = std::move(tx);
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        auto dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
        for (const auto& q : n.rx) out << "    rx-" << q.index << " rps_cpus " << dash(q.rpsCpus.toList()) << " rps_flow_cnt " << q.rpsFlowCnt << "\n";
        for (const auto& q : n.tx)
            out << "    tx-" << q.index << " xps_cpus " << (q.xpsCpus ? dash(q.xpsCpus->toList()) : "(" + q.xpsError + ")") << "\n";
    }

    std::string_view name() const override { return "queue"; }
    std::string id(const KnobKey& k) const override {
        return k.device + (k.tx ? " tx-" : " rx-") + std::to_string(k.queue) + " " + k.name;
    }
    std::string path(const KnobKey& k) const override {
        return paths::queueFile(k.device, k.tx ? paths::QueueDir::kTx : paths::QueueDir::kRx, static_cast<unsigned>(k.queue), k.name);
    }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto dev = pathkey::netDevice(p);
        if (!dev) return std::nullopt;
        auto q = pathkey::after(dev->second, "queues/");
        if (!q) return std::nullopt;
        auto dir = pathkey::head(*q);
        if (!dir || dir->second.find('/') != std::string_view::npos) return std::nullopt;
        const bool tx = dir->first.starts_with("tx-");
        if (!tx && !dir->first.starts_with("rx-")) return std::nullopt;
        auto index = pathkey::number(std::string_view(dir->first).substr(3));
        const std::string file(dir->second);
        if (!index || (file != "rps_cpus" && file != "rps_flow_cnt" && file != "xps_cpus")) return std::nullopt;
        return queueKey(dev->first, tx, static_cast<unsigned>(*index), file);
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        const Nic& nic = d.nic;
        if (d.mode == SteeringMode::kNone) return {};
        if (d.mode == SteeringMode::kXdp) {
            // XDP steers before the stack; RPS on the same queues would steer twice.
            for (const auto& q : nic.rx)
                p.settings.push_back(makeSetting(*this, queueKey(nic.name, false, q.index, "rps_cpus"), ValueKind::kCpuMask,
                                                 q.rpsCpus.toMask(), "0", "XDP steering replaces RPS", q.rpsCpusRaw));
        }
        // Busy-poll with fanout: RPS from the poll CPU to the other targets.
        const bool fanout = d.mode == SteeringMode::kBusyPoll && !d.fanout.empty();
        if (d.mode == SteeringMode::kRps || fanout) {
            const CpuSet& to = fanout ? d.fanout : d.targets;
            const std::string how = fanout ? "RPS from the busy-poll CPU to CPUs " : "RPS to CPUs ";
            const std::uint32_t entries = flowTableSize(in.profile.steering.flowEntries);
            const std::uint32_t nrx = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(nic.rx.size()));
            const std::uint32_t perQueue = entries ? flowTableSize((entries + nrx - 1) / nrx) : 0;
            for (const auto& q : nic.rx) {
                p.settings.push_back(makeSetting(*this, queueKey(nic.name, false, q.index, "rps_cpus"), ValueKind::kCpuMask,
                                                 q.rpsCpus.toMask(), to.toMask(), how + to.toList() + d.notes,
                                                 q.rpsCpusRaw));
                p.settings.push_back(makeSetting(*this, queueKey(nic.name, false, q.index, "rps_flow_cnt"), ValueKind::kInteger,
                                                 std::to_string(q.rpsFlowCnt), std::to_string(perQueue),
                                                 "RFS: " + std::to_string(entries) + " entries over " + std::to_string(nrx) + " RX queue(s)",
                                                 q.rpsFlowCntRaw));
            }
        }
        if (!in.profile.steering.xps) return {};
        if (nic.tx.size() <= 1) {
            p.skipped.push_back({nic.name + " xps", "one TX queue: XPS has nothing to choose"});
            return {};
        }
        auto cpus = d.targets.cpus();
        for (const auto& q : nic.tx) {
            const KnobKey k = queueKey(nic.name, true, q.index, "xps_cpus");
            if (!q.xpsCpus) {
                p.skipped.push_back({id(k), "the kernel does not show xps_cpus (" + q.xpsError + ")"});
                continue;
            }
            CpuSet mine;
            for (size_t i = 0; i < cpus.size(); ++i)
                if (i % nic.tx.size() == q.index % nic.tx.size()) mine.add(cpus[i]);
            p.settings.push_back(makeSetting(*this, k, ValueKind::kCpuMask, q.xpsCpus->toMask(), mine.toMask(),
                                             "XPS: CPUs round-robin over " + std::to_string(nic.tx.size()) + " TX queues", q.xpsRaw));
        }
        return {};
    }

    // Where a successful write() is proof enough, so that no read-back is needed:
    // - rps_flow_cnt: the kernel rounds the count up to a power of two and shows the table's size,
    //   so a power of two (or 0) it accepted is what it holds (net/core/net-sysfs.c,
    //   store/show_rps_dev_flow_table_cnt);
    // - rps_cpus: the kernel keeps the mask it parsed, less the CPUs that are not housekeeping
    //   (store_rps_map); a mask with none of those (Plan::rpsDropped) is stored as written.
    // Anything else, and a revert (which has no plan), is read back.
    bool writeIsExact(const KnobKey& k, ValueKind, const std::string& value, const Plan* plan) const override {
        if (k.name == "rps_flow_cnt") {
            std::uint64_t n = 0;
            return parseUnsigned(value, n) && (n & (n - 1)) == 0;
        }
        if (k.name == "rps_cpus" && plan && plan->rpsDropped) {
            auto mask = CpuSet::parseMask(value);
            return mask && (*mask & *plan->rpsDropped).empty();
        }
        return false;
    }

    // A device created while rxtune's net.core.rps_default_mask was in force got its RPS mask from
    // rxtune, not from its owner: its original is the mask's original, even where it holds the
    // value wanted already and nothing is written to it (else revert would leave it steered).
    std::vector<Original> inheritedOriginals(const Plan& plan, const Journal& before, const std::set<std::string>& journaled) const override {
        std::vector<Original> out;
        const std::string maskPath = paths::sysctl(std::string(kDefaultMaskSysctl));
        const Original* maskOriginal = before.original(maskPath);
        auto maskNow = std::find_if(plan.settings.begin(), plan.settings.end(), [&](const Setting& s) { return s.path == maskPath; });
        if (!maskOriginal || maskNow == plan.settings.end()) return out;
        for (const auto& s : plan.settings) {
            if (s.key.family != "queue" || s.key.name != "rps_cpus" || s.key.tx || journaled.count(s.path) ||
                !sameValue(ValueKind::kCpuMask, s.current, maskNow->current))
                continue;
            out.push_back({s.id, s.path, s.kind, maskOriginal->value, s.key});
        }
        return out;
    }

    std::optional<SteeringView> steeringOf(const Setting& s) const override {
        if (s.key.name != "rps_cpus" || s.key.tx) return std::nullopt;
        auto m = CpuSet::parseMask(s.desired);
        if (!m || m->empty()) return std::nullopt;
        return SteeringView{"rps", *m, true};  // the RPS masks set beside XDP or NAPI steering
    }
};

const QueueFamily kQueueFamily;
const FamilyRegistration kQueueRegistered{kQueueFamily, 210};

}  // namespace

}  // namespace rxtune
