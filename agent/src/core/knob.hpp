// A knob's typed identity: which family it belongs to and what it is of (device, queue, CPU).
// Ids, paths, metric labels and status lines are built from it by its family; none is parsed
// back from a string (the journal's loader recovers it once, at its edge, from the path the
// same family built).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

namespace rxtune {

enum class Family : std::uint8_t {
    kFile,         // a plain file under the tree that no family claims (tests, older journals)
    kSysctl,       // proc/sys/... (the profile's sysctls, RFS's flow table)
    kDefaultMask,  // net.core.rps_default_mask: devices created later start steered
    kQueue,        // a queue's rps_cpus, rps_flow_cnt, xps_cpus
    kXdp,          // XDP cpumap steering on a device
    kNapi,         // threaded NAPI on a device and its kthreads' CPUs
    kNapiDefer,    // gro_flush_timeout, napi_defer_hard_irqs
    kGovernor,     // a CPU's cpufreq governor
    kIrq,          // a device's IRQ's CPUs (/proc/irq/N/smp_affinity_list)
    kRings,        // a device's RX/TX ring sizes (ethtool)
};

struct KnobKey {
    Family family = Family::kFile;
    std::string device;  // the interface; empty for a host-wide knob
    std::string name;    // the knob within the family: a sysctl key, "rps_cpus", "threaded", ...
    int queue = -1;      // kQueue: the queue's index; kIrq: the IRQ's number
    bool tx = false;     // kQueue: a TX queue
    int cpu = -1;        // kGovernor: the CPU
    bool operator==(const KnobKey& o) const {
        return std::tie(family, device, name, queue, tx, cpu) == std::tie(o.family, o.device, o.name, o.queue, o.tx, o.cpu);
    }
};

}  // namespace rxtune
