#include "daemon/auto_control.hpp"

#include <algorithm>

#include "daemon/log.hpp"
#include "planner/planner.hpp"

namespace rxtune {

void AutoControl::sample(const Profile& profile, const FileTree& fs, const HostSnapshot& snap,
                         const std::optional<BpfControl::Reading>& bpf, const std::vector<std::string>& steered, const Apply& apply) {
    auto raw = readAutoRaw(fs, snap);
    if (!raw) {
        LOG_W("auto: " + raw.error().message());
        return;
    }
    if (bpf) {
        raw->netRxNs = bpf->netRxNs;
        raw->netRxSpell = bpf->spell;
    }
    step(profile, fs, snap, std::move(*raw), steered, apply);
}

void AutoControl::step(const Profile& profile, const FileTree& fs, const HostSnapshot& snap, AutoRaw raw,
                       const std::vector<std::string>& steered, const Apply& apply) {
    std::map<std::string, AutoScope> changed;  // interfaces whose steering changes now
    if (last_) {
        PlanOptions opts;
        if (auto ok = addCgroupCpus(profile, fs, snap.host, opts); !ok) {
            LOG_W("auto: " + ok.error().message());
            return;
        }
        for (const auto& name : steered) {
            auto nic = std::find_if(snap.nics.begin(), snap.nics.end(), [&](const Nic& n) { return n.name == name; });
            if (nic == snap.nics.end()) continue;
            const AutoSample sample = autoSample(*last_, raw, name);
            auto scope = autoScope(profile, snap.host, *nic, opts, sample);
            if (!scope) {
                LOG_W("auto " + name + ": " + scope.error().message());
                continue;
            }
            auto& machine = machines_.try_emplace(name, profile.steering.autoThresholds).first->second;
            const AutoDecision d = machine.step(sample, scope->rxCpu, scope->candidates, scope->siblings, scope->biggest);
            log(name, machine, d, *scope);
            if (d.changed) changed.emplace(name, *scope);
        }
    }
    last_ = std::move(raw);
    if (changed.empty()) return;
    // A candidate that cannot be put in place (someone else's XDP program on the device, no BPF)
    // fails the whole apply, whose writes are undone: those machines move on, and the plan is tried
    // again, up to once per trial (a candidate has two where the cores differ in size: big, all).
    const double at = last_->at;
    for (size_t attempt = 0; attempt <= 2 * profile.steering.autoThresholds.candidates.size(); ++attempt) {
        for (const auto& [name, scope] : changed) {
            in_.targets[name] = machines_.at(name).targets();
            in_.modes[name] = machines_.at(name).mode();
        }
        if (apply(in_)) return;
        bool retry = false;
        for (const auto& [name, scope] : changed) {
            auto& machine = machines_.at(name);
            const AutoDecision d = machine.failed(at, "the apply failed (see above)");
            log(name, machine, d, scope);
            retry = retry || d.changed;
        }
        if (!retry) return;
    }
}

void AutoControl::log(const std::string& name, const AutoSteer& machine, const AutoDecision& d, const AutoScope& scope) {
    if (!d.decision.empty()) {
        const bool was = d.decision != "enable" && d.decision != "hold" && d.decision != "retry";  // judged against the CPU it started from
        LOG_N("auto " + name + ": " + d.decision + " (" + d.reason + "): " + d.detail + " [receive CPU " +
              std::to_string(was ? machine.rxCpuAtEnable() : scope.rxCpu) + ", " + scope.rxCpuSource + "]");
        metrics_.countSteeringDecision(name, d.decision, d.reason);
        said_[name] = {d.decision, d.reason, d.detail};
        if (d.decision == "enable" || d.reason == "predicted_no_gain") {
            metrics_.setTrialDelivered(name, "none", machine.baselinePps());
            for (const auto& t : machine.trials()) metrics_.setTrialPredicted(name, trialName(t), t.predicted.pps);
        }
        for (const auto& t : machine.trials())
            if (t.samples > 0 || t.failed) metrics_.setTrialDelivered(name, trialName(t), t.failed ? 0 : t.deliveredPps);
    }
    metrics_.setAutoState(name, toString(machine.state()), machine.targets().count(), candidateName(machine.mode()));
}

void AutoControl::setThresholds(const AutoThresholds& t) {
    // New thresholds apply from the next sample; what each machine decided stays.
    for (auto& [name, machine] : machines_) machine.setThresholds(t);
}

void AutoControl::clear() {
    for (const auto& [name, machine] : machines_) metrics_.setAutoState(name, "", 0, "");
    machines_.clear();
    said_.clear();
    in_ = AutoInputs{};
}

const AutoSteer* AutoControl::machine(const std::string& interface) const {
    auto it = machines_.find(interface);
    return it == machines_.end() ? nullptr : &it->second;
}

}  // namespace rxtune
