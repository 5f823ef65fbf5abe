// Planner: pure function (Profile, HostSnapshot) -> Plan, in a deterministic order.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/setting.hpp"
#include "core/host_snapshot.hpp"
#include "knobs/plan_input.hpp"
#include "profile/profile.hpp"

namespace rxtune {

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
