// steering: mode: auto. A pure state machine per interface, fed one measurement sample at a time:
// when the receive CPU is saturated by receive work and some CPU has spare capacity, it tries each
// candidate way of steering (RPS, XDP cpumap) until its result is clear (a sequential test on the
// delivered rate against no steering's, a window at most), keeps the one that delivered most if it
// beats no steering by the margin, else undoes everything and holds off. A kept choice is undone
// when its targets fill up and less gets through. Everything it decides comes back with a reason and
// the numbers behind it. Before it tries anything it predicts what each candidate can give from
// what it measured (predict(), below), orders the trials by that, skips the ones that cannot beat
// the margin, and after each trial says how far the prediction was off.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/cpuset.hpp"
#include "core/counters.hpp"
#include "core/nic.hpp"
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
    double rxPps = 0;          // the interface's RX packets/s (what its receive CPU handles); 0: not read
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

// What a spell of samples showed, averaged: the prediction's inputs.
struct LoadView {
    unsigned n = 0;
    double deliveredPps = 0, rxPps = 0, lossPps = 0;
    std::map<unsigned, CpuLoad> cpus;
    void add(const AutoSample& s);  // running means
};

// What a candidate is predicted to give, from a LoadView of no steering (a capacity model; the
// kernel's receive path as it splits between the receive CPU and the targets):
// - c, the receive CPU's NET_RX time per packet it handles (its NET_RX share / the RX packets/s);
// - the candidate moves a share m of that work to its targets (RPS: the protocol stack after the
//   driver's poll and the RPS hand-off; XDP cpumap: the same, the skb built or GRO'd there; a
//   threaded NAPI: the whole poll), where it costs k times as much (the hand-off, a cold cache);
// - the other work on each CPU (an application reading what is delivered, a sender) grows with
//   the rate, as it does when it is what consumes or makes the traffic;
// - the ceiling is the lower of the receive CPU's (its time over what stays there per packet) and
//   the targets' (their time over the moved work and their own per packet; a NAPI kthread is one
//   thread: one target's).
// `ratio` is that ceiling over none's delivered rate, times this host's correction for the
// candidate (measured / predicted at its last trial; 1 before any). `bound` is what no candidate
// can beat however well it splits the work: all receive work spread over the room the receive CPU
// and the targets have, nothing else growing (work conservation): a candidate whose bound is under
// 1 + gain_margin is skipped untried.
// The model is a capacity: what the CPUs could carry. It is what a candidate delivers only where
// demand would fill it, as it did under none when none's receive CPU was full. Where that CPU had
// room (busy under kDemandBoundBusy, no NET_RX run squeezed), none delivered what arrived, less
// what the stack lost: no candidate delivers more than arrives, so `ratio` is at most `demand`,
// (delivered + lost) / delivered (1x when nothing was lost). A client whose rate follows latency
// (closed loop) can get a little more; the trial measures it: the demand orders and says, never
// skips (`bound` is the capacity's).
struct Prediction {
    double ratio = 0;       // predicted delivered / none's delivered: the lower of the corrected model and the demand
    double model = 0;       // the model's ratio before this host's correction
    double demand = 1e9;    // what arrived over what none delivered, where none was not saturated (1e9: unknown, not a limit)
    bool demandBound = false;  // the demand is what `ratio` is: the corrected model is above it
    double correction = 1;  // measured / predicted at this candidate's last trial here
    bool corrected = false; // a trial of this candidate on this host set `correction`
    double bound = 0;       // the most it could give (work conservation)
    double pps = 0;         // ratio times none's delivered rate
    std::string why;        // "targets 1-3 have 2.4 CPUs idle; 2.1 us of NET_RX per packet on CPU 0"
};
Prediction predict(SteeringMode mode, const CpuSet& targets, unsigned rxCpu, const LoadView& none);
// none's receive CPU busier than this (or squeezed) counts as full: its demand is not known.
inline constexpr double kDemandBoundBusy = 0.8;
// `p.ratio` from its model, its correction and its demand (predict, plannedTrials).
void settle(Prediction& p, double nonePps);

// What a candidate's delivered rate counts for against none's, as a factor: 1, and for busy-poll,
// whose kthread spends a CPU whole whether packets come or not, B / (B + 1), B the CPUs' worth
// `none` kept busy (at least 1): what it delivers per CPU spent, its core charged.
double costFactor(SteeringMode mode, const LoadView& none);
// "predicted 1.90x none (targets 1-3 have ...)"
std::string predictionText(const Prediction& p);

// Mode auto's candidates this kernel can put in place: busy-poll only where napi-set's policy takes
// it (Linux 6.19+). `features` null: the policy could not be read (`unread` says why). `note` says
// what was left out and why, "" where nothing was; where nothing is left, the default (rps), said so.
struct AvailableCandidates {
    std::vector<SteeringMode> modes;
    std::string note;
};
AvailableCandidates availableCandidates(std::vector<SteeringMode> listed, const NapiFeatures* features, const std::string& unread,
                                        const std::string& kernel);

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
    Prediction predicted{};  // before the trial (the order, the skip)
    bool skipped = false;    // not tried: its prediction could not beat the margin (predicted.why, skipWhy)
    std::string skipWhy;
};

std::string trialName(const AutoTrial& t);  // "rps", or "rps_big" for the big cores only (logs, metrics)

// The trials the daemon runs, in its order: each mode of `modes` onto `targets`, and where
// `biggest` (the biggest cores of the candidates, on a host whose cores differ) holds some but not
// all of the targets, RPS and XDP first onto those alone (a NAPI kthread is put on the biggest
// of its targets by the planner: one trial). The one list the daemon queues, its log, status and
// plan --explain show.
std::vector<AutoTrial> trialOrder(const std::vector<SteeringMode>& modes, const CpuSet& targets, const CpuSet& biggest);
// "rps_big (CPUs 0-3), then rps (CPUs 0-7), then xdp_big (CPUs 0-3), then xdp (CPUs 0-7)"; with
// predictions where they were made, and the skipped ones after.
std::string trialOrderText(const std::vector<AutoTrial>& trials);

// This host's corrections, by trial name: measured / the model's ratio at its last trial, and when
// (a correction older than kCorrectionSeconds is forgotten: the host's load mix moves on).
struct Correction {
    double factor = 1;
    double at = 0;
};
using Corrections = std::map<std::string, Correction>;
inline constexpr double kCorrectionSeconds = 3600;
// trialOrder's trials, each predicted from `none`: the modes ordered by their best prediction
// (ties, within 1 %, in the profile's order; a mode's biggest-cores trial stays before its
// all-cores one), a trial skipped where its bound cannot beat `bar`, or, with `measuredSkips`, where
// a trial of it here measured it worse than none and its corrected prediction is still under
// 1 - worse_margin (a load change re-opening the back-off; the back-off's end re-measures all).
std::vector<AutoTrial> plannedTrials(const std::vector<SteeringMode>& modes, const CpuSet& targets, const CpuSet& biggest,
                                     unsigned rxCpu, const LoadView& none, const Corrections& corrections,
                                     const AutoThresholds& t, double now, bool measuredSkips = true);

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
    // What each candidate's trials here taught the model (measured / predicted), by trial name.
    const Corrections& corrections() const { return corrections_; }

    // The targets a first look at one sample gives (the one-shot `plan`/`apply`), with each
    // CPU's reason; nothing of the state changes.
    struct Choice {
        CpuSet targets;
        std::map<unsigned, std::string> why;  // every candidate: "chosen: 62% idle" / "left out: ..."
        std::string verdict;                   // why steering is on or off
    };
    Choice choose(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings) const;

private:
    // What the daemon chooses targets by: the receive CPU as this sample has it (saturated now),
    // every other CPU as the saturated spell's mean. One sample's idle is a moment: with a
    // SCHED_FIFO hog on CPU 1 (96 % busy, 10 % idle over the spell) one sample showed the 20 %
    // idle the profile asked for, and RPS was enabled onto it (make test, 2026-12-07).
    AutoSample spellSample(const AutoSample& s, unsigned rxCpu) const;

    // Saturated by receive work: busy, and either mostly in NET_RX or (with at least half that
    // share) running out of budget with packets left (time_squeeze).
    // The next trial not skipped after `from` (trials_.size(): none left).
    size_t nextTrial(size_t from) const {
        while (from < trials_.size() && trials_[from].skipped) ++from;
        return from;
    }
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
    AutoDecision stepBackoff(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings,
                             const CpuSet& biggest);
    AutoDecision stepOff(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings, const CpuSet& biggest);
    AutoDecision stepTrial(const AutoSample& s);
    AutoDecision stepOn(const AutoSample& s);
    bool napiWithoutSpare(Choice& c, std::vector<SteeringMode>& modes, unsigned rxCpu, const CpuSet& candidates,
                          const CpuSet& rxSiblings) const;
    AutoDecision judge(double at, const std::string& results);
    // costFactor of a trial against the none behind the attempt.
    double chargeOf(const AutoTrial& t) const { return costFactor(t.mode, beforeView_); }
    void startTrial(double at) {
        mode_ = trials_[trialIdx_].mode;
        targets_ = trials_[trialIdx_].targets;
        trialStart_ = at;
        trial_ = trialLoss_ = Moments{};
        straddled_ = false;
    }
    void resetBaseline() {
        baseline_ = baselineLoss_ = Moments{};
        baselineView_ = LoadView{};
        holding_ = false;
    }
    // The load moved since the attempt that was undone, so that a candidate's prediction now beats
    // the margin: the back-off ends early. Empty: it has not.
    std::string loadChanged(unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings, const CpuSet& biggest,
                            const AutoSample& s);

    AutoThresholds t_;
    AutoState state_ = AutoState::kOff;
    CpuSet targets_;
    unsigned rxCpu_ = 0;
    double badSince_ = -1;  // kOn: since when delivery has fallen short with full targets; < 0: it has not
    Moments baseline_, baselineLoss_;  // the saturated samples in a row (kOff; kBackoff, for loadChanged)
    LoadView baselineView_;            // the same samples' loads
    LoadView beforeView_;              // none's loads behind the attempt in progress or last judged
    Corrections corrections_;
    bool recheck_ = false;             // the attempt measuring now came at the back-off's end: every candidate again
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
