// The IRQs rxtune pins, published for irqbalance's policy script (<run_dir>/pinned-irqs: one IRQ
// number per line), so that no IRQ number is baked into irqbalance's configuration.
#pragma once

#include <string>

#include "core/result.hpp"
#include "state/journal.hpp"

namespace rxtune {

// The text of <run_dir>/pinned-irqs for what the journal keeps applied (none: empty).
std::string pinnedIrqsText(const Journal* applied);
Result<void> publishPinnedIrqs(const std::string& runDir, const JournalStore& store);

}  // namespace rxtune
