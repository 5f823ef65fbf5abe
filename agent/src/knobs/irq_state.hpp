// The IRQs rxtune pins, published for irqbalance's policy script (<run_dir>/pinned-irqs: one IRQ
// number per line), so that no IRQ number is baked into irqbalance's configuration.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/host_snapshot.hpp"
#include "core/irqbalance.hpp"
#include "core/result.hpp"
#include "core/setting.hpp"
#include "knobs/family.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "sys/file_tree.hpp"
#include "sys/signals.hpp"

namespace rxtune {

// The text of <run_dir>/pinned-irqs for what the journal keeps applied (none: empty), and the
// IRQs of `planned`.
std::string pinnedIrqsText(const Journal* applied, const std::set<int>& planned = {});

// The IRQs a plan pins (its irq.cpus settings), written or in place: an IRQ in place by
// irqbalance's doing is still irqbalance's to move until the rescan that bans it.
std::set<int> irqsPinnedBy(const Plan& plan);

struct PinnedIrqsRequest {
    // IRQs an apply is about to pin, published with the journal's before its first affinity write:
    // irqbalance bans them at the rescan it is told to make, so it never balances an IRQ rxtune has
    // just written (the rescan pass places nothing, and no pass runs between the request and it).
    std::set<int> planned;
    // Whom to tell: where the text changed (the default); also where it has not (a request it
    // dropped, see below); nobody (the file first, the request once irqbalance takes it).
    enum class Tell { kIfChanged, kAlways, kNever } tell = Tell::kIfChanged;
};

struct PinnedIrqsPublished {
    bool changed = false;               // the file's text changed (and was written)
    std::vector<int> told;              // irqbalance processes sent SIGHUP
    std::vector<std::string> warnings;  // one that could not be told, and why
    // Told, but before its first balancing pass, when irqbalance drops a rescan request
    // (irqbalanceNotReady): pid and seconds until it may take one.
    std::vector<std::pair<int, double>> dropped;
    double droppedFor() const;  // the longest of those; 0: none
};

// The irqbalance processes asking rxtune's policy script that would drop a rescan request now,
// before their first balancing pass, with the seconds to wait before looking again. A young one
// (IrqbalanceAsking::young) is asked through its control socket whether it has placed any IRQ
// (only a pass does); one without a socket yet is still reading its IRQs; one whose socket file
// does not answer is judged by the file's time (IrqbalanceAsking::rescanIgnoredFor).
std::vector<std::pair<int, double>> irqbalanceNotReady(const FileTree& root, ProcessSignals& signals);

// Writes <run_dir>/pinned-irqs when its text changes, then tells each running irqbalance that
// asks rxtune's policy script (root: where /proc is read) to rescan with SIGHUP (irqbalance(1),
// SIGNALS): irqbalance runs the script only when it (re)discovers IRQs, so an IRQ pinned after it
// started would otherwise stay in its balancing until a hotplug or restart.
Result<PinnedIrqsPublished> publishPinnedIrqs(const std::string& runDir, const JournalStore& store, const FileTree& root,
                                              ProcessSignals& signals, const PinnedIrqsRequest& request = {});

// Before an apply's first affinity write, where it may block (the CLI; the daemon tells and
// tells again instead): publishes `irqs` (the IRQs the plan pins, written or in place) with the
// journal's, so a rescan or a start meanwhile bans them. Where the list did not change and no
// irqbalance may still balance one of them (its control socket does not list them; or it shows
// no placing and started after the list was written), that is all. Else waits (at most 30 s) for
// the first pass of an irqbalance that has not made it, since it drops a rescan request until
// then; tells each; then waits until its control socket shows the rescan (it no longer lists
// them; not listed before: banned already), at most two of its intervals and 5 s; one that cannot
// be asked is given its interval and a second. A pass running when the request comes still
// writes what it had decided, and a first pass may move an IRQ in place: the caller reads the
// pinned IRQs again after this (apply/lifecycle.hpp). What to tell the user goes to `say` as it
// happens (before a wait, not after it); an error: the file could not be written (nothing told).
Result<void> tellIrqbalanceBeforeWrites(const std::string& runDir, const JournalStore& store, const FileTree& root,
                                        ProcessSignals& signals, const Clock& clock, const std::set<int>& irqs,
                                        const std::function<void(const std::string&)>& say);

// /proc/interrupts as the IRQ family reads it (counts since boot).
struct InterruptCounts {
    std::map<unsigned, std::uint64_t> perCpu;  // every line, by CPU
    // The same for each IRQ of the snapshot's NICs alone: irq -> cpu -> count (what a CPU does for
    // a NIC's own IRQ is not "other work" when choosing that IRQ's CPU).
    std::map<unsigned, std::map<unsigned, std::uint64_t>> nicIrqs;
};

// The IRQ family's host facts, as its readHost left them: irqbalance (null: not read) and
// /proc/interrupts (empty: not read, or no such file).
inline constexpr Slot<IrqbalanceFacts> kIrqbalanceFacts{"irqbalance"};
inline constexpr Slot<InterruptCounts> kInterruptFacts{"interrupts"};
inline const IrqbalanceFacts* irqbalanceOf(const HostSnapshot& s) { return s.fact(kIrqbalanceFacts); }
inline const InterruptCounts& interruptsOf(const HostSnapshot& s) {
    static const InterruptCounts none;
    const auto* c = s.fact(kInterruptFacts);
    return c ? *c : none;
}

// irq.cpus auto's earlier /proc/interrupts reading, lent to a plan (PlanMemory::families, under
// "irq"): "other work" is then the rate since, not the count since boot.
struct InterruptsBefore {
    const InterruptCounts* counts = nullptr;  // null: no recent reading (counts since boot)
    double seconds = 0;  // how long before this plan's snapshot it was taken
    // Without a recent reading (a daemon just started, or restarted by an upgrade): the IRQ
    // affinities the journal holds as applied, by setting id. An IRQ still where rxtune's journal
    // put it stays there until a measured rate says otherwise: the counts since boot of the CPU it
    // served include the work that placement brought, and would move it at every restart.
    const std::map<std::string, std::string>* journaled = nullptr;
};
inline constexpr Slot<InterruptsBefore> kInterruptsBefore{"irq"};

// The IRQ family's hooks (knobs/irq_hooks.cpp): the reading it keeps from run to run, and telling
// irqbalance (pinned-irqs, its rescan) before the writes and once an apply or revert is over; in
// the daemon, which tells again later, or a command, which waits. `irqAuto`: irq.cpus auto;
// `irqKept`: irq.cpus keep, or no profile (a revert).
void irqBeforePlan(HookContext& c, bool irqAuto, PlanMemory& memory);
void irqAfterSnapshot(HookContext& c, bool irqAuto, bool wholeHost, const HostSnapshot& snap);
void irqBeforeWrites(HookContext& c, const Plan& plan);
void irqAfterApply(HookContext& c, bool irqKept, ApplyStage stage);
// The daemon put a pinned IRQ back: counted (rxtune_irq_moves_total{by}) and said; false (no
// drift) where irqbalance asks rxtune's policy script and moved it before the rescan that bans it
// (told to rescan again where it still balances it), true for anyone else, an irqbalance without
// the script, or the same irqbalance moving the same IRQ a second time.
bool irqDriftCorrected(HookContext& c, const Setting& s, CounterSink& metrics);
// Who moved a pinned IRQ, in words: irqbalance (pid, whether before its rescan), or someone else.
std::string irqMoverOf(HookContext& c, const Setting& s);
// The IRQ family's counter: a pinned IRQ someone moved, put back.
inline constexpr std::string_view kIrqMoves = "rxtune_irq_moves_total";

}  // namespace rxtune
