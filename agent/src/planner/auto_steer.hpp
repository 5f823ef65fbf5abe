// steering: mode: auto. A pure state machine per interface, fed one measurement sample at a time:
// it turns RPS on only when the receive CPU is saturated by receive work and some CPU has spare
// capacity, checks the effect over a window, undoes a change that made things worse and then holds
// off. Everything it decides comes back with a reason and the numbers behind it.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/cpuset.hpp"
#include "inventory/softnet.hpp"
#include "profile/profile.hpp"

namespace rxtune {


struct CpuLoad {
    double busy = 0;    // non-idle share of wall time
    double netRx = 0;   // NET_RX softirq share of wall time (BPF exact, else /proc/stat softirq)
    double squeezed = 0;  // softnet time_squeeze per second: NET_RX runs that ended with work left
};

struct AutoSample {
    double at = 0;             // seconds, monotonic
    double deliveredPps = 0;   // interface RX packets/s minus softnet drops/s: what reached the stack
    double drops = 0;          // softnet drops/s on all CPUs
    std::map<unsigned, CpuLoad> cpus;
};

// Raw counters at one moment; two of them make a sample.
struct AutoRaw {
    double at = 0;                                // seconds, monotonic
    std::map<unsigned, CpuJiffies> cpu;           // /proc/stat
    std::map<unsigned, std::uint64_t> netRxNs;    // BPF NET_RX time; empty without BPF
    std::map<std::string, std::uint64_t> rxPackets;  // per interface (rtnetlink stats64)
    std::uint64_t softnetDrops = 0;               // all CPUs, 64-bit
    std::map<unsigned, std::uint64_t> squeezes;   // per CPU, softnet time_squeeze
};
// NET_RX share from BPF where both readings have it, else the /proc/stat softirq share (all
// softirqs: an upper bound).
AutoSample autoSample(const AutoRaw& before, const AutoRaw& after, const std::string& ifname);
// The CPU with the largest NET_RX share: the receive CPU of a device without an IRQ.
unsigned busiestRxCpu(const AutoSample& s);

enum class AutoState { kOff, kTrial, kOn, kBackoff };
const char* toString(AutoState s);

struct AutoDecision {
    std::string decision;  // "enable", "keep", "undo", "hold", "retry"; empty: nothing new
    std::string reason;    // short code for the metric label: saturated, better, worse, ...
    std::string detail;    // the numbers, for the log
    bool changed = false;  // the targets changed: reconcile
};

class AutoSteer {
public:
    explicit AutoSteer(AutoThresholds t = {}) : t_(t) {}
    // rxCpu: the CPU doing the interface's receive work (IRQ CPU, else the busiest NET_RX CPU);
    // candidates: the profile's eligible CPUs (cpuset, isolation already applied);
    // rxSiblings: rxCpu's SMT siblings (itself included).
    AutoDecision step(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings);

    // A reloaded profile's thresholds; the state (and steering that is on) stays, so a reload does
    // not undo a change that was kept. A back-off already running keeps its end.
    void setThresholds(const AutoThresholds& t) { t_ = t; }
    const AutoThresholds& thresholds() const { return t_; }

    AutoState state() const { return state_; }
    const CpuSet& targets() const { return targets_; }  // empty: steering off
    // The receive CPU when steering went on (once it is on, the busiest NET_RX CPU is a target).
    unsigned rxCpuAtEnable() const { return rxCpu_; }

    // The targets a first look at one sample gives (the one-shot `plan`/`apply`), with each
    // CPU's reason; nothing of the state changes.
    struct Choice {
        CpuSet targets;
        std::map<unsigned, std::string> why;  // every candidate: "chosen: 62% idle" / "left out: ..."
        std::string verdict;                   // why steering is on or off
    };
    Choice choose(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings) const;

private:
    // Saturated by receive work: busy, and either mostly in NET_RX or (with at least half that
    // share) running out of budget with packets left (time_squeeze).
    bool saturated(const CpuLoad& rx) const {
        if (rx.busy < t_.busyOn) return false;
        return rx.netRx >= t_.onRxShare || (rx.netRx >= t_.onRxShare / 2 && rx.squeezed >= kSqueezesPerSecond);
    }
    static constexpr double kSqueezesPerSecond = 10;
    static double mean(double sum, unsigned n) { return n ? sum / n : 0; }
    void resetBaseline() {
        baselineSum_ = baselineDrops_ = 0;
        baselineN_ = 0;
        holding_ = false;
    }

    AutoThresholds t_;
    AutoState state_ = AutoState::kOff;
    CpuSet targets_;
    unsigned rxCpu_ = 0;
    unsigned bad_ = 0;
    double baselineSum_ = 0, baselineDrops_ = 0;
    unsigned baselineN_ = 0;  // saturated samples in a row (kOff)
    double baselinePps_ = 0, baselineDropRate_ = 0;  // before the change
    double trialStart_ = 0, trialSum_ = 0, trialDrops_ = 0;
    unsigned trialN_ = 0;
    double committedPps_ = 0;
    double backoffUntil_ = 0;
    bool holding_ = false;
};

}  // namespace rxtune
