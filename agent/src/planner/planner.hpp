// Planner: pure function (Profile, HostSnapshot) -> Plan, in a deterministic order.
#pragma once

#include <any>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/setting.hpp"
#include "core/host_snapshot.hpp"
#include "profile/profile.hpp"

namespace rxtune {

// What the daemon carries from its earlier runs into a plan (the one-shot commands have none).
struct PlanMemory {
    // What each family lends its planning from its earlier runs (KnobFamily::beforePlan), by the
    // family's name; only that family knows the type.
    std::map<std::string, std::any> families;
    // Settings (by id) the kernel refused at an earlier apply for a reason of the knob's own (a
    // managed IRQ): skipped, not planned again (the daemon forgets them when the device changes).
    const std::set<std::string>* refusedBefore = nullptr;
};

struct PlanOptions {
    std::vector<std::string> interfaces;          // explicit choice; wins over the profile's match
    bool explicitInterfaces = false;              // use `interfaces` even when it is empty
    std::map<std::string, CpuSet> cgroupCpus;     // effective cpuset of each cgroup the profile names
    std::map<std::string, CpuQuota> cgroupQuota;  // and its CPU bandwidth limit
    bool explain = false;                         // fill Plan::explanation (plan --explain)
    // steering: mode: auto: what the measurement decided per interface (absent or empty: off), and
    // why, one line per CPU and a verdict (for plan --explain).
    std::map<std::string, CpuSet> autoTargets;
    std::map<std::string, SteeringMode> autoModes;  // how (kRps or kXdp); absent: kRps
    std::map<std::string, std::vector<std::string>> autoExplain;
    PlanMemory memory;
};

// The CPUs a NIC's receive work is steered to, and the reasons CPUs were left out.
struct CpuTargets {
    CpuSet cpus;
    std::vector<std::string> notes;
};
Result<CpuTargets> steeringTargets(const Profile& profile, const Topology& host, const Nic* nic,
                                   const PlanOptions& opts);

bool matches(const Match& m, const Nic& nic);
// What can be told from a link event alone (its name and IFLA_INFO_KIND) without reading the
// device: false only where matches() is sure to say no (a name outside the globs, loopback, a
// virtual kind the profile leaves out). The daemon reads nothing for devices this rejects.
bool mayMatch(const Match& m, const std::string& name, const std::string& linkKind);

// The CPUs serving a device's receive interrupts (effective affinity where the kernel has it).
CpuSet irqCpus(const Nic& nic);

Result<Plan> plan(const Profile& profile, const HostSnapshot& snap, const PlanOptions& opts);

// What mode auto looks at for one NIC: its receive CPU (the RX IRQ's, else the CPU doing the most
// NET_RX work in the sample), that CPU's SMT siblings, and the profile's eligible CPUs.
struct AutoScope {
    unsigned rxCpu = 0;
    std::string rxCpuSource;  // "RX IRQ" or "busiest NET_RX CPU"
    CpuSet siblings, candidates;
    CpuSet biggest;  // the biggest cores among the candidates where they differ in size; empty where alike
};
struct AutoSample;
Result<AutoScope> autoScope(const Profile& profile, const Topology& host, const Nic& nic, const PlanOptions& opts,
                            const AutoSample& sample);

}  // namespace rxtune
