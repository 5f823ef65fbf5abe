// One command's apply or revert through the knob families' hooks (the daemon's Reconciler drives
// the same hooks, keeping each family's memory from run to run; a command starts each empty).
#pragma once

#include <any>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "apply/apply.hpp"
#include "knobs/family.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "sys/file_tree.hpp"
#include "sys/signals.hpp"

namespace rxtune {

class FamilyHooks {
public:
    using Say = std::function<void(const char* level, const std::string&)>;  // level: SD_WARNING, SD_INFO...
    FamilyHooks(const FileTree& fs, const JournalStore& store, const std::string& runDir, ProcessSignals& signals,
                const Clock& clock, Say say)
        : fs_(fs), store_(store), runDir_(runDir), signals_(signals), clock_(clock), say_(std::move(say)) {}
    void beforeWrites(const Plan& plan);
    void afterApply(const Profile* profile, ApplyStage stage);
    std::string moverOf(const Setting& s);
    const Clock& clock() const { return clock_; }
    void say(const char* level, const std::string& line) { say_(level, line); }

private:
    HookContext context(const KnobFamily& f);
    const FileTree& fs_;
    const JournalStore& store_;
    const std::string& runDir_;
    ProcessSignals& signals_;
    const Clock& clock_;
    Say say_;
    std::map<std::string, std::any> memory_;
};

struct CommandApply {
    ApplyReport report;
    // Settings others move (an IRQ irqbalance placed) found moved: while the hooks before the
    // writes waited (the apply then wrote them from where they were), and after the writes (put
    // back). In the order found.
    std::vector<MovedSetting> movedBefore, movedAfter;
    bool stillMoving = false;  // one was moved again at the last look: the daemon would put it back
};

// Where a setting was found moved before the writes (a mover at work), how often, and how far
// apart, the command looks again after them, while it finds one moved.
inline constexpr int kMovedLooks = 3;
inline constexpr double kMovedLookGap = 0.5;  // seconds

// A command's apply: the hooks before the writes (irqbalance told, its rescan awaited), the
// settings others move read again (rereadMoved), the apply, then, where one had moved, looks for
// those moved after it, each put back (putBackMoved); then the hooks after it (applied, or failed
// and undone). What was moved, and by whom, goes to `say` as it is found.
Result<CommandApply> applyWithHooks(Plan& plan, const Knobs& knobs, const JournalStore& store, const std::string& now,
                                    FamilyHooks& hooks, const Profile& profile);

}  // namespace rxtune
