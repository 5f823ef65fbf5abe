// The IRQs rxtune pins, published for irqbalance's policy script (<run_dir>/pinned-irqs: one IRQ
// number per line), so that no IRQ number is baked into irqbalance's configuration.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/setting.hpp"
#include "state/journal.hpp"
#include "sys/file_tree.hpp"
#include "sys/signals.hpp"

namespace rxtune {

// The text of <run_dir>/pinned-irqs for what the journal keeps applied (none: empty), and the
// IRQs of `planned`.
std::string pinnedIrqsText(const Journal* applied, const std::set<int>& planned = {});

// The IRQs a plan is about to write (its irq.cpus settings), where it writes any: empty when none
// of them changes.
std::set<int> irqsAboutToPin(const Plan& plan);

struct PinnedIrqsRequest {
    // IRQs an apply is about to pin, published with the journal's before its first affinity write:
    // irqbalance bans them at the rescan it is told to make, so it never balances an IRQ rxtune has
    // just written (the rescan pass places nothing, and no pass runs between the request and it).
    std::set<int> planned;
    // Tell irqbalance even where the text has not changed (a request it dropped, see below).
    bool tellAnyway = false;
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
// before their first balancing pass, with the seconds to wait before looking again: by the time
// since its start (IrqbalanceAsking::rescanIgnoredFor), and, where that says it is past but the
// process is young (a slow start or a slow first pass), by asking it whether it has placed any IRQ.
std::vector<std::pair<int, double>> irqbalanceNotReady(const FileTree& root, ProcessSignals& signals);

// Writes <run_dir>/pinned-irqs when its text changes, then tells each running irqbalance that
// asks rxtune's policy script (root: where /proc is read) to rescan with SIGHUP (irqbalance(1),
// SIGNALS): irqbalance runs the script only when it (re)discovers IRQs, so an IRQ pinned after it
// started would otherwise stay in its balancing until a hotplug or restart.
Result<PinnedIrqsPublished> publishPinnedIrqs(const std::string& runDir, const JournalStore& store, const FileTree& root,
                                              ProcessSignals& signals, const PinnedIrqsRequest& request = {});

}  // namespace rxtune
