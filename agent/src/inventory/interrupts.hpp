// Parser for /proc/interrupts: per-IRQ counts per CPU and the action names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace rxtune {

struct InterruptLine {
    std::string id;                     // "24", "NMI", "LOC"
    bool numeric = false;
    unsigned irq = 0;                   // when numeric
    std::vector<std::uint64_t> counts;  // one per CPU column (may be fewer for ERR/MIS)
    std::string chip;                   // "PCI-MSI 49152-edge" (everything between counts and actions)
    std::vector<std::string> actions;   // "virtio0-input.0"; several for shared IRQs
};

struct InterruptTable {
    std::vector<unsigned> cpus;  // CPU ids of the count columns ("CPU0 CPU1 ...")
    std::vector<InterruptLine> lines;
};

Result<InterruptTable> parseInterrupts(std::string_view text);

}  // namespace rxtune
