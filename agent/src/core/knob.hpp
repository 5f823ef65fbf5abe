// A knob's typed identity: which family it belongs to and what it is of (device, queue, IRQ, CPU).
// Ids, paths, metric labels and status lines are built from it by its family; none is parsed
// back from a string. The journal stores it beside the id and path; a journal of a build before
// that has only paths, which the family that built each one reads back once, at the journal's edge.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

namespace rxtune {

struct KnobKey {
    // The family's name (knobs/registry.cpp lists them): "sysctl", "queue", "irq", ...; "file" for
    // a plain file under the tree that no family claims (tests, older journals).
    std::string family = "file";
    std::string device;  // the interface; empty for a host-wide knob
    std::string name;    // the knob within the family: a sysctl key, "rps_cpus", "threaded", ...
    int queue = -1;      // a queue's index
    bool tx = false;     // a TX queue
    int cpu = -1;        // a CPU (a governor's)
    int irq = -1;        // an IRQ's number
    int napi = -1;       // a NAPI instance no queue names: the device's N-th in id order (core/nic.hpp NapiRole)

    auto tied() const { return std::tie(family, device, name, queue, tx, cpu, irq, napi); }
    bool operator==(const KnobKey& o) const { return tied() == o.tied(); }
    bool operator<(const KnobKey& o) const { return tied() < o.tied(); }
};

}  // namespace rxtune
