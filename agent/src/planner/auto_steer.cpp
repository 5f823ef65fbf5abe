#include "planner/auto_steer.hpp"

#include <algorithm>
#include <vector>

#include "core/text.hpp"

namespace rxtune {

namespace {

std::string pct(double v) { return std::to_string(static_cast<int>(v * 100 + 0.5)) + "%"; }
std::string pps(double v) { return rounded(v); }

}  // namespace

AutoSample autoSample(const AutoRaw& a, const AutoRaw& b, const std::string& ifname) {
    AutoSample s;
    s.at = b.at;
    const double dt = std::max(1e-3, b.at - a.at);
    const bool bpf = !a.netRxNs.empty() && !b.netRxNs.empty();
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
    double rx = 0;
    if (a.rxPackets.count(ifname) && b.rxPackets.count(ifname))
        rx = static_cast<double>(b.rxPackets.at(ifname) - std::min(b.rxPackets.at(ifname), a.rxPackets.at(ifname))) / dt;
    s.drops = drops;
    s.deliveredPps = std::max(0.0, rx - drops);
    return s;
}

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

AutoDecision AutoSteer::step(const AutoSample& s, unsigned rxCpu, const CpuSet& candidates, const CpuSet& rxSiblings) {
    AutoDecision d;
    const CpuLoad rx = s.cpus.count(rxCpu) ? s.cpus.at(rxCpu) : CpuLoad{};
    switch (state_) {
        case AutoState::kBackoff:
            if (s.at < backoffUntil_) return d;
            state_ = AutoState::kOff;
            resetBaseline();
            d.decision = "retry";
            d.reason = "backoff_over";
            d.detail = "back-off over; measuring again";
            return d;
        case AutoState::kOff: {
            if (!saturated(rx)) {
                resetBaseline();
                return d;
            }
            // The saturated samples in a row so far are the baseline a change is judged against.
            baselineSum_ += s.deliveredPps;
            baselineDrops_ += s.drops;
            ++baselineN_;
            if (baselineN_ < t_.sustain) return d;
            Choice c = choose(s, rxCpu, candidates, rxSiblings);
            if (c.targets.empty()) {
                if (!holding_) {  // said once per saturated spell, not every sample
                    holding_ = true;
                    d.decision = "hold";
                    d.reason = "no_spare_cpu";
                    d.detail = c.verdict;
                }
                return d;
            }
            baselinePps_ = mean(baselineSum_, baselineN_);
            baselineDropRate_ = mean(baselineDrops_, baselineN_);
            resetBaseline();
            targets_ = c.targets;
            rxCpu_ = rxCpu;
            state_ = AutoState::kTrial;
            trialStart_ = s.at;
            trialSum_ = trialDrops_ = 0;
            trialN_ = 0;
            d.decision = "enable";
            d.reason = "saturated";
            d.detail = c.verdict + "; before: " + pps(baselinePps_) + " packets/s delivered, " + pps(baselineDropRate_) +
                       " drops/s";
            d.changed = true;
            return d;
        }
        case AutoState::kTrial: {
            // The sample that straddles the change says little: count only those after it.
            if (s.at - trialStart_ > 0) {
                trialSum_ += s.deliveredPps;
                trialDrops_ += s.drops;
                ++trialN_;
            }
            if (s.at - trialStart_ < t_.windowSeconds || trialN_ == 0) return d;
            const double after = mean(trialSum_, trialN_), afterDrops = mean(trialDrops_, trialN_);
            const std::string numbers = "delivered " + pps(baselinePps_) + " -> " + pps(after) + " packets/s, drops " +
                                        pps(baselineDropRate_) + " -> " + pps(afterDrops) + "/s";
            // Judged on what got through (received minus softnet drops): drops that come with more
            // delivered packets are a deeper queue, not a loss.
            if (after < baselinePps_ * (1 - t_.worseMargin)) {
                targets_ = CpuSet{};
                state_ = AutoState::kBackoff;
                backoffUntil_ = s.at + t_.backoffSeconds;
                d = {"undo", "worse", numbers + ": worse, steering off for " + pps(t_.backoffSeconds) + " s", true};
                return d;
            }
            state_ = AutoState::kOn;
            committedPps_ = after;
            bad_ = 0;
            d = {"keep", "better", numbers, false};
            return d;
        }
        case AutoState::kOn: {
            // Stable when load goes away. Undo only when the targets have run out of room and less
            // gets through than when the change was kept (or packets are dropped).
            double targetBusy = 1;
            for (unsigned cpu : targets_.cpus()) targetBusy = std::min(targetBusy, s.cpus.count(cpu) ? s.cpus.at(cpu).busy : 0.0);
            const bool targetsFull = targetBusy >= t_.busyOn;
            const bool worse = s.deliveredPps < committedPps_ * (1 - t_.worseMargin);
            if (targetsFull && worse) {
                if (++bad_ < t_.sustain) return d;
                const std::string numbers = "targets " + targets_.toList() + " busy >= " + pct(targetBusy) + ", delivered " +
                                            pps(committedPps_) + " -> " + pps(s.deliveredPps) + " packets/s, drops " +
                                            pps(s.drops) + "/s";
                targets_ = CpuSet{};
                state_ = AutoState::kBackoff;
                backoffUntil_ = s.at + t_.backoffSeconds;
                d = {"undo", "targets_busy", numbers + ": steering off for " + pps(t_.backoffSeconds) + " s", true};
                return d;
            }
            bad_ = 0;
            if (s.deliveredPps > committedPps_) committedPps_ = s.deliveredPps;  // the best it has done
            return d;
        }
    }
    return d;
}

}  // namespace rxtune
