#include "daemon/reconciler.hpp"

#include <algorithm>
#include <tuple>

#include "daemon/log.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/registry.hpp"
#include "planner/planner.hpp"

namespace rxtune {

bool Reconciler::concerns(const std::string& name, const std::function<std::string()>& linkKind) const {
    if (std::find(steered_.begin(), steered_.end(), name) != steered_.end()) return true;  // ours: gone, reset, renamed
    if (!interfaces_->empty()) return std::find(interfaces_->begin(), interfaces_->end(), name) != interfaces_->end();
    if (!mayMatch(profile_->match, name, "")) return false;
    return profile_->match.includeVirtual || mayMatch(profile_->match, name, linkKind());
}

bool Reconciler::run(Why why, const std::set<std::string>* devices, const AutoInputs* autoIn,
                     std::optional<std::chrono::steady_clock::time_point> firstEvent) {
    const Profile& profile = *profile_;
    wrote_ = false;
    // What is read: an event's devices, or for the whole host the candidates where they are known
    // (a device that cannot match is not read; the plan is the same).
    const std::vector<std::string> scope = devices      ? std::vector<std::string>(devices->begin(), devices->end())
                                           : candidates_ ? candidates_()
                                                         : std::vector<std::string>();
    // An event about a device may mean a driver reload: what its kernel refused is tried again.
    if (devices)
        for (auto it = refused_.begin(); it != refused_.end();) {
            if (devices->count(it->second)) {
                refusedIds_.erase(it->first);
                it = refused_.erase(it);
            } else {
                ++it;
            }
        }
    PlanRequest req;
    req.interfaces = *interfaces_;
    req.memory.refusedBefore = &refusedIds_;
    req.skipMissing = true;
    req.services = services_;
    req.autoIn = autoIn;
    req.scope = devices || candidates_ ? &scope : nullptr;
    // The families' hooks around the plan (what each lends it from its earlier runs: irq.cpus
    // auto's last reading) and the apply: the lifecycle the commands run too (apply/lifecycle.hpp).
    auto prepared = lifecycle().plan(profile, nl_, req, devices == nullptr);
    if (!prepared) {
        // A device that vanished between the listing and the reading: its DELLINK event follows.
        LOG_W("reconcile: " + prepared.error().message());
        metrics_.recordApply({profile.name, profile.digest, "failed", epochSeconds(), 0, 0});
        return false;
    }
    Plan& plan = prepared->plan;
    if (devices) {
        std::erase_if(steered_, [&](const std::string& n) { return devices->count(n) > 0; });
        steered_.insert(steered_.end(), plan.interfaces.begin(), plan.interfaces.end());
    } else {
        steered_ = plan.interfaces;
    }
    Knobs knobs(fs_, services_);
    size_t drifted = 0, pendingNow = 0, notInEffect = 0;
    auto judge = [&](const ApplyReport& applied) {
        if (applied.resumedInterrupted) LOG_N("adopted the journal of an interrupted apply; originals kept");
        for (const auto& s : applied.written) {
            // Drift is a value the journal held as applied that someone else changed; a value set the
            // first time or newly chosen by the plan (irq.cpus auto chose another CPU) is not.
            // Its family may know the mover as one rxtune works with (irqbalance before the rescan
            // that bans an IRQ): put back, counted in the family's series, not as drift.
            const bool changedByOther = why == Why::kDrift && !applied.newValues.count(s.id);
            const bool drift = changedByOther && lifecycle().driftCorrected(s, metrics_);
            LOG_I((drift ? "corrected drift: " : changedByOther ? "put back: " : "set: ") + s.id + " " + normalise(s.kind, s.current) + " -> " +
                  s.desired);
            if (!drift) continue;
            ++drifted;
            metrics_.countDriftCorrection(s);
        }
        for (const auto& r : applied.refused)
            if (refused_.emplace(r.id, r.key.device).second && refusedIds_.insert(r.id).second)
                LOG_W("skipped " + r.id + ": " + r.reason + " (not tried again until the device changes)");
        std::tie(pendingNow, notInEffect) = watchPending(plan, knobs, devices);
    };
    auto done = lifecycle().apply(plan, knobs, profile, isoNow(), devices, judge);
    if (!done) {
        LOG_E(done.error().message());
        metrics_.recordApply({profile.name, profile.digest, "failed", epochSeconds(), 0, plan.pendingCount()});
        return false;
    }
    const ApplyReport* applied = &done->report;
    if (why == Why::kEvent && firstEvent && !applied->written.empty())
        metrics_.observeReapplyLatency(std::chrono::steady_clock::now() - *firstEvent);
    // "drifted": what the last drift check found changed by someone else (and has set again).
    const size_t total = plan.settings.size();
    const size_t notInSync = std::min(total, drifted + pendingNow + notInEffect);
    metrics_.recordApply({plan.profile, profile.digest, applied->written.empty() ? "unchanged" : "changed", epochSeconds(),
                          total - notInSync, drifted, pendingNow, notInEffect});
    // The interface metrics are the daemon's sample's (only the devices metrics_interfaces
    // selects): a whole-host run that changed something asks for them again.
    wrote_ = !devices && !applied->written.empty();
    return true;
}

std::pair<size_t, size_t> Reconciler::watchPending(const Plan& plan, const Knobs& knobs, const std::set<std::string>* devices) {
    // An event's plan covers its devices only: the others' entries stay as they were.
    std::map<std::string, PendingSeen> next;
    if (devices)
        for (const auto& [id, seen] : pending_)
            if (std::none_of(plan.settings.begin(), plan.settings.end(), [&id = id](const Setting& s) { return s.id == id; })) next.emplace(id, seen);
    size_t pendingNow = 0, notInEffect = 0;
    for (const auto& s : plan.settings) {
        auto p = knobs.pending(s.key, s.desired);
        if (!p) continue;
        auto was = pending_.find(s.id);
        PendingSeen seen{p->against, false};
        if (was == pending_.end()) {
            LOG_I("in place, in effect later: " + s.id + " " + s.desired + ": " + p->what);
        } else {
            seen.warned = was->second.warned;
            if (p->against > was->second.against && !seen.warned) {
                LOG_W("not followed: " + s.id + " is " + s.desired + ", but " + p->what + ", and " +
                      std::to_string(p->against - was->second.against) +
                      " interrupt(s) were served off those CPUs since the last look: the interrupt controller does not honour it");
                seen.warned = true;
            }
        }
        (seen.warned ? notInEffect : pendingNow) += 1;
        next.emplace(s.id, seen);
    }
    pending_ = std::move(next);
    return {pendingNow, notInEffect};
}

Result<RevertReport> Reconciler::revert() {
    Knobs knobs(fs_, services_);
    return lifecycle().revert(knobs);
}

Lifecycle& Reconciler::lifecycle() {
    if (!lifecycle_)
        lifecycle_.emplace(fs_, store_, runDir_, *signals_, *clock_, [](const char* level, const std::string& line) { logLine(level, line); },
                           true);
    return *lifecycle_;
}

}  // namespace rxtune
