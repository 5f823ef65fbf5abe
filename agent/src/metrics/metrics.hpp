// Metrics: rxtune's Prometheus families (prometheus-cpp core only; the daemon adds HTTP).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "core/setting.hpp"
#include "knobs/metrics_sink.hpp"

#include "inventory/snapshot.hpp"
#include "bpf/softirq_accounting.hpp"
#include "inventory/softnet.hpp"
#include "inventory/stack_counters.hpp"

namespace rxtune {

struct ApplyOutcome {
    std::string profile;
    std::string digest;  // of the profile's files (Profile::digest)
    std::string result;  // "changed", "unchanged", "failed"
    double timestamp = 0;  // seconds since the epoch
    size_t inSync = 0, drifted = 0;
    size_t pending = 0;      // in place, in effect later (an IRQ until its next interrupt)
    size_t notInEffect = 0;  // in place, but the kernel goes on acting against it
};

// The knob families count their own series through it (knobs/metrics_sink.hpp).
class Metrics final : public CounterSink {
public:
    explicit Metrics(std::string version);
    std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

    // Interface, queue, CPU and governor state from a fresh snapshot.
    void updateSnapshot(const HostSnapshot& snap);
    // Per-CPU receive work; also computes rxtune_rx_busiest_cpu_share over the interval since the last call.
    void updateSoftnet(const std::map<unsigned, SoftnetRow>& softnet, const std::map<unsigned, std::uint64_t>& netRx);
    void recordApply(const ApplyOutcome& o);
    // Exact NET_RX accounting from BPF (totals since load), and whether it is there at all.
    void updateBpf(const std::map<unsigned, CpuSoftirq>& perCpu);
    void setBpfState(const std::string& program, BpfAvailability state);
    void countDriftCorrection(const Setting& s);
    // A knob family's own counter (KnobFamily::counters), by its name and labels.
    void count(const std::string& name, const MetricLabels& labels, double by = 1) override;
    void observeReapplyLatency(std::chrono::nanoseconds d);
    // steering: mode: auto
    void countSteeringDecision(const std::string& interface, const std::string& decision, const std::string& reason);
    // mode: the way of steering in place ("rps", "xdp", or "none").
    void setAutoState(const std::string& interface, const std::string& state, unsigned targets, const std::string& mode = "none");
    // What one trial (candidate "none": the baseline before it) delivered, packets/s.
    void setTrialDelivered(const std::string& interface, const std::string& candidate, double pps);
    // What mode auto predicted a candidate would deliver before it tried it (skipped ones too).
    void setTrialPredicted(const std::string& interface, const std::string& candidate, double pps);
    // This network namespace's stack totals (StackCounters).
    void updateStack(const StackCounters& c);
    // A reload, by SIGHUP, rxtune reload or a change on disk; seconds: how long it took, from
    // reading the files to the settings applied.
    void recordReload(bool ok, double timestamp, double seconds);
    // The configuration loaded at start: in force, not a reload.
    void recordStartConfig(double timestamp);
    // Each CPU's idle share (idle + iowait) over the last metrics interval, from /proc/stat.
    void updateCpuIdle(const std::map<unsigned, CpuJiffies>& procStat);

    // The scrape endpoint's basic-auth outcomes (web/auth_guard's labels); the child, made once and
    // then counted from the scrape thread.
    prometheus::Counter& webAuth(const std::string& result);

    double busiestShare() const { return lastShare_; }

private:
    static void setCounter(prometheus::Counter& c, double total);

    std::shared_ptr<prometheus::Registry> registry_;
    prometheus::Family<prometheus::Gauge>& build_;
    prometheus::Family<prometheus::Gauge>& ifInfo_;
    prometheus::Family<prometheus::Gauge>& queues_;
    prometheus::Family<prometheus::Gauge>& queuesMax_;
    prometheus::Family<prometheus::Counter>& ifPackets_;
    prometheus::Family<prometheus::Counter>& ifBytes_;
    prometheus::Family<prometheus::Counter>& ifDrops_;
    prometheus::Family<prometheus::Counter>& processed_;
    prometheus::Family<prometheus::Counter>& dropped_;
    prometheus::Family<prometheus::Counter>& squeezed_;
    prometheus::Family<prometheus::Counter>& receivedRps_;
    prometheus::Family<prometheus::Counter>& flowLimit_;
    prometheus::Family<prometheus::Gauge>& backlog_;
    prometheus::Family<prometheus::Counter>& netRx_;
    prometheus::Family<prometheus::Gauge>& capacity_;
    prometheus::Family<prometheus::Gauge>& cpuClass_;
    prometheus::Family<prometheus::Gauge>& profile_;
    prometheus::Family<prometheus::Gauge>& settings_;
    prometheus::Family<prometheus::Counter>& applies_;
    std::map<std::string, prometheus::Family<prometheus::Counter>*> familyCounters_;
    struct FamilyGauge {
        prometheus::Family<prometheus::Gauge>* family = nullptr;
        std::map<std::string, prometheus::Gauge*> live;
    };
    std::map<std::string, FamilyGauge> familyGauges_;  // the families' own, by name  // the families' own, by name
    prometheus::Family<prometheus::Counter>& drift_;
    prometheus::Family<prometheus::Gauge>& lastApply_;
    prometheus::Family<prometheus::Histogram>& latency_;
    prometheus::Family<prometheus::Gauge>& busiest_;
    prometheus::Family<prometheus::Counter>& bpfNetRxSeconds_;
    prometheus::Family<prometheus::Counter>& bpfNapiPolls_;
    prometheus::Family<prometheus::Counter>& bpfNapiPackets_;
    prometheus::Family<prometheus::Counter>& bpfBudget_;
    prometheus::Family<prometheus::Counter>& bpfCpumap_;
    prometheus::Family<prometheus::Gauge>& bpfInfo_;
    prometheus::Family<prometheus::Counter>& decisions_;
    prometheus::Family<prometheus::Gauge>& autoState_;
    prometheus::Family<prometheus::Gauge>& autoTargets_;
    prometheus::Family<prometheus::Gauge>& autoMode_;
    prometheus::Family<prometheus::Gauge>& trialDelivered_;
    prometheus::Family<prometheus::Gauge>& trialPredicted_;
    prometheus::Family<prometheus::Counter>& stackDelivered_;
    prometheus::Family<prometheus::Counter>& stackLost_;
    prometheus::Family<prometheus::Counter>& reloads_;
    prometheus::Family<prometheus::Gauge>& reloadOk_;
    prometheus::Family<prometheus::Gauge>& reloadOkAt_;
    prometheus::Family<prometheus::Gauge>& reloadSeconds_;
    prometheus::Family<prometheus::Gauge>& cpuIdle_;
    prometheus::Family<prometheus::Counter>& webAuth_;

    // Live children of the snapshot-derived families, removed when their interface or CPU goes away.
    std::map<std::string, prometheus::Gauge*> liveInfo_, liveQueues_, liveQueuesMax_, liveCap_, liveClass_;
    std::map<std::string, prometheus::Counter*> livePackets_, liveBytes_, liveDrops_;
    std::map<unsigned, WrapCounter> wrapProcessed_, wrapDropped_, wrapSqueezed_, wrapRps_, wrapFlow_;
    std::map<unsigned, std::uint64_t> lastProcessed_;
    double lastShare_ = 0;
    std::string currentProfile_, currentDigest_;
    std::map<unsigned, CpuJiffies> lastProcStat_;
};

}  // namespace rxtune
