// A fixture host with irqbalance (r8125-irqbalance) whose /proc/irq acts as the kernel's, a state
// directory of its own (journal, run files) and the knobs over it: what the IRQ pinning tests share.
#pragma once

#include <string>

#include "apply/apply.hpp"
#include "fixture.hpp"
#include "kernel_irq_tree.hpp"
#include "state/journal.hpp"

namespace rxtune::test {

struct PinRig {
    TempTree tree{"r8125-irqbalance"};
    TempTree state{"vm-no-cpufreq"};
    KernelIrqTree fs{tree.path().string()};
    const Knobs knobs{fs};
    JournalStore store{(state.path() / "state").string()};
    const std::string runDir = (state.path() / "run").string();
};

}  // namespace rxtune::test
