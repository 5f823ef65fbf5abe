// HostSnapshot: what inventory/ read of a host at one moment (topology, sysctls, NICs), and what
// the knob families read of it for themselves.
#pragma once

#include <any>
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
    // know the type.
    std::map<std::string, std::any> facts;

    template <class T>
    const T* fact(const std::string& name) const {
        auto it = facts.find(name);
        return it == facts.end() ? nullptr : std::any_cast<T>(&it->second);
    }
};

}  // namespace rxtune
