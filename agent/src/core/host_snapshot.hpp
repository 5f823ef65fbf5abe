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

struct HostSnapshot {
    Topology host;
    std::vector<Nic> nics;
    // Read only where a family needs them (the IRQ family, detect):
    std::optional<IrqbalanceFacts> irqbalance;
    std::map<unsigned, std::uint64_t> interruptsPerCpu;  // /proc/interrupts, every line, by CPU
};

}  // namespace rxtune
