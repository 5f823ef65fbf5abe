// The IRQs rxtune pins, published for irqbalance's policy script (<run_dir>/pinned-irqs: one IRQ
// number per line), so that no IRQ number is baked into irqbalance's configuration.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"
#include "state/journal.hpp"
#include "sys/file_tree.hpp"
#include "sys/signals.hpp"

namespace rxtune {

// The text of <run_dir>/pinned-irqs for what the journal keeps applied (none: empty).
std::string pinnedIrqsText(const Journal* applied);

struct PinnedIrqsPublished {
    bool changed = false;               // the file's text changed (and was written)
    std::vector<int> told;              // irqbalance processes sent SIGHUP
    std::vector<std::string> warnings;  // one that could not be told, and why
};

// Writes <run_dir>/pinned-irqs when its text changes, then tells each running irqbalance that
// asks rxtune's policy script (root: where /proc is read) to rescan with SIGHUP (irqbalance(1),
// SIGNALS): irqbalance runs the script only when it (re)discovers IRQs, so an IRQ pinned after it
// started would otherwise stay in its balancing until a hotplug or restart.
Result<PinnedIrqsPublished> publishPinnedIrqs(const std::string& runDir, const JournalStore& store, const FileTree& root,
                                              ProcessSignals& signals);

}  // namespace rxtune
