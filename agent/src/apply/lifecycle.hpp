// The one lifecycle of a run, for the CLI's plan/apply/verify/revert and the daemon's reconcile:
// snapshot and plan, apply, revert, each with every knob family's hooks around it in the registry's
// order (knobs/family.hpp). A command makes one per run (each family's memory starts empty); the
// daemon keeps one, and with it each family's memory from run to run.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "knobs/family.hpp"
#include "knobs/metrics_sink.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "sys/file_tree.hpp"
#include "sys/signals.hpp"

namespace rxtune {

struct CommandApply {
    ApplyReport report;
    // Settings others move (an IRQ irqbalance placed) found moved: while the hooks before the
    // writes waited (the apply then wrote them from where they were), and after the writes (put
    // back). In the order found. A daemon's run has none: it puts a moved one back at its drift check.
    std::vector<MovedSetting> movedBefore, movedAfter;
    bool stillMoving = false;  // one was moved again at the last look: the daemon would put it back
};

// Where a setting was found moved before the writes (a mover at work), how often, and how far
// apart, a command looks again after them, while it finds one moved.
inline constexpr int kMovedLooks = 3;
inline constexpr double kMovedLookGap = 0.5;  // seconds

class Lifecycle {
public:
    using Say = std::function<void(const char* level, const std::string&)>;  // level: SD_WARNING, SD_INFO...
    // daemon: the daemon's runs (others are told again later, a moved setting waits for the drift
    // check); else a command's (it may wait for others, and looks for movers after its writes).
    Lifecycle(const FileTree& fs, const JournalStore& store, const std::string& runDir, ProcessSignals& signals, const Clock& clock,
              Say say, bool daemon)
        : fs_(fs), store_(store), runDir_(runDir), signals_(signals), clock_(clock), say_(std::move(say)), daemon_(daemon) {}

    // The snapshot and the plan: what each family lends the plan from its memory first (irq.cpus
    // auto: the last reading), what it keeps of the snapshot after. wholeHost: every device read
    // (not an event's alone).
    Result<Prepared> plan(const Profile& profile, NetlinkSource& nl, PlanRequest req, bool wholeHost);

    // The hooks before the first write (irqbalance told; a command waits for its rescan), the
    // writes, the hooks after (applied, or failed and undone). A command reads the settings others
    // move again after the hooks (rereadMoved) and, where one had moved, looks for those moved after
    // the writes, each put back (putBackMoved). What was moved, and by whom, goes to `say`.
    // devices: an event's (applyPlan's); null: the whole plan. written: what the caller does with
    // the writes before the families hear that the apply is over (the daemon judges drift through
    // driftCorrected, whose words may make a family tell others again at the end of this run).
    using Written = std::function<void(const ApplyReport&)>;
    Result<CommandApply> apply(Plan& plan, const Knobs& knobs, const Profile& profile, const std::string& now,
                               const std::set<std::string>* devices = nullptr, const Written& written = {});

    // What the journal holds as applied, against the host: drift, and values in place but not in
    // effect yet. journal: null where nothing is applied.
    struct Verified {
        std::optional<Journal> journal;
        std::vector<Drift> drift;
        std::vector<PendingEffect> pending;
    };
    Result<Verified> verify(const Knobs& knobs) const;

    // Every journaled original back, then the families told (ApplyStage::kReverted).
    Result<RevertReport> revert(const Knobs& knobs);

    // The daemon put back `s`, which someone else had changed: its family's words and series; false
    // where the family knows the mover as one rxtune works with (KnobFamily::driftCorrected).
    bool driftCorrected(const Setting& s, CounterSink& metrics);
    std::string moverOf(const Setting& s);
    // The hooks after an apply alone (a run that did not get to apply: the families are told).
    void afterApply(const Profile* profile, ApplyStage stage);

    const Clock& clock() const { return clock_; }
    void say(const char* level, const std::string& line) { say_(level, line); }

private:
    HookContext context();
    void beforeWrites(const Plan& plan);
    const FileTree& fs_;
    const JournalStore& store_;
    const std::string& runDir_;
    ProcessSignals& signals_;
    const Clock& clock_;
    Say say_;
    bool daemon_;
    // What each family carries from run to run (KnobFamily's hooks), by its name.
    Slots memory_;  // the families' own, each under its slot
};

}  // namespace rxtune
