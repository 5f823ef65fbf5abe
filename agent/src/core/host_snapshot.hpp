// HostSnapshot: what inventory/ read of a host at one moment (topology, sysctls, NICs), and what
// the knob families read of it for themselves.
#pragma once

#include <cstdint>
#include <string>
#include <map>
#include <optional>
#include <vector>

#include "core/nic.hpp"
#include "core/topology.hpp"

namespace rxtune {

struct HostSnapshot {
    Topology host;
    std::vector<Nic> nics;
    // What a knob family read of the host for itself, by name ("irqbalance", "interrupts":
    // the IRQ family's; "softnet": the rings' and coalescing's); the family and its reader alone
    // know the type: it declares the slot beside it (core/slots.hpp).
    Slots facts;

    template <class T>
    const T* fact(Slot<T> slot) const {
        return facts.get(slot);
    }
};

}  // namespace rxtune
