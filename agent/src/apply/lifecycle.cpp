#include "apply/lifecycle.hpp"

#include <systemd/sd-daemon.h>

#include "knobs/registry.hpp"

namespace rxtune {

HookContext FamilyHooks::context(const KnobFamily& f) {
    return HookContext{fs_, store_, runDir_, signals_, clock_, false, say_, memory_[std::string(f.name())]};
}

void FamilyHooks::beforeWrites(const Plan& plan) {
    for (const KnobFamily* f : knobFamilies()) {
        auto c = context(*f);
        f->beforeWrites(c, plan);
    }
}

void FamilyHooks::afterApply(const Profile* profile, ApplyStage stage) {
    for (const KnobFamily* f : knobFamilies()) {
        auto c = context(*f);
        f->afterApply(c, profile, stage);
    }
}

std::string FamilyHooks::moverOf(const Setting& s) {
    const KnobFamily& f = familyOf(s.key);
    auto c = context(f);
    return f.moverOf(c, s);
}

Result<CommandApply> applyWithHooks(Plan& plan, const Knobs& knobs, const JournalStore& store, const std::string& now,
                                    FamilyHooks& hooks, const Profile& profile) {
    CommandApply out;
    hooks.beforeWrites(plan);
    out.movedBefore = rereadMoved(plan, knobs);
    for (auto& m : out.movedBefore) {
        m.by = hooks.moverOf(m.setting);
        hooks.say(SD_NOTICE, m.setting.id + " was moved from " + m.was + " to " + m.found + " meanwhile, by " + m.by + ": set again");
    }
    auto r = applyPlan(plan, knobs, store, now);
    if (!r) {
        hooks.afterApply(&profile, ApplyStage::kFailed);
        return failWith(r.error());
    }
    out.report = std::move(*r);
    // A mover was at work while this command ran: looked for again after the writes, while it
    // goes on moving them (bounded).
    bool look = !out.movedBefore.empty();
    for (int n = 0; look && n < kMovedLooks; ++n) {
        hooks.clock().sleepFor(kMovedLookGap);
        auto back = putBackMoved(plan, knobs);
        if (!back) {
            hooks.say(SD_WARNING, back.error().message());
            break;
        }
        look = !back->empty();
        out.stillMoving = look && n + 1 == kMovedLooks;
        for (auto& m : *back) {
            m.by = hooks.moverOf(m.setting);
            hooks.say(SD_NOTICE, m.setting.id + " was moved from " + m.was + " to " + m.found + " after the write, by " + m.by +
                                     ": put back");
            out.movedAfter.push_back(std::move(m));
        }
    }
    if (out.stillMoving)
        hooks.say(SD_WARNING, "still being moved at the last of " + std::to_string(kMovedLooks) +
                                  " looks after the writes: left as put back (rxtune daemon puts a moved one back at its drift check)");
    hooks.afterApply(&profile, ApplyStage::kApplied);
    return out;
}

}  // namespace rxtune
