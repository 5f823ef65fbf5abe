#include "planner/auto_steer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <vector>

#include "core/text.hpp"

namespace rxtune {

namespace {

std::string pct(double v) { return std::to_string(static_cast<int>(v * 100 + 0.5)) + "%"; }
std::string pps(double v) { return rounded(v); }
std::string ratio(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return b;
}

}  // namespace

AutoSample autoSample(const AutoRaw& a, const AutoRaw& b, const std::string& ifname) {
    AutoSample s;
    s.at = b.at;
    const double dt = std::max(1e-3, b.at - a.at);
    s.span = dt;
    const bool bpf = !a.netRxNs.empty() && !b.netRxNs.empty() && a.netRxSpell == b.netRxSpell;
    for (const auto& [cpu, j] : b.cpu) {
        auto it = a.cpu.find(cpu);
        if (it == a.cpu.end() || j.total <= it->second.total) continue;
        const double total = static_cast<double>(j.total - it->second.total);
        CpuLoad l;
        l.busy = std::clamp(static_cast<double>(j.busy - std::min(j.busy, it->second.busy)) / total, 0.0, 1.0);
        if (bpf && a.netRxNs.count(cpu) && b.netRxNs.count(cpu))
            l.netRx = std::clamp(static_cast<double>(b.netRxNs.at(cpu) - std::min(b.netRxNs.at(cpu), a.netRxNs.at(cpu))) / (dt * 1e9), 0.0, 1.0);
        else
            l.netRx = std::clamp(static_cast<double>(j.softirq - std::min(j.softirq, it->second.softirq)) / total, 0.0, 1.0);
        if (a.squeezes.count(cpu) && b.squeezes.count(cpu))
            l.squeezed = static_cast<double>(b.squeezes.at(cpu) - std::min(b.squeezes.at(cpu), a.squeezes.at(cpu))) / dt;
        s.cpus[cpu] = l;
    }
    const double drops = static_cast<double>(b.softnetDrops - std::min(b.softnetDrops, a.softnetDrops)) / dt;
    s.drops = drops;
    if (a.stack && b.stack) {
        auto rate = [&](std::uint64_t before, std::uint64_t after) {
            return static_cast<double>(after - std::min(after, before)) / dt;
        };
        s.deliveredPps = rate(a.stack->delivered, b.stack->delivered);
        s.lossPps = rate(a.stack->lost, b.stack->lost) + drops;
        s.source = "stack";
        return s;
    }
    double rx = 0;
    if (a.rxPackets.count(ifname) && b.rxPackets.count(ifname))
        rx = static_cast<double>(b.rxPackets.at(ifname) - std::min(b.rxPackets.at(ifname), a.rxPackets.at(ifname))) / dt;
    s.deliveredPps = deviceDeliveredPps(rx, drops, b.rxAfterBacklog.count(ifname) > 0);
    s.lossPps = drops;
    s.source = "device";
    return s;
}

double deviceDeliveredPps(double rxPps, double softnetDropPps, bool countsAfterBacklog) {
    // A NIC counts a frame when its driver hands it up, before the backlog may drop it; veth and
    // tap count only what netif_rx accepted. Taking the drops out twice once read a 2x gain as 0.
    return countsAfterBacklog ? rxPps : std::max(0.0, rxPps - softnetDropPps);
}

double Moments::variance() const {
    if (n < 2) return 0;
    const double m = mean();
    return std::max(0.0, (squares - n * m * m) / (n - 1));
}

namespace {

// Student's t, two-sided 99 %, by degrees of freedom (30 and up: the normal's 2.58 rounded up).
double t99(unsigned df) {
    static constexpr double kT[] = {0 /* df from 1 */, 63.66, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169,
                                    3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845};
    if (df < std::size(kT)) return kT[df];
    return df < 30 ? 2.83 : 2.75;
}

}  // namespace

RatioEstimate estimateRatio(const Moments& trial, const Moments& baseline, double bar) {
    RatioEstimate e;
    if (trial.n == 0 || baseline.n == 0) return e;
    const double mt = trial.mean(), mb = baseline.mean();
    if (mb <= 0) {  // nothing got through before: anything delivered is a gain
        e.ratio = e.low = e.high = mt > 0 ? 1e9 : 1;
        e.verdict = mt > 0 ? RatioEstimate::Verdict::kAbove : RatioEstimate::Verdict::kBelow;
        return e;
    }
    e.ratio = mt / mb;
    if (std::min(trial.n, baseline.n) < 2) {  // no spread known yet
        e.high = 1e9;
        return e;
    }
    const double rel = (mt > 0 ? trial.variance() / (trial.n * mt * mt) : 0) + baseline.variance() / (baseline.n * mb * mb);
    const double half = t99(std::min(trial.n, baseline.n) - 1) * e.ratio * std::sqrt(rel);
    e.low = std::max(0.0, e.ratio - half);
    e.high = e.ratio + half;
    if (e.low > bar) e.verdict = RatioEstimate::Verdict::kAbove;
    else if (e.high < bar) e.verdict = RatioEstimate::Verdict::kBelow;
    return e;
}

std::string trialName(const AutoTrial& t) { return std::string(candidateName(t.mode)) + (t.bigOnly ? "_big" : ""); }

const char* candidateName(SteeringMode m) { return isAutoCandidate(m) ? toString(m) : toString(SteeringMode::kNone); }

unsigned busiestRxCpu(const AutoSample& s) {
    unsigned best = 0;
    double share = -1;
    for (const auto& [cpu, l] : s.cpus)
        if (l.netRx > share) {
            share = l.netRx;
            best = cpu;
        }
    return best;
}

const char* toString(AutoState s) {
    switch (s) {
        case AutoState::kOff: return "off";
        case AutoState::kTrial: return "trial";
        case AutoState::kOn: return "on";
        case AutoState::kBackoff: return "backoff";
    }
    return "?";
}

AutoSteer::Choice AutoSteer::choose(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates,
                                    const CpuSet& rxSiblings) const {
    Choice c;
    const CpuLoad rx = s.cpus.count(rxCpu) ? s.cpus.at(rxCpu) : CpuLoad{};
    // Leave out the receive CPU and its SMT siblings where there are enough others.
    CpuSet others = candidates - rxSiblings;
    const bool withoutSiblings = !others.empty();
    if (!withoutSiblings) others = candidates - CpuSet::of({rxCpu});
    std::vector<std::pair<double, unsigned>> spare;
    for (unsigned cpu : candidates.cpus()) {
        const CpuLoad l = s.cpus.count(cpu) ? s.cpus.at(cpu) : CpuLoad{};
        const double idle = std::max(0.0, 1.0 - l.busy);
        if (cpu == rxCpu) {
            c.why[cpu] = "left out: the receive CPU (NET_RX " + pct(rx.netRx) + ", busy " + pct(rx.busy) + ")";
        } else if (!others.contains(cpu)) {
            c.why[cpu] = "left out: SMT sibling of the receive CPU";
        } else if (idle < t_.minSpare) {
            c.why[cpu] = "left out: only " + pct(idle) + " idle (needs " + pct(t_.minSpare) + ")";
        } else {
            spare.emplace_back(idle, cpu);
            c.why[cpu] = "chosen: " + pct(idle) + " idle";
        }
    }
    if (!saturated(rx)) {
        c.verdict = "receive CPU " + std::to_string(rxCpu) + " is not saturated by receive work (NET_RX " + pct(rx.netRx) +
                    ", busy " + pct(rx.busy) + ", " + pps(rx.squeezed) + " squeezes/s; steering needs busy >= " + pct(t_.busyOn) +
                    " and NET_RX >= " + pct(t_.onRxShare) + ", or >= " + pct(t_.onRxShare / 2) + " with squeezes)";
        for (auto& [cpu, why] : c.why)
            if (why.starts_with("chosen")) why = "would qualify (" + why.substr(8) + "), but steering stays off";
        return c;
    }
    for (const auto& [idle, cpu] : spare) c.targets.add(cpu);
    c.verdict = c.targets.empty()
                    ? "receive CPU " + std::to_string(rxCpu) + " is saturated (NET_RX " + pct(rx.netRx) +
                          ", " + pps(rx.squeezed) + " squeezes/s) but no other CPU has " + pct(t_.minSpare) +
                          " idle: steering would only move the bottleneck"
                    : "receive CPU " + std::to_string(rxCpu) + " is saturated (NET_RX " + pct(rx.netRx) + ", busy " +
                          pct(rx.busy) + ", " + pps(rx.squeezed) + " squeezes/s): steer to CPUs " + c.targets.toList();
    return c;
}

AutoDecision AutoSteer::step(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings,
                             const CpuSet& biggest) {
    switch (state_) {
        case AutoState::kBackoff: return stepBackoff(s);
        case AutoState::kOff: return stepOff(s, rxCpu, candidates, rxSiblings, biggest);
        case AutoState::kTrial: return stepTrial(s);
        case AutoState::kOn: return stepOn(s);
    }
    return {};
}

AutoDecision AutoSteer::stepBackoff(const AutoSample& s) {
    AutoDecision d;
    if (s.at < backoffUntil_) return d;
    state_ = AutoState::kOff;
    resetBaseline();
    d.decision = "retry";
    d.reason = "backoff_over";
    d.detail = "back-off over; measuring again";
    return d;
}

AutoDecision AutoSteer::stepOff(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings,
                                const CpuSet& biggest) {
    AutoDecision d;
    const CpuLoad rx = s.cpus.count(rxCpu) ? s.cpus.at(rxCpu) : CpuLoad{};
    if (!saturated(rx)) {
        resetBaseline();
        return d;
    }
    // The saturated samples in a row so far are the baseline a change is judged against.
    if (baseline_.n == 0) spellStart_ = s.at - s.span;
    baseline_.add(s.deliveredPps);
    baselineLoss_.add(s.lossPps);
    if (s.at - spellStart_ < t_.sustainSeconds - 1e-9 || baseline_.n < kMinBaseline) return d;
    Choice c = choose(s, rxCpu, candidates, rxSiblings);
    std::vector<SteeringMode> modes = t_.candidates;
    if (c.targets.empty() && !napiWithoutSpare(c, modes, rxCpu, candidates, rxSiblings)) {
        if (!holding_) {  // said once per saturated spell, not every sample
            holding_ = true;
            d.decision = "hold";
            d.reason = "no_spare_cpu";
            d.detail = c.verdict;
        }
        return d;
    }
    before_ = baseline_;
    baselinePps_ = baseline_.mean();
    baselineLossRate_ = baselineLoss_.mean();
    resetBaseline();
    rxCpu_ = rxCpu;
    state_ = AutoState::kTrial;
    if (modes.empty()) modes = {SteeringMode::kRps};
    trials_ = trialOrder(modes, c.targets, biggest);
    trialIdx_ = 0;
    startTrial(s.at);
    d.decision = "enable";
    d.reason = "saturated";
    d.detail = c.verdict + "; before: " + pps(baselinePps_) + " packets/s delivered, " + pps(baselineLossRate_) + " lost/s (" +
               std::to_string(before_.n) + " samples); trying " + trialOrderText(trials_) + ", each until its result is clear, " +
               pps(t_.windowSeconds) + " s at most";
    d.changed = true;
    return d;
}

// No CPU has room: RPS and XDP hand the work to another CPU and need room there; a NAPI kthread
// is a task the scheduler shares out fairly with the application's, so it is worth a trial even
// where every other CPU is busy (judged like any other). False: nothing to try.
bool AutoSteer::napiWithoutSpare(Choice& c, std::vector<SteeringMode>& modes, unsigned rxCpu, const CpuSet& candidates,
                                 const CpuSet& rxSiblings) const {
    CpuSet away = candidates - rxSiblings;
    if (away.empty()) away = candidates - CpuSet::of({rxCpu});
    const bool napi = std::find(modes.begin(), modes.end(), SteeringMode::kNapi) != modes.end();
    if (!napi || away.empty()) return false;
    c.targets = away;
    modes = {SteeringMode::kNapi};
    const std::string tail = ": steering would only move the bottleneck";
    if (c.verdict.ends_with(tail)) c.verdict.resize(c.verdict.size() - tail.size());
    c.verdict += " for RPS or XDP (they would only move the bottleneck); a NAPI kthread needs no idle CPU (the scheduler "
                 "shares its CPU): napi alone to CPUs " + away.toList();
    return true;
}

std::vector<AutoTrial> trialOrder(const std::vector<SteeringMode>& modes, const CpuSet& targets, const CpuSet& biggest) {
    const CpuSet big = biggest & targets;
    const bool both = !big.empty() && big != targets;
    std::vector<AutoTrial> out;
    for (SteeringMode m : modes) {
        if (both && m != SteeringMode::kNapi) out.push_back({m, true, big});
        out.push_back({m, false, targets});
    }
    return out;
}

std::string trialOrderText(const std::vector<AutoTrial>& trials) {
    std::string order;
    for (const auto& t : trials) order += (order.empty() ? "" : ", then ") + trialName(t) + " (CPUs " + t.targets.toList() + ")";
    return order;
}

AutoDecision AutoSteer::stepTrial(const AutoSample& s) {
    // The sample that straddles the change (the apply came after the sample that decided it) says
    // little: count only those after it.
    if (!straddled_ || s.at <= trialStart_) {
        straddled_ = straddled_ || s.at > trialStart_;
        return {};
    }
    trial_.add(s.deliveredPps);
    trialLoss_.add(s.lossPps);
    const double elapsed = s.at - trialStart_;
    const RatioEstimate e = estimateRatio(trial_, before_, 1 + t_.gainMargin);
    const bool cut = trial_.mean() < baselinePps_ * kCutShare;
    const bool clear = trial_.n >= kMinSamples && e.verdict != RatioEstimate::Verdict::kMeasuring;
    if (!cut && !clear && elapsed < t_.windowSeconds) return {};
    AutoTrial& tr = trials_[trialIdx_];
    tr.deliveredPps = trial_.mean();
    tr.lossPps = trialLoss_.mean();
    tr.samples = trial_.n;
    tr.seconds = elapsed;
    tr.vsNone = e;
    tr.cut = cut;
    const std::string why = cut     ? "cut short: under half of none"
                            : clear ? (e.verdict == RatioEstimate::Verdict::kAbove ? "clear: beats " : "clear: cannot beat ") +
                                          ratio(1 + t_.gainMargin) + "x"
                                    : "window over, not clear of " + ratio(1 + t_.gainMargin) + "x";
    return advance(s.at, trialName(tr) + ": delivered " + pps(baselinePps_) + " -> " + pps(tr.deliveredPps) + " packets/s (" +
                             ratio(e.ratio) + "x none, " + (e.high < 1e8 ? "99% " + ratio(e.low) + "-" + ratio(e.high) : "one sample") +
                             "), lost " +
                             pps(baselineLossRate_) + " -> " + pps(tr.lossPps) + "/s; " + std::to_string(tr.samples) +
                             " samples in " + ratio(elapsed) + " s (" + why + ")");
}

// Stable when load goes away. Undone only when its targets have run out of room and less gets
// through than went through with no steering at all: the targets are full by design when steered
// receive work is all they do, and one good sample is no yardstick on a noisy host (a ratchet to
// the best sample once undid a 2x win).
AutoDecision AutoSteer::stepOn(const AutoSample& s) {
    double targetBusy = 1;
    for (unsigned cpu : targets_.cpus()) targetBusy = std::min(targetBusy, s.cpus.count(cpu) ? s.cpus.at(cpu).busy : 0.0);
    const bool targetsFull = targetBusy >= t_.busyOn;
    const bool worse = s.deliveredPps < baselinePps_ * (1 - t_.worseMargin);
    if (!targetsFull || !worse) {
        badSince_ = -1;
        return {};
    }
    if (badSince_ < 0) badSince_ = s.at - s.span;
    if (s.at - badSince_ < t_.sustainSeconds - 1e-9) return {};
    const std::string numbers = std::string(candidateName(mode_)) + " to " + targets_.toList() + ": targets busy >= " + pct(targetBusy) +
                                ", delivered " + pps(s.deliveredPps) + " packets/s (kept at " + pps(committedPps_) + ", none " +
                                pps(baselinePps_) + "), lost " + pps(s.lossPps) + "/s";
    targets_ = CpuSet{};
    state_ = AutoState::kBackoff;
    backoffUntil_ = s.at + t_.backoffSeconds;
    return {"undo", "targets_busy", numbers + ": steering off for " + pps(t_.backoffSeconds) + " s", true};
}

AutoDecision AutoSteer::failed(double at, const std::string& why) {
    if (state_ != AutoState::kTrial) return {};
    AutoTrial& tr = trials_[trialIdx_];
    tr.failed = true;
    return advance(at, trialName(tr) + ": could not be put in place: " + why);
}

AutoDecision AutoSteer::advance(double at, std::string result) {
    if (trialIdx_ + 1 < trials_.size()) {
        ++trialIdx_;
        startTrial(at);
        const std::string next = trialName(trials_[trialIdx_]);
        return {"try", next, result + "; now trying " + next + " (CPUs " + targets_.toList() + ") for " + pps(t_.windowSeconds) +
                                 " s at most", true};
    }
    return judge(at, result);
}

AutoDecision AutoSteer::judge(double at, const std::string& last) {
    size_t best = trials_.size();
    std::string all = "none " + pps(baselinePps_);
    for (size_t i = 0; i < trials_.size(); ++i) {
        const AutoTrial& tr = trials_[i];
        all += ", " + trialName(tr) + " " + (tr.failed ? "unavailable" : pps(tr.deliveredPps) + (tr.cut ? " (cut short)" : ""));
        if (!tr.failed && (best == trials_.size() || tr.deliveredPps > trials_[best].deliveredPps)) best = i;
    }
    all += " packets/s delivered";
    const std::string numbers = last + "; " + all;
    if (best < trials_.size() && trials_[best].deliveredPps >= baselinePps_ * (1 + t_.gainMargin)) {
        const bool switchBack = best != trialIdx_;
        trialIdx_ = best;
        mode_ = trials_[best].mode;
        targets_ = trials_[best].targets;
        state_ = AutoState::kOn;
        committedPps_ = trials_[best].deliveredPps;
        badSince_ = -1;
        return {"keep", "better", numbers + ": keeping " + trialName(trials_[best]) + " to CPUs " + targets_.toList() + " (" +
                                      ratio(baselinePps_ > 0 ? committedPps_ / baselinePps_ : 0) + "x none)", switchBack};
    }
    const AutoTrial* bestTrial = best < trials_.size() ? &trials_[best] : nullptr;
    const char* reason = !bestTrial                                                       ? "unavailable"
                         : bestTrial->deliveredPps < baselinePps_ * (1 - t_.worseMargin) ? "worse"
                                                                                         : "no_gain";
    targets_ = CpuSet{};
    state_ = AutoState::kBackoff;
    backoffUntil_ = at + t_.backoffSeconds;
    return {"undo", reason, numbers + ": none beats no steering by " + pct(t_.gainMargin) + ", steering off for " +
                                pps(t_.backoffSeconds) + " s", true};
}

}  // namespace rxtune
