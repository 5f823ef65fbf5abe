#include "planner/auto_steer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <vector>

#include "core/text.hpp"

namespace rxtune {

namespace {

std::string percent(double v) { return std::to_string(static_cast<int>(v * 100 + 0.5)) + "%"; }
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
    double rx = 0;
    if (a.rxPackets.count(ifname) && b.rxPackets.count(ifname))
        rx = static_cast<double>(b.rxPackets.at(ifname) - std::min(b.rxPackets.at(ifname), a.rxPackets.at(ifname))) / dt;
    s.rxPps = rx;
    if (a.stack && b.stack) {
        auto rate = [&](std::uint64_t before, std::uint64_t after) {
            return static_cast<double>(after - std::min(after, before)) / dt;
        };
        s.deliveredPps = rate(a.stack->delivered, b.stack->delivered);
        s.lossPps = rate(a.stack->lost, b.stack->lost) + drops;
        s.source = "stack";
        return s;
    }
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

void LoadView::add(const AutoSample& s) {
    ++n;
    const double w = 1.0 / n;
    auto mix = [w](double& mean, double v) { mean += (v - mean) * w; };
    mix(deliveredPps, s.deliveredPps);
    mix(rxPps, s.rxPps);
    mix(lossPps, s.lossPps);
    for (const auto& [cpu, l] : s.cpus) {
        CpuLoad& m = cpus[cpu];
        mix(m.busy, l.busy);
        mix(m.netRx, l.netRx);
        mix(m.squeezed, l.squeezed);
    }
}

namespace {

// How a candidate splits the receive CPU's per-packet work (the model's priors; each trial on a
// host corrects them there). RPS (Documentation/networking/scaling.rst) leaves the driver's poll,
// GRO, the flow hash and the enqueue to the remote backlog (and its IPI) on the receive CPU, and
// runs the rest of the stack from __netif_receive_skb_core on (tc ingress, netfilter, IP, the
// socket) on the target: for a small UDP path about two thirds of it move, at a quarter more for
// the cache lines that travel and the IPI. An XDP cpumap redirect (generic or native) hands off at
// the same depth or earlier and is taken alike until measured. A threaded NAPI moves the whole
// poll into one kthread; only the interrupt stays.
// NET_RX runs per second that end with work left: the receive CPU's budget was short (a full CPU).
constexpr double kDemandSqueezes = 10;

struct Split {
    double moved;     // m: the share of the receive CPU's NET_RX time per packet that leaves it
    double cost;      // k: what that work costs on the targets, relative
    bool oneThread;   // the moved work is one thread (at most one target's room)
};

Split splitOf(SteeringMode m) {
    switch (m) {
        case SteeringMode::kNapi: return {0.9, 1.0, true};
        // The whole poll moves to its kthread, which polls without interrupts: no IRQ, no softirq
        // hand-off; a thread of its own on a core of its own.
        case SteeringMode::kBusyPoll: return {0.9, 0.9, true};
        case SteeringMode::kRps:
        case SteeringMode::kXdp:
        default: return {0.65, 1.25, false};
    }
}

std::string us(double seconds) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2g us", seconds * 1e6);
    return b;
}

std::string cpusText(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return b;
}

}  // namespace

Prediction predict(SteeringMode mode, const CpuSet& targets, unsigned rxCpu, const LoadView& none) {
    Prediction p;
    const CpuLoad rx = none.cpus.count(rxCpu) ? none.cpus.at(rxCpu) : CpuLoad{};
    // What the receive CPU handles: the device's RX count where there is one (a packet dropped
    // later in the stack was paid for there too), else what was delivered and lost.
    const double handled = none.rxPps > 0 ? none.rxPps : none.deliveredPps + none.lossPps;
    const CpuSet onto = targets - CpuSet::of({rxCpu});
    double idle = 0, room = 0, own = 0, bestOne = 0;
    const Split sp = splitOf(mode);
    const double perPacket = handled > 0 ? rx.netRx / handled : 0;  // c
    for (unsigned cpu : onto.cpus()) {
        const CpuLoad l = none.cpus.count(cpu) ? none.cpus.at(cpu) : CpuLoad{};
        const double r = std::max(0.0, 1 - l.netRx);                        // all but the receive work there
        const double o = handled > 0 ? std::max(0.0, l.busy - l.netRx) / handled : 0;  // its own work per packet
        idle += std::max(0.0, 1 - l.busy);
        room += r;
        own += o;
        if (perPacket > 0) bestOne = std::max(bestOne, r / (sp.moved * sp.cost * perPacket + o));
    }
    p.why = "targets " + onto.toList() + " have " + cpusText(idle) + " CPUs idle; " + us(perPacket) + " of NET_RX per packet on CPU " +
            std::to_string(rxCpu);
    if (perPacket <= 0 || none.deliveredPps <= 0 || onto.empty()) {  // nothing to go by: no skip, no order
        p.ratio = p.model = 1;
        p.bound = 1e9;
        p.pps = none.deliveredPps;
        p.why = "nothing measured to predict from (" + std::string(onto.empty() ? "no target" : "no receive work or delivery seen") + ")";
        return p;
    }
    const double rxOther = std::max(0.0, rx.busy - rx.netRx) / handled;  // what else the receive CPU does, per packet
    const double stays = (1 - sp.moved) * perPacket + rxOther;
    const double rxCeiling = stays > 0 ? 1 / stays : 1e18;
    const double targetCeiling = sp.oneThread ? bestOne : room / (sp.moved * sp.cost * perPacket + own);
    p.model = std::min(rxCeiling, targetCeiling) / handled;
    // Work conservation: the receive work cannot take more than every CPU's time that is not
    // receive work already, the receive CPU's own included (its applications may yield it). A
    // NAPI kthread trades softirq priority for the scheduler's fair share, which no capacity bound
    // captures: never bounded.
    p.bound = sp.oneThread ? 1e9 : (1 + room) / rx.netRx;
    // The demand: where the receive CPU had room, none delivered what came and lost the rest.
    if (rx.busy < kDemandBoundBusy && rx.squeezed < kDemandSqueezes)
        p.demand = (none.deliveredPps + none.lossPps) / none.deliveredPps;
    settle(p, none.deliveredPps);
    return p;
}

void settle(Prediction& p, double nonePps) {
    const double capacity = p.model * p.correction;
    p.demandBound = capacity > p.demand;
    p.ratio = std::min(capacity, p.demand);
    p.pps = p.ratio * nonePps;
}

std::string predictionText(const Prediction& p) {
    const std::string capacity = p.corrected ? "the model's " + ratio(p.model) + "x times " + ratio(p.correction) : "the model's " + ratio(p.model) + "x";
    return "predicted " + ratio(p.ratio) + "x none (" + p.why +
           (p.corrected && !p.demandBound ? "; " + capacity + ", its last trial's measured/predicted here" : "") +
           (p.demandBound ? "; demand-bound: the receive CPU had room, so what arrived was " + ratio(p.demand) +
                                "x what none delivered, and " + capacity + " of capacity has no more to carry"
                          : "") +
           ")";
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
            c.why[cpu] = "left out: the receive CPU (NET_RX " + percent(rx.netRx) + ", busy " + percent(rx.busy) + ")";
        } else if (!others.contains(cpu)) {
            c.why[cpu] = "left out: SMT sibling of the receive CPU";
        } else if (idle < t_.minSpare) {
            c.why[cpu] = "left out: only " + percent(idle) + " idle (needs " + percent(t_.minSpare) + ")";
        } else {
            spare.emplace_back(idle, cpu);
            c.why[cpu] = "chosen: " + percent(idle) + " idle";
        }
    }
    if (!saturated(rx)) {
        c.verdict = "receive CPU " + std::to_string(rxCpu) + " is not saturated by receive work (NET_RX " + percent(rx.netRx) +
                    ", busy " + percent(rx.busy) + ", " + pps(rx.squeezed) + " squeezes/s; steering needs busy >= " + percent(t_.busyOn) +
                    " and NET_RX >= " + percent(t_.onRxShare) + ", or >= " + percent(t_.onRxShare / 2) + " with squeezes)";
        for (auto& [cpu, why] : c.why)
            if (why.starts_with("chosen")) why = "would qualify (" + why.substr(8) + "), but steering stays off";
        return c;
    }
    for (const auto& [idle, cpu] : spare) c.targets.add(cpu);
    c.verdict = c.targets.empty()
                    ? "receive CPU " + std::to_string(rxCpu) + " is saturated (NET_RX " + percent(rx.netRx) +
                          ", " + pps(rx.squeezed) + " squeezes/s) but no other CPU has " + percent(t_.minSpare) +
                          " idle: steering would only move the bottleneck"
                    : "receive CPU " + std::to_string(rxCpu) + " is saturated (NET_RX " + percent(rx.netRx) + ", busy " +
                          percent(rx.busy) + ", " + pps(rx.squeezed) + " squeezes/s): steer to CPUs " + c.targets.toList();
    return c;
}

AutoSample AutoSteer::spellSample(const AutoSample& s, unsigned rxCpu) const {
    AutoSample v = s;
    for (const auto& [cpu, l] : baselineView_.cpus)
        if (cpu != rxCpu) v.cpus[cpu] = l;
    return v;
}

AutoDecision AutoSteer::step(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings,
                             const CpuSet& biggest) {
    switch (state_) {
        case AutoState::kBackoff: return stepBackoff(s, rxCpu, candidates, rxSiblings, biggest);
        case AutoState::kOff: return stepOff(s, rxCpu, candidates, rxSiblings, biggest);
        case AutoState::kTrial: return stepTrial(s);
        case AutoState::kOn: return stepOn(s);
    }
    return {};
}

AutoDecision AutoSteer::stepBackoff(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings,
                                    const CpuSet& biggest) {
    AutoDecision d;
    if (s.at < backoffUntil_) {
        const std::string moved = loadChanged(rxCpu, candidates, rxSiblings, biggest, s);
        if (moved.empty()) return d;
        // The saturated samples behind the verdict are the baseline: the next sample enables.
        state_ = AutoState::kOff;
        holding_ = false;
        d.decision = "retry";
        d.reason = "load_changed";
        d.detail = moved + "; measuring again " + pps(backoffUntil_ - s.at) + " s before the back-off's end";
        return d;
    }
    state_ = AutoState::kOff;
    resetBaseline();
    recheck_ = true;
    d.decision = "retry";
    d.reason = "backoff_over";
    d.detail = "back-off over; measuring again";
    return d;
}

std::string AutoSteer::loadChanged(unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings, const CpuSet& biggest,
                                   const AutoSample& s) {
    const CpuLoad rx = s.cpus.count(rxCpu) ? s.cpus.at(rxCpu) : CpuLoad{};
    if (!saturated(rx) || beforeView_.n == 0) {
        resetBaseline();
        return {};
    }
    if (baseline_.n == 0) spellStart_ = s.at - s.span;
    baseline_.add(s.deliveredPps);
    baselineLoss_.add(s.lossPps);
    baselineView_.add(s);
    if (s.at - spellStart_ < t_.sustainSeconds - 1e-9 || baseline_.n < kMinBaseline) return {};
    // Moved: the delivered rate by a fifth, or the chosen targets' idle time by a quarter of a CPU.
    const Choice c = choose(spellSample(s, rxCpu), rxCpu, candidates, rxSiblings);
    if (c.targets.empty()) {
        resetBaseline();
        return {};
    }
    auto idleOf = [&](const LoadView& v) {
        double idle = 0;
        for (unsigned cpu : c.targets.cpus()) idle += v.cpus.count(cpu) ? std::max(0.0, 1 - v.cpus.at(cpu).busy) : 0;
        return idle;
    };
    const double was = beforeView_.deliveredPps, now = baselineView_.deliveredPps;
    const double idleWas = idleOf(beforeView_), idleNow = idleOf(baselineView_);
    const bool rate = was > 0 ? std::abs(now / was - 1) > 0.2 : now > 0;
    // Judged a `sustain` at a time: the next window starts afresh, so a change shows within two.
    const auto nothing = [this] {
        resetBaseline();
        return std::string();
    };
    if (!rate && std::abs(idleNow - idleWas) <= 0.25) return nothing();
    std::vector<SteeringMode> modes = t_.candidates;
    if (modes.empty()) modes = {SteeringMode::kRps};
    const auto trials = plannedTrials(modes, c.targets, biggest, rxCpu, baselineView_, corrections_, t_, s.at);
    const AutoTrial* best = nullptr;
    // Each prediction as it would be judged: a busy-poll's after its core (costFactor).
    const auto worth = [this](const AutoTrial& tr) { return tr.predicted.ratio * costFactor(tr.mode, baselineView_); };
    for (const auto& tr : trials)
        if (!tr.skipped && (!best || worth(tr) > worth(*best))) best = &tr;
    // Beyond the keep bar by a margin more: at the load it was judged at, a corrected prediction is
    // what was measured, which did not clear the bar.
    if (!best || worth(*best) < 1 + 2 * t_.gainMargin) return nothing();
    return "the load changed (delivered " + pps(was) + " -> " + pps(now) + " packets/s, targets " + c.targets.toList() + " idle " +
           cpusText(idleWas) + " -> " + cpusText(idleNow) + " CPUs): " + trialName(*best) + " " + predictionText(best->predicted);
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
    baselineView_.add(s);
    if (s.at - spellStart_ < t_.sustainSeconds - 1e-9 || baseline_.n < kMinBaseline) return d;
    Choice c = choose(spellSample(s, rxCpu), rxCpu, candidates, rxSiblings);
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
    beforeView_ = baselineView_;
    baselinePps_ = baseline_.mean();
    baselineLossRate_ = baselineLoss_.mean();
    resetBaseline();
    rxCpu_ = rxCpu;
    if (modes.empty()) modes = {SteeringMode::kRps};
    trials_ = plannedTrials(modes, c.targets, biggest, rxCpu, beforeView_, corrections_, t_, s.at, !recheck_);
    recheck_ = false;
    const std::string before = "before: " + pps(baselinePps_) + " packets/s delivered, " + pps(baselineLossRate_) + " lost/s (" +
                               std::to_string(before_.n) + " samples)";
    trialIdx_ = nextTrial(0);
    if (trialIdx_ == trials_.size()) {  // every candidate predicted not to beat the margin: nothing applied
        state_ = AutoState::kBackoff;
        backoffUntil_ = s.at + t_.backoffSeconds;
        d.decision = "hold";
        d.reason = "predicted_no_gain";
        d.detail = c.verdict + "; " + before + "; " + trialOrderText(trials_) + ": steering stays off for " + pps(t_.backoffSeconds) +
                   " s, or until the load changes";
        return d;
    }
    state_ = AutoState::kTrial;
    startTrial(s.at);
    d.decision = "enable";
    d.reason = "saturated";
    d.detail = c.verdict + "; " + before + "; trying " + trialOrderText(trials_) + ", each until its result is clear, " +
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
        AutoTrial t;
        t.mode = m;
        if (both && m != SteeringMode::kNapi && m != SteeringMode::kBusyPoll) {
            t.bigOnly = true;
            t.targets = big;
            out.push_back(t);
        }
        t.bigOnly = false;
        t.targets = targets;
        out.push_back(t);
    }
    return out;
}

std::string trialOrderText(const std::vector<AutoTrial>& trials) {
    std::string order, skipped;
    for (const auto& t : trials) {
        std::string one = trialName(t);
        one.append(" (CPUs ").append(t.targets.toList()).append(")");
        if (t.predicted.model > 0) one.append(" ").append(predictionText(t.predicted));
        if (t.skipped) {
            if (!skipped.empty()) skipped.append("; ");
            skipped.append(one).append(": ").append(t.skipWhy);
        } else {
            if (!order.empty()) order.append(", then ");
            order.append(one);
        }
    }
    if (order.empty()) order = "nothing";
    return skipped.empty() ? order : order + "; skipped: " + skipped;
}

std::vector<AutoTrial> plannedTrials(const std::vector<SteeringMode>& modes, const CpuSet& targets, const CpuSet& biggest,
                                     unsigned rxCpu, const LoadView& none, const Corrections& corrections,
                                     const AutoThresholds& t, double now, bool measuredSkips) {
    std::vector<AutoTrial> trials = trialOrder(modes, targets, biggest);
    const double bar = 1 + t.gainMargin;
    for (AutoTrial& tr : trials) {
        Prediction& p = tr.predicted;
        p = predict(tr.mode, tr.targets, rxCpu, none);
        if (auto c = corrections.find(trialName(tr)); c != corrections.end() && now - c->second.at < kCorrectionSeconds) {
            p.corrected = true;
            p.correction = c->second.factor;
            settle(p, none.deliveredPps);
        }
        // A kthread (napi, busypoll) is never bounded (predict), so the bound skips only what
        // spreads the work over the targets' softirqs; a busy-poll's charge orders it (below).
        if (p.bound < bar) {
            tr.skipped = true;
            tr.skipWhy = "cannot beat " + ratio(bar) + "x: all the receive work spread over every CPU's time that is not receive work "
                         "already gives at most " + ratio(p.bound) + "x";
        } else if (measuredSkips && p.corrected && p.ratio < 1 - t.worseMargin) {
            tr.skipped = true;
            tr.skipWhy = "its last trial here delivered less than none, and the load has not moved its prediction above " +
                         ratio(1 - t.worseMargin) + "x";
        }
    }
    // The modes by their best prediction (a busy-poll's after its core), ties (within 1 %) in the profile's order; within a mode
    // the order stays (its biggest cores first). An insertion sort: stable under a tolerance.
    std::vector<std::pair<double, std::vector<AutoTrial>>> groups;
    for (AutoTrial& tr : trials) {
        if (groups.empty() || groups.back().second.front().mode != tr.mode) groups.push_back({-1, {}});
        groups.back().first = std::max(groups.back().first, tr.skipped ? -1 : tr.predicted.ratio * costFactor(tr.mode, none));
        groups.back().second.push_back(std::move(tr));
    }
    for (size_t i = 1; i < groups.size(); ++i)
        for (size_t j = i; j > 0 && groups[j].first > groups[j - 1].first + 0.01 * std::abs(groups[j - 1].first) + 1e-12; --j) std::swap(groups[j], groups[j - 1]);
    std::vector<AutoTrial> out;
    for (auto& g : groups)
        for (AutoTrial& tr : g.second) out.push_back(std::move(tr));
    return out;
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
    // A busy-poll trial must clear the bar after its core is charged (chargeOf).
    const double charge = chargeOf(trials_[trialIdx_]);
    const RatioEstimate e = estimateRatio(trial_, before_, (1 + t_.gainMargin) / charge);
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
    // What the model missed by, here: the next prediction of this candidate on this host is
    // corrected by it (a cut trial's ratio too: a collapse is what a capacity model cannot see).
    const double measured = baselinePps_ > 0 ? tr.deliveredPps / baselinePps_ : 0;
    std::string versus;
    if (tr.predicted.model > 0 && baselinePps_ > 0) {
        // A demand-bound trial that delivered what arrived says only that the capacity was
        // enough: the model is left as it was. One that delivered less ran into its capacity.
        if (!tr.predicted.demandBound || measured < tr.predicted.demand * (1 - t_.worseMargin))
            corrections_[trialName(tr)] = {std::clamp(measured / tr.predicted.model, 1e-3, 1e3), s.at};
        versus = "; predicted " + ratio(tr.predicted.ratio) + "x, measured " + ratio(measured) + "x (off by " +
                 std::to_string(static_cast<int>(std::lround((tr.predicted.ratio / std::max(measured, 1e-9) - 1) * 100))) + "%)";
    }
    // The bar as judged: a busy-poll's raw ratio must clear the margin over its charge.
    const std::string bar = ratio((1 + t_.gainMargin) / charge) + "x" + (charge < 1 ? " (" + ratio(1 + t_.gainMargin) + "x after its core)" : "");
    const std::string why = cut     ? "cut short: under half of none"
                            : clear ? (e.verdict == RatioEstimate::Verdict::kAbove ? "clear: beats " : "clear: cannot beat ") + bar
                                    : "window over, not clear of " + bar;
    return advance(s.at, trialName(tr) + ": delivered " + pps(baselinePps_) + " -> " + pps(tr.deliveredPps) + " packets/s (" +
                             ratio(e.ratio) + "x none, " + (e.high < 1e8 ? "99% " + ratio(e.low) + "-" + ratio(e.high) : "one sample") +
                             "), lost " +
                             pps(baselineLossRate_) + " -> " + pps(tr.lossPps) + "/s; " + std::to_string(tr.samples) +
                             " samples in " + ratio(elapsed) + " s (" + why + ")" + versus);
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
    const std::string numbers = std::string(candidateName(mode_)) + " to " + targets_.toList() + ": targets busy >= " + percent(targetBusy) +
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
    if (const size_t following = nextTrial(trialIdx_ + 1); following < trials_.size()) {
        trialIdx_ = following;
        startTrial(at);
        const std::string next = trialName(trials_[trialIdx_]);
        return {"try", next, result + "; now trying " + next + " (CPUs " + targets_.toList() + ") for " + pps(t_.windowSeconds) +
                                 " s at most", true};
    }
    return judge(at, result);
}

namespace {
double busyCpus(const LoadView& v) {
    double busy = 0;
    for (const auto& [cpu, l] : v.cpus) busy += l.busy;
    return std::max(busy, 1.0);
}
}  // namespace

double costFactor(SteeringMode mode, const LoadView& none) {
    if (mode != SteeringMode::kBusyPoll) return 1;
    const double busy = busyCpus(none);
    return busy / (busy + 1);
}

AvailableCandidates availableCandidates(std::vector<SteeringMode> listed, const NapiFeatures* features, const std::string& unread,
                                        const std::string& kernel) {
    AvailableCandidates out;
    const bool busyPoll = std::find(listed.begin(), listed.end(), SteeringMode::kBusyPoll) != listed.end();
    if (!busyPoll || (features && features->busyPoll())) {
        out.modes = std::move(listed);
        return out;
    }
    std::erase(listed, SteeringMode::kBusyPoll);
    out.note = "busypoll left out of the candidates: " +
               (features ? "busy-poll needs Linux 6.19 (this kernel: " + kernel + ")"
                         : "napi-set's policy could not be read, so busy-poll cannot be set (" + unread + "; this kernel: " + kernel + ")");
    if (listed.empty()) {
        listed = {SteeringMode::kRps};
        out.note += "; none of steering.auto.candidates is left, so mode auto trials rps instead";
    }
    out.modes = std::move(listed);
    return out;
}

AutoDecision AutoSteer::judge(double at, const std::string& last) {
    size_t best = trials_.size();
    std::string all = "none " + pps(baselinePps_);
    std::string charged;
    // What a trial counts for: its delivered rate, a busy-poll's after its core is charged.
    auto worth = [&](const AutoTrial& tr) { return tr.deliveredPps * chargeOf(tr); };
    for (size_t i = 0; i < trials_.size(); ++i) {
        const AutoTrial& tr = trials_[i];
        all += ", " + trialName(tr) + " " +
               (tr.skipped ? "skipped" : tr.failed ? "unavailable" : pps(tr.deliveredPps) + (tr.cut ? " (cut short)" : ""));
        if (!tr.failed && !tr.skipped && chargeOf(tr) < 1 && baselinePps_ > 0)
            charged += "; " + trialName(tr) + ": " + ratio(tr.deliveredPps / baselinePps_) + "x none, " + ratio(worth(tr) / baselinePps_) +
                       "x after its core (none kept " + cpusText(busyCpus(beforeView_)) + " CPUs busy; the poll spends one more whole)";
        if (!tr.failed && !tr.skipped && (best == trials_.size() || worth(tr) > worth(trials_[best]))) best = i;
    }
    all += " packets/s delivered" + charged;
    const std::string numbers = last + "; " + all;
    if (best < trials_.size() && worth(trials_[best]) >= baselinePps_ * (1 + t_.gainMargin)) {
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
    const char* reason = !bestTrial                                                   ? "unavailable"
                         : worth(*bestTrial) < baselinePps_ * (1 - t_.worseMargin) ? "worse"
                                                                                     : "no_gain";
    targets_ = CpuSet{};
    state_ = AutoState::kBackoff;
    backoffUntil_ = at + t_.backoffSeconds;
    return {"undo", reason, numbers + ": none beats no steering by " + percent(t_.gainMargin) + ", steering off for " +
                                pps(t_.backoffSeconds) + " s", true};
}

}  // namespace rxtune
