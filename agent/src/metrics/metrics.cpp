#include "metrics/metrics.hpp"

#include <algorithm>

#include "knobs/registry.hpp"

namespace rxtune {

namespace {

using prometheus::Labels;

std::string key(const Labels& l) {
    std::string k;
    for (const auto& [a, b] : l) k += a + "=" + b + ",";
    return k;
}

// Children derived from a snapshot: those not seen in this round are removed afterwards.
template <class T>
class Round {
public:
    Round(prometheus::Family<T>& fam, std::map<std::string, T*>& live) : fam_(fam), live_(live) {}
    ~Round() {
        for (auto it = live_.begin(); it != live_.end();) {
            if (!seen_.count(it->first)) {
                fam_.Remove(it->second);
                it = live_.erase(it);
            } else {
                ++it;
            }
        }
    }
    Round(const Round&) = delete;
    Round& operator=(const Round&) = delete;
    // Drops the child and starts a fresh one (a counter reset, as after a device is re-created).
    T& fresh(const Labels& l) {
        const auto k = key(l);
        if (auto it = live_.find(k); it != live_.end()) {
            fam_.Remove(it->second);
            live_.erase(it);
        }
        return at(l);
    }
    T& at(const Labels& l) {
        const auto k = key(l);
        seen_.insert(k);
        auto it = live_.find(k);
        if (it != live_.end()) return *it->second;
        T& c = fam_.Add(l);
        live_[k] = &c;
        return c;
    }

private:
    prometheus::Family<T>& fam_;
    std::map<std::string, T*>& live_;
    std::set<std::string> seen_;
};

// A family of the registry, by name and help text (the constructor's one line per family).
prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& r, const char* name, const char* help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Counter>& counter(prometheus::Registry& r, const char* name, const char* help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Histogram>& histogram(prometheus::Registry& r, const char* name, const char* help) {
    return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

// Each family gauge's series for one snapshot: those not set again are removed at the end.
class FamilySnapshotGauges final : public GaugeSink {
public:
    template <class M>
    explicit FamilySnapshotGauges(M& gauges) {
        for (auto& [name, g] : gauges) rounds_.emplace(name, std::make_unique<Round<prometheus::Gauge>>(*g.family, g.live));
    }
    void set(const std::string& name, const MetricLabels& labels, double value) override { rounds_.at(name)->at(labels).Set(value); }

private:
    std::map<std::string, std::unique_ptr<Round<prometheus::Gauge>>> rounds_;
};

}  // namespace

Metrics::Metrics(std::string version)
    : registry_(std::make_shared<prometheus::Registry>()),
      build_(gauge(*registry_, "rxtune_build_info", "rxtune version; always 1")),
      ifInfo_(gauge(*registry_, "rxtune_interface_info", "Interface facts; always 1")),
      queues_(gauge(*registry_, "rxtune_interface_queues", "Queues the kernel uses now")),
      queuesMax_(gauge(*registry_, "rxtune_interface_queues_max", "Most queues the device offers (ethtool channels max, else allocated queues)")),
      ifPackets_(counter(*registry_, "rxtune_interface_packets_total", "Packets (rtnetlink stats64)")),
      ifBytes_(counter(*registry_, "rxtune_interface_bytes_total", "Bytes (rtnetlink stats64)")),
      ifDrops_(counter(*registry_, "rxtune_interface_dropped_packets_total", "Dropped packets (rtnetlink stats64)")),
      processed_(counter(*registry_, "rxtune_softnet_processed_packets_total", "Packets processed in NET_RX on this CPU (softnet_stat)")),
      dropped_(counter(*registry_, "rxtune_softnet_dropped_packets_total", "Packets dropped because the backlog was full (softnet_stat)")),
      squeezed_(counter(*registry_, "rxtune_softnet_times_squeezed_total", "NET_RX runs that ended with work left (budget or time exhausted)")),
      receivedRps_(counter(*registry_, "rxtune_softnet_received_rps_total", "Times this CPU was woken by RPS to process packets")),
      flowLimit_(counter(*registry_, "rxtune_softnet_flow_limit_total", "Packets dropped by the flow limit")),
      backlog_(gauge(*registry_, "rxtune_softnet_backlog_packets", "Packets waiting in this CPU's backlog")),
      netRx_(counter(*registry_, "rxtune_softirq_net_rx_total", "NET_RX softirqs run on this CPU (/proc/softirqs)")),
      capacity_(gauge(*registry_, "rxtune_cpu_capacity", "The kernel's cpu_capacity of the CPU (1024: the biggest core at its highest frequency); only where the kernel gives one (arm64, riscv)")),
      cpuClass_(gauge(*registry_, "rxtune_cpu_class_info", "The CPU's class by capacity or core type (big, middle, little; big alone where the CPUs are alike); always 1")),
      profile_(gauge(*registry_, "rxtune_applied_profile_info", "The profile the daemon keeps applied; always 1")),
      settings_(gauge(*registry_, "rxtune_settings", "Settings of the applied profile: in_sync; drifted (found changed at the last drift check, then set again); pending (in place, in effect at the IRQ's next interrupt); not_in_effect (in place, but the kernel serves the IRQ elsewhere all the same)")),
      applies_(counter(*registry_, "rxtune_applies_total", "Reconciliations by result")),
      drift_(counter(*registry_, "rxtune_drift_corrections_total", "Settings found changed by someone else and set again")),
      lastApply_(gauge(*registry_, "rxtune_last_apply_timestamp_seconds", "When the last reconciliation finished")),
      latency_(histogram(*registry_, "rxtune_reapply_latency_seconds", "From a kernel link/queue event to the settings written back")),
      busiest_(gauge(*registry_, "rxtune_rx_busiest_cpu_share", "Share of NET_RX packets processed by the busiest CPU over the last interval (1 = one core does all)")),
      bpfNetRxSeconds_(counter(*registry_, "rxtune_softirq_net_rx_seconds_total", "Time spent in NET_RX softirq on this CPU (BPF, exact)")),
      bpfNapiPolls_(counter(*registry_, "rxtune_napi_polls_total", "NAPI polls on this CPU (BPF)")),
      bpfNapiPackets_(counter(*registry_, "rxtune_napi_packets_total", "Packets processed by NAPI polls on this CPU (BPF)")),
      bpfBudget_(counter(*registry_, "rxtune_napi_budget_exhausted_total", "NAPI polls that used their whole budget (BPF)")),
      bpfCpumap_(counter(*registry_, "rxtune_cpumap_packets_total", "Packets processed by this CPU's XDP cpumap kthread (BPF)")),
      bpfInfo_(gauge(*registry_, "rxtune_bpf_info", "Whether a BPF program is loaded; always 1")),
      decisions_(counter(*registry_, "rxtune_steering_decisions_total", "steering: mode: auto decisions (enable, keep, undo, hold, retry) and why")),
      autoState_(gauge(*registry_, "rxtune_steering_auto_state", "steering: mode: auto state of the interface (off, trial, on, backoff): 1 for the current one")),
      autoTargets_(gauge(*registry_, "rxtune_steering_auto_target_cpus", "CPUs steering: mode: auto steers the interface to now (0: off)")),
      autoMode_(gauge(*registry_, "rxtune_steering_auto_mode", "steering: mode: auto's way of steering the interface now (rps, xdp, none): 1 for the current one")),
      trialDelivered_(gauge(*registry_, "rxtune_steering_trial_delivered_pps", "Packets/s the stack delivered during mode auto's last trial of each candidate (none: before steering)")),
      trialPredicted_(gauge(*registry_, "rxtune_steering_trial_predicted_pps", "Packets/s mode auto predicted each candidate would deliver before its last trial (a skipped one's too): beside rxtune_steering_trial_delivered_pps, the model's error on this host")),
      stackDelivered_(counter(*registry_, "rxtune_stack_delivered_packets_total", "TCP segments in, UDP datagrams read or for closed ports, forwarded packets (this network namespace, IPv4+IPv6)")),
      stackLost_(counter(*registry_, "rxtune_stack_lost_packets_total", "UDP receive errors, TCP backlog and listen drops, IP input discards (this network namespace)")),
      // Named as Prometheus's own (prometheus_config_last_reload_successful and friends).
      reloads_(counter(*registry_, "rxtune_config_reload_total", "Reloads of the configuration and profile (SIGHUP, rxtune reload, or a change on disk) by result")),
      reloadOk_(gauge(*registry_, "rxtune_config_last_reload_successful", "Whether the last configuration load succeeded (0: a broken one was refused, the one before runs)")),
      reloadOkAt_(gauge(*registry_, "rxtune_config_last_reload_success_timestamp_seconds", "When the configuration in force was loaded")),
      reloadSeconds_(gauge(*registry_, "rxtune_config_last_reload_duration_seconds", "How long the last reload took: reading and checking the files, then planning and applying")),
      cpuIdle_(gauge(*registry_, "rxtune_cpu_idle_ratio", "Share of the last metrics interval the CPU was idle (idle + iowait, /proc/stat)")),
      webAuth_(counter(*registry_, "rxtune_web_auth_total", "Scrape requests checked for basic auth, by result: ok (bcrypt), remembered (a right password seen before), wrong_password, unknown_user, no_credentials, throttled (refused unchecked with 429: the address's share of the bcrypt budget was spent)")) {
    build_.Add({{"version", std::move(version)}}).Set(1);
    for (const char* r : {"changed", "unchanged", "failed"}) applies_.Add({{"result", r}});
    for (const char* s : {"in_sync", "drifted", "pending", "not_in_effect"}) settings_.Add({{"state", s}});
    lastApply_.Add({});
    busiest_.Add({});
    for (const char* r : {"success", "failure"}) reloads_.Add({{"result", r}});
    for (const KnobFamily* f : knobFamilies())
        for (const auto& c : f->counters()) familyCounters_[c.name] = &counter(*registry_, c.name.c_str(), c.help.c_str());
    for (const KnobFamily* f : knobFamilies())
        for (const auto& g : f->gauges()) familyGauges_[g.name].family = &gauge(*registry_, g.name.c_str(), g.help.c_str());
}

void Metrics::setCounter(prometheus::Counter& c, double total) {
    const double now = c.Value();
    if (total > now) c.Increment(total - now);
}

void Metrics::updateSnapshot(const HostSnapshot& snap) {
    Round<prometheus::Gauge> info(ifInfo_, liveInfo_), q(queues_, liveQueues_), qm(queuesMax_, liveQueuesMax_),
        cap(capacity_, liveCap_), cls(cpuClass_, liveClass_);
    Round<prometheus::Counter> pk(ifPackets_, livePackets_), by(ifBytes_, liveBytes_), dr(ifDrops_, liveDrops_);
    for (const auto& n : snap.nics) {
        info.at({{"interface", n.name},
                 {"driver", n.driver.driver},
                 {"kind", n.kind},
                 {"verdict", toString(n.verdict)},
                 {"numa_node", std::to_string(n.numaNode)}})
            .Set(1);
        q.at({{"interface", n.name}, {"direction", "rx"}}).Set(static_cast<double>(n.rx.size()));
        q.at({{"interface", n.name}, {"direction", "tx"}}).Set(static_cast<double>(n.tx.size()));
        const auto& ch = n.channels;
        double maxRx = ch.supported ? ch.maxRx + ch.maxCombined : n.numRxQueues;
        double maxTx = ch.supported ? ch.maxTx + ch.maxCombined : n.numTxQueues;
        qm.at({{"interface", n.name}, {"direction", "rx"}}).Set(maxRx);
        qm.at({{"interface", n.name}, {"direction", "tx"}}).Set(maxTx);
        // A re-created device starts its counters at zero again: a fresh child is a counter reset.
        auto counters = [&](Round<prometheus::Counter>& fam, std::uint64_t rx, std::uint64_t tx) {
            for (auto [dir, v] : {std::pair<const char*, std::uint64_t>{"rx", rx}, {"tx", tx}}) {
                const Labels l{{"interface", n.name}, {"direction", dir}};
                auto* c = &fam.at(l);
                if (static_cast<double>(v) < c->Value()) c = &fam.fresh(l);
                setCounter(*c, static_cast<double>(v));
            }
        };
        counters(pk, n.stats.rxPackets, n.stats.txPackets);
        counters(by, n.stats.rxBytes, n.stats.txBytes);
        counters(dr, n.stats.rxDropped, n.stats.txDropped);
    }
    FamilySnapshotGauges gauges(familyGauges_);
    for (const KnobFamily* f : knobFamilies()) f->exportSnapshot(snap, gauges);
    // A hot CPU is read against what it can do: its capacity and class beside its softirq series.
    for (const auto& [cpu, c] : snap.host.capacity) cap.at({{"cpu", std::to_string(cpu)}}).Set(c);
    for (const auto& c : cpuClasses(snap.host))
        for (unsigned cpu : c.cpus.cpus()) {
            auto t = snap.host.coreType.find(cpu);
            cls.at({{"cpu", std::to_string(cpu)}, {"class", c.name}, {"core_type", t == snap.host.coreType.end() ? "" : t->second}}).Set(1);
        }
}

void Metrics::updateSoftnet(const std::map<unsigned, SoftnetRow>& softnet, const std::map<unsigned, std::uint64_t>& netRx) {
    std::uint64_t sum = 0, busiest = 0;
    for (const auto& [cpu, row] : softnet) {
        const prometheus::Labels l{{"cpu", std::to_string(cpu)}};
        const std::uint64_t processed = wrapProcessed_[cpu].update(row.processed);
        setCounter(processed_.Add(l), static_cast<double>(processed));
        setCounter(dropped_.Add(l), static_cast<double>(wrapDropped_[cpu].update(row.dropped)));
        setCounter(squeezed_.Add(l), static_cast<double>(wrapSqueezed_[cpu].update(row.timeSqueeze)));
        setCounter(receivedRps_.Add(l), static_cast<double>(wrapRps_[cpu].update(row.receivedRps)));
        setCounter(flowLimit_.Add(l), static_cast<double>(wrapFlow_[cpu].update(row.flowLimitCount)));
        backlog_.Add(l).Set(row.backlogLen);
        if (auto it = lastProcessed_.find(cpu); it != lastProcessed_.end()) {
            const std::uint64_t d = processed - it->second;
            sum += d;
            busiest = std::max(busiest, d);
        }
        lastProcessed_[cpu] = processed;
    }
    for (const auto& [cpu, n] : netRx) setCounter(netRx_.Add({{"cpu", std::to_string(cpu)}}), static_cast<double>(n));
    lastShare_ = sum ? static_cast<double>(busiest) / static_cast<double>(sum) : 0.0;
    busiest_.Add({}).Set(lastShare_);
}

void Metrics::recordApply(const ApplyOutcome& o) {
    applies_.Add({{"result", o.result}}).Increment();
    if (o.result == "failed") return;
    if (o.profile != currentProfile_ || o.digest != currentDigest_) {
        if (!currentProfile_.empty()) profile_.Remove(&profile_.Add({{"profile", currentProfile_}, {"digest", currentDigest_}}));
        currentProfile_ = o.profile;
        currentDigest_ = o.digest;
        profile_.Add({{"profile", o.profile}, {"digest", o.digest}}).Set(1);
    }
    settings_.Add({{"state", "in_sync"}}).Set(static_cast<double>(o.inSync));
    settings_.Add({{"state", "drifted"}}).Set(static_cast<double>(o.drifted));
    settings_.Add({{"state", "pending"}}).Set(static_cast<double>(o.pending));
    settings_.Add({{"state", "not_in_effect"}}).Set(static_cast<double>(o.notInEffect));
    lastApply_.Add({}).Set(o.timestamp);
}

void Metrics::updateBpf(const std::map<unsigned, CpuSoftirq>& perCpu) {
    for (const auto& [cpu, v] : perCpu) {
        const prometheus::Labels l{{"cpu", std::to_string(cpu)}};
        setCounter(bpfNetRxSeconds_.Add(l), static_cast<double>(v.netRxNs) / 1e9);
        setCounter(bpfNapiPolls_.Add(l), static_cast<double>(v.napiPolls));
        setCounter(bpfNapiPackets_.Add(l), static_cast<double>(v.napiPackets));
        setCounter(bpfBudget_.Add(l), static_cast<double>(v.budgetExhausted));
        setCounter(bpfCpumap_.Add(l), static_cast<double>(v.cpumapPackets));
    }
}

void Metrics::setBpfState(const std::string& program, BpfAvailability state) {
    for (auto s : {BpfAvailability::kAvailable, BpfAvailability::kNotSupported, BpfAvailability::kError,
                   BpfAvailability::kPaused, BpfAvailability::kDisabled})
        bpfInfo_.Add({{"program", program}, {"state", toString(s)}}).Set(s == state ? 1 : 0);
}

void Metrics::countDriftCorrection(const Setting& s) {
    drift_.Add({{"interface", s.key.device}, {"setting", familyOf(s.key).settingLabel(s.key)}}).Increment();
}

void Metrics::count(const std::string& name, const MetricLabels& labels, double by) { familyCounters_.at(name)->Add(labels).Increment(by); }

void Metrics::observeReapplyLatency(std::chrono::nanoseconds d) {
    static const prometheus::Histogram::BucketBoundaries kBuckets = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                                                     0.05,   0.1,   0.25,  0.5,   1,    2.5};
    latency_.Add({}, kBuckets).Observe(std::chrono::duration<double>(d).count());
}

void Metrics::countSteeringDecision(const std::string& interface, const std::string& decision, const std::string& reason) {
    decisions_.Add({{"interface", interface}, {"decision", decision}, {"reason", reason}}).Increment();
}

void Metrics::setAutoState(const std::string& interface, const std::string& state, unsigned targets, const std::string& mode) {
    for (const char* s : {"off", "trial", "on", "backoff"})
        autoState_.Add({{"interface", interface}, {"state", s}}).Set(state == s ? 1 : 0);
    autoTargets_.Add({{"interface", interface}}).Set(targets);
    // Every mode a device can be on (all but auto itself).
    for (const auto& m : kSteeringModes)
        if (m.mode != SteeringMode::kAuto)
            autoMode_.Add({{"interface", interface}, {"mode", m.name}}).Set(mode == m.name && !state.empty() ? 1 : 0);
}

void Metrics::setTrialDelivered(const std::string& interface, const std::string& candidate, double pps) {
    trialDelivered_.Add({{"interface", interface}, {"candidate", candidate}}).Set(pps);
}

void Metrics::setTrialPredicted(const std::string& interface, const std::string& candidate, double pps) {
    trialPredicted_.Add({{"interface", interface}, {"candidate", candidate}}).Set(pps);
}

prometheus::Counter& Metrics::webAuth(const std::string& result) { return webAuth_.Add({{"result", result}}); }

void Metrics::recordReload(bool ok, double timestamp, double seconds) {
    reloads_.Add({{"result", ok ? "success" : "failure"}}).Increment();
    reloadSeconds_.Add({}).Set(seconds);
    reloadOk_.Add({}).Set(ok ? 1 : 0);
    if (ok) reloadOkAt_.Add({}).Set(timestamp);
}

void Metrics::recordStartConfig(double timestamp) {
    reloadOk_.Add({}).Set(1);
    reloadOkAt_.Add({}).Set(timestamp);
}

void Metrics::updateCpuIdle(const std::map<unsigned, CpuJiffies>& procStat) {
    for (const auto& [cpu, now] : procStat) {
        auto it = lastProcStat_.find(cpu);
        if (it == lastProcStat_.end()) continue;
        const double total = static_cast<double>(now.total - std::min(now.total, it->second.total));
        const double busy = static_cast<double>(now.busy - std::min(now.busy, it->second.busy));
        const double idle = std::max(0.0, total - busy);
        if (total > 0) cpuIdle_.Add({{"cpu", std::to_string(cpu)}}).Set(std::min(1.0, idle / total));
    }
    lastProcStat_ = procStat;
}

void Metrics::updateStack(const StackCounters& c) {
    setCounter(stackDelivered_.Add({}), static_cast<double>(c.delivered));
    setCounter(stackLost_.Add({}), static_cast<double>(c.lost));
}

}  // namespace rxtune
