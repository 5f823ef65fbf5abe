// steering: mode: auto. A pure state machine per interface, fed one measurement sample at a time:
// when the receive CPU is saturated by receive work and some CPU has spare capacity, it tries each
// candidate way of steering (RPS, XDP cpumap) until its result is clear (a sequential test on the
// delivered rate against no steering's, a window at most), keeps the one that delivered most if it
// beats no steering by the margin, else undoes everything and holds off. A kept choice is undone
// when its targets fill up and less gets through. Everything it decides comes back with a reason and
// the numbers behind it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/cpuset.hpp"
#include "core/counters.hpp"
#include "profile/profile.hpp"

namespace rxtune {


struct CpuLoad {
    double busy = 0;    // non-idle share of wall time
    double netRx = 0;   // NET_RX softirq share of wall time (BPF exact, else /proc/stat softirq)
    double squeezed = 0;  // softnet time_squeeze per second: NET_RX runs that ended with work left
};

struct AutoSample {
    double at = 0;             // seconds, monotonic: the end of the interval measured
    double span = 0;           // seconds: the interval's length
    // What the stack delivered per second: TCP segments in, UDP datagrams read (or for closed
    // ports), forwarded packets (StackCounters). Without those counters, the device's RX
    // packets/s with softnet drops taken out where the driver counts before the backlog.
    double deliveredPps = 0;
    double lossPps = 0;        // socket, backlog and IP input losses plus softnet drops, per second
    double drops = 0;          // softnet drops/s on all CPUs
    const char* source = "stack";  // "stack" or "device": where deliveredPps comes from
    std::map<unsigned, CpuLoad> cpus;
};

// Raw counters at one moment; two of them make a sample.
struct AutoRaw {
    double at = 0;                                // seconds, monotonic
    std::map<unsigned, CpuJiffies> cpu;           // /proc/stat
    std::map<unsigned, std::uint64_t> netRxNs;    // BPF NET_RX time; empty without BPF
    unsigned netRxSpell = 0;                      // the programs' spell of attached time (BpfControl::Reading)
    std::map<std::string, std::uint64_t> rxPackets;  // per interface (rtnetlink stats64)
    std::uint64_t softnetDrops = 0;               // all CPUs, 64-bit
    std::map<unsigned, std::uint64_t> squeezes;   // per CPU, softnet time_squeeze
    std::optional<StackCounters> stack;           // this network namespace's; absent: device fallback
    // Interfaces whose RX counter counts only what the backlog accepted (veth, tap: the driver
    // counts after netif_rx); a NIC counts before, so softnet drops are part of its RX count.
    std::set<std::string> rxAfterBacklog;
};

// The device fallback: RX packets/s less the drops the device's RX counter includes.
double deviceDeliveredPps(double rxPps, double softnetDropPps, bool countsAfterBacklog);
// NET_RX share from BPF where both readings have it, else the /proc/stat softirq share (all
// softirqs: an upper bound). Delivered and lost from the stack counters where both readings have
// them, else from the interface's RX counter.
AutoSample autoSample(const AutoRaw& before, const AutoRaw& after, const std::string& ifname);
// The CPU with the largest NET_RX share: the receive CPU of a device without an IRQ.
unsigned busiestRxCpu(const AutoSample& s);

enum class AutoState { kOff, kTrial, kOn, kBackoff };
const char* toString(AutoState s);

const char* candidateName(SteeringMode m);  // "rps", "xdp"; "none" for no steering

struct AutoDecision {
    std::string decision;  // "enable", "try", "keep", "undo", "hold", "retry"; empty: nothing new
    std::string reason;    // short code for the metric label: saturated, rps, xdp, better, worse, ...
    std::string detail;    // the numbers, for the log
    bool changed = false;  // the targets or the way of steering changed: reconcile
};

// Running sums of a series of samples: its mean and spread.
struct Moments {
    unsigned n = 0;
    double sum = 0, squares = 0;
    void add(double v) {
        ++n;
        sum += v;
        squares += v * v;
    }
    double mean() const { return n ? sum / n : 0; }
    double variance() const;  // the sample variance (n - 1); 0 below two samples
};

// The sequential decision on a trial: the ratio of its mean delivered rate to none's, with a 99 %
// confidence interval (Student's t on the smaller series' degrees of freedom, the ratio's spread by
// the delta method). A trial's result is clear once that interval lies wholly above or wholly
// below `bar` (1 + gain_margin): it beats the margin, or it cannot.
struct RatioEstimate {
    double ratio = 0, low = 0, high = 0;
    enum class Verdict { kMeasuring, kAbove, kBelow } verdict = Verdict::kMeasuring;
};
RatioEstimate estimateRatio(const Moments& trial, const Moments& baseline, double bar);

// One candidate's trial: its mean until its result was clear (or the window ran out, or it was cut).
struct AutoTrial {
    SteeringMode mode = SteeringMode::kRps;
    // On a host whose cores differ (big/little), RPS and XDP are each tried twice: onto the
    // biggest cores of the targets only, and onto all of them.
    bool bigOnly = false;
    CpuSet targets;
    double deliveredPps = 0, lossPps = 0;
    unsigned samples = 0;
    double seconds = 0;   // how long it was measured (the sample that straddled the change left out)
    RatioEstimate vsNone{};  // against none, at its end
    bool cut = false;     // stopped at once: less than half of what none delivered
    bool failed = false;  // could not be put in place (the "try"/"undo" decision says why)
};

std::string trialName(const AutoTrial& t);  // "rps", or "rps_big" for the big cores only (logs, metrics)

// The trials the daemon runs, in its order: each mode of `modes` onto `targets`, and where
// `biggest` (the biggest cores of the candidates, on a host whose cores differ) holds some but not
// all of the targets, RPS and XDP first onto those alone (a NAPI kthread is put on the biggest
// of its targets by the planner: one trial). The one list the daemon queues, its log, status and
// plan --explain show.
std::vector<AutoTrial> trialOrder(const std::vector<SteeringMode>& modes, const CpuSet& targets, const CpuSet& biggest);
// "rps_big (CPUs 0-3), then rps (CPUs 0-7), then xdp_big (CPUs 0-3), then xdp (CPUs 0-7)"
std::string trialOrderText(const std::vector<AutoTrial>& trials);

class AutoSteer {
public:
    explicit AutoSteer(AutoThresholds t = {}) : t_(t) {}
    // rxCpu: the CPU doing the interface's receive work (IRQ CPU, else the busiest NET_RX CPU);
    // candidates: the profile's eligible CPUs (cpuset, isolation already applied);
    // rxSiblings: rxCpu's SMT siblings (itself included); biggest: the biggest cores among the
    // candidates where the host's cores differ, else empty (then each mode has one trial).
    AutoDecision step(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings,
                      const CpuSet& biggest = {});

    // A reloaded profile's thresholds; the state (and steering that is on) stays, so a reload does
    // not undo a change that was kept. A back-off already running keeps its end.
    void setThresholds(const AutoThresholds& t) { t_ = t; }
    const AutoThresholds& thresholds() const { return t_; }

    // The way of steering now in place could not be put in place (an XDP program of someone else's on
    // the device, no BPF): the next candidate is tried, or, with none left, steering goes off.
    AutoDecision failed(double at, const std::string& why);

    AutoState state() const { return state_; }
    const CpuSet& targets() const { return targets_; }  // empty: steering off
    SteeringMode mode() const { return targets_.empty() ? SteeringMode::kNone : mode_; }
    // The trial in place (state kTrial) or kept (kOn); nullptr otherwise.
    const AutoTrial* current() const {
        return (state_ == AutoState::kTrial || state_ == AutoState::kOn) && trialIdx_ < trials_.size() ? &trials_[trialIdx_] : nullptr;
    }
    // The attempt in progress or last judged: none's rate before it, and each candidate's trial.
    double baselinePps() const { return baselinePps_; }
    const std::vector<AutoTrial>& trials() const { return trials_; }
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
    // A trial delivering less than this share of none's rate is cut at its first sample: a starved
    // target (receive livelock) must not last (measured: 1k vs 263k datagrams/s).
    static constexpr double kCutShare = 0.5;
    // The fewest samples a trial's verdict (or none's baseline) rests on.
    static constexpr unsigned kMinSamples = 4, kMinBaseline = 2;
    AutoDecision advance(double at, std::string result);  // the next candidate, or the judgement
    // step() by state.
    AutoDecision stepBackoff(const AutoSample& s);
    AutoDecision stepOff(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings, const CpuSet& biggest);
    AutoDecision stepTrial(const AutoSample& s);
    AutoDecision stepOn(const AutoSample& s);
    bool napiWithoutSpare(Choice& c, std::vector<SteeringMode>& modes, unsigned rxCpu, const CpuSet& candidates,
                          const CpuSet& rxSiblings) const;
    AutoDecision judge(double at, const std::string& results);
    void startTrial(double at) {
        mode_ = trials_[trialIdx_].mode;
        targets_ = trials_[trialIdx_].targets;
        trialStart_ = at;
        trial_ = trialLoss_ = Moments{};
        straddled_ = false;
    }
    void resetBaseline() {
        baseline_ = baselineLoss_ = Moments{};
        holding_ = false;
    }

    AutoThresholds t_;
    AutoState state_ = AutoState::kOff;
    CpuSet targets_;
    unsigned rxCpu_ = 0;
    double badSince_ = -1;  // kOn: since when delivery has fallen short with full targets; < 0: it has not
    Moments baseline_, baselineLoss_;  // the saturated samples in a row (kOff)
    double spellStart_ = 0;            // since when they have been saturated
    Moments before_;                   // none's samples behind the attempt in progress
    double baselinePps_ = 0, baselineLossRate_ = 0;  // before the change
    double trialStart_ = 0;
    bool straddled_ = false;  // the sample that spans the change has gone by
    Moments trial_, trialLoss_;
    std::vector<AutoTrial> trials_;
    size_t trialIdx_ = 0;
    SteeringMode mode_ = SteeringMode::kRps;
    double committedPps_ = 0;
    double backoffUntil_ = 0;
    bool holding_ = false;
};

}  // namespace rxtune
