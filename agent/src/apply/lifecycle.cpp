#include "apply/lifecycle.hpp"

#include <systemd/sd-daemon.h>

#include "knobs/registry.hpp"

namespace rxtune {

HookContext Lifecycle::context() {
    return HookContext{fs_, store_, runDir_, signals_, clock_, daemon_, say_, memory_};
}

Result<Prepared> Lifecycle::plan(const Profile& profile, NetlinkSource& nl, PlanRequest req, bool wholeHost) {
    for (const KnobFamily* f : knobFamilies()) {
        auto c = context();
        f->beforePlan(c, profile, wholeHost, req.memory);
    }
    auto prepared = preparePlan(profile, fs_, nl, req);
    if (!prepared) return prepared;
    for (const KnobFamily* f : knobFamilies()) {
        auto c = context();
        f->afterSnapshot(c, profile, wholeHost, prepared->snapshot);
    }
    return prepared;
}

void Lifecycle::beforeWrites(const Plan& plan) {
    for (const KnobFamily* f : knobFamilies()) {
        auto c = context();
        f->beforeWrites(c, plan);
    }
}

void Lifecycle::afterApply(const Profile* profile, ApplyStage stage) {
    for (const KnobFamily* f : knobFamilies()) {
        auto c = context();
        f->afterApply(c, profile, stage);
    }
}

std::string Lifecycle::moverOf(const Setting& s) {
    const KnobFamily& f = familyOf(s.key);
    auto c = context();
    return f.moverOf(c, s);
}

bool Lifecycle::driftCorrected(const Setting& s, CounterSink& metrics) {
    const KnobFamily& f = familyOf(s.key);
    auto c = context();
    return f.driftCorrected(c, s, metrics);
}

Result<CommandApply> Lifecycle::apply(Plan& plan, const Knobs& knobs, const Profile& profile, const std::string& now,
                                      const std::set<std::string>* devices, const Written& written) {
    CommandApply out;
    beforeWrites(plan);
    if (!daemon_) {
        out.movedBefore = rereadMoved(plan, knobs);
        for (auto& m : out.movedBefore) {
            m.by = moverOf(m.setting);
            say(SD_NOTICE, m.setting.id + " was moved from " + m.was + " to " + m.found + " meanwhile, by " + m.by + ": set again");
        }
    }
    auto r = applyPlan(plan, knobs, store_, now, devices);
    if (!r) {
        afterApply(&profile, ApplyStage::kFailed);  // the undone IRQs are irqbalance's again
        return failWith(r.error());
    }
    out.report = std::move(*r);
    if (written) written(out.report);
    // A mover was at work while this command ran: looked for again after the writes, while it
    // goes on moving them (bounded).
    bool look = !out.movedBefore.empty();
    for (int n = 0; look && n < kMovedLooks; ++n) {
        clock_.sleepFor(kMovedLookGap);
        auto back = putBackMoved(plan, knobs);
        if (!back) {
            say(SD_WARNING, back.error().message());
            break;
        }
        look = !back->empty();
        out.stillMoving = look && n + 1 == kMovedLooks;
        for (auto& m : *back) {
            m.by = moverOf(m.setting);
            say(SD_NOTICE, m.setting.id + " was moved from " + m.was + " to " + m.found + " after the write, by " + m.by + ": put back");
            out.movedAfter.push_back(std::move(m));
        }
    }
    if (out.stillMoving)
        say(SD_WARNING, "still being moved at the last of " + std::to_string(kMovedLooks) +
                            " looks after the writes: left as put back (rxtune daemon puts a moved one back at its drift check)");
    afterApply(&profile, ApplyStage::kApplied);
    return out;
}

Result<Lifecycle::Verified> Lifecycle::verify(const Knobs& knobs) const {
    Verified out;
    auto j = store_.load();
    if (!j) return failWith(j.error());
    if (!*j) return out;
    auto drift = verifyApplied(**j, knobs);
    if (!drift) return failWith(drift.error());
    out.drift = std::move(*drift);
    out.pending = pendingApplied(**j, knobs);
    out.journal = std::move(*j);
    return out;
}

Result<RevertReport> Lifecycle::revert(const Knobs& knobs) {
    auto r = revertAll(knobs, store_);
    if (r) afterApply(nullptr, ApplyStage::kReverted);
    return r;
}

}  // namespace rxtune
