// HostSnapshot: what inventory/ read of a host at one moment (topology, sysctls, NICs).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/irqbalance.hpp"
#include "core/nic.hpp"
#include "core/topology.hpp"

namespace rxtune {

// /proc/interrupts as the IRQ family reads it (counts since boot).
struct InterruptCounts {
    std::map<unsigned, std::uint64_t> perCpu;  // every line, by CPU
    // The same for each IRQ of the snapshot's NICs alone: irq -> cpu -> count (what a CPU does for
    // a NIC's own IRQ is not "other work" when choosing that IRQ's CPU).
    std::map<unsigned, std::map<unsigned, std::uint64_t>> nicIrqs;
};

struct HostSnapshot {
    Topology host;
    std::vector<Nic> nics;
    // Read only where a family needs them (the IRQ family, detect):
    std::optional<IrqbalanceFacts> irqbalance;
    InterruptCounts interrupts;
    // /proc/net/softnet_stat's drops and squeezes by CPU (since boot), read by the rings family
    // where a ring could grow.
    struct SoftnetCounts {
        std::uint64_t dropped = 0, squeezed = 0;
    };
    std::optional<std::map<unsigned, SoftnetCounts>> softnet;
};

}  // namespace rxtune
