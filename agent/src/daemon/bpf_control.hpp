// BpfControl: the daemon's exact softirq accounting: loaded per bpf_accounting, read each
// metrics interval while attached, and detached by the governor while its cost would show.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "bpf/governor.hpp"
#include "bpf/softirq_accounting.hpp"
#include "metrics/metrics.hpp"
#include "profile/daemon_config.hpp"

namespace rxtune {

class BpfControl {
public:
    using Loader = std::function<Result<std::unique_ptr<SoftirqSource>>()>;
    // loader: the real programs by default; tests give a source of their own.
    explicit BpfControl(Metrics& metrics, Loader loader = {});

    void start(const DaemonConfig& cfg);
    // A reload: bpf_accounting on/off changes wait for the next start (next is put back, and a
    // warning says so); auto <-> on or a new rate start the governor over.
    void reconfigure(const DaemonConfig& current, DaemonConfig& next);
    // One metrics interval, at `at` seconds (monotonic): what the programs measured, if the whole
    // interval was measured (read before the governor acts: paused programs count nothing), then
    // the governor's turn on the NET_RX softirq counts.
    std::optional<std::map<unsigned, CpuSoftirq>> sample(const std::map<unsigned, std::uint64_t>& netRxCounts, double at);

    // Mode auto's own clock, between metrics intervals: each CPU's NET_RX time so far, with the
    // number of the spell of attached time it belongs to (the programs count nothing while
    // paused, so only two readings of one spell span measured time). Nothing while detached.
    struct Reading {
        std::map<unsigned, std::uint64_t> netRxNs;
        unsigned spell = 0;
    };
    std::optional<Reading> read();

    bool loaded() const { return source_ != nullptr; }
    // Each CPU's NET_RX share of the last interval the programs measured whole; empty if none.
    const std::map<unsigned, double>& lastShares() const { return shares_; }
    bool attached() const { return source_ && source_->attached(); }

private:
    void setGovernor(const DaemonConfig& cfg);

    Metrics& metrics_;
    Loader loader_;
    std::unique_ptr<SoftirqSource> source_;  // null where BPF is not available or switched off
    std::unique_ptr<BpfGovernor> governor_;  // bpf_accounting: auto
    std::optional<std::map<unsigned, CpuSoftirq>> prev_;  // the last reading, if the programs stayed attached since
    double prevAt_ = 0;
    std::map<unsigned, double> shares_;
    unsigned spell_ = 0;  // counts the pauses and resumptions
};

}  // namespace rxtune
