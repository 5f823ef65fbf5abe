// prepare: snapshot the host for a profile (its extra sysctls, its cgroup) and plan it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "inventory/snapshot.hpp"
#include "sys/clock.hpp"
#include "core/services.hpp"
#include "inventory/softnet.hpp"
#include "planner/auto_steer.hpp"
#include "planner/planner.hpp"
#include "profile/profile.hpp"

namespace rxtune {

// steering: mode: auto: what the measurement decided (interface -> targets; absent or empty: off)
// and why (plan --explain).
struct AutoInputs {
    std::map<std::string, CpuSet> targets;
    std::map<std::string, SteeringMode> modes;  // kRps or kXdp; absent: kRps
    std::map<std::string, std::vector<std::string>> explain;
};

struct Prepared {
    HostSnapshot snapshot;
    Plan plan;
};

// What a plan is asked for beyond the profile.
struct PlanRequest {
    // An explicit list wins over the profile's match; with skipMissing, names that are not there
    // (yet) are left out instead of being an error, as the daemon waits for them to appear.
    std::vector<std::string> interfaces;
    bool skipMissing = false;
    // What the families' reads work through (the XDP steering rxtune has on each device, for mode
    // xdp); a family refuses where what it needs is missing.
    Services services;
    const AutoInputs* autoIn = nullptr;  // the daemon's mode auto decisions
    bool explain = false;                // plan --explain
    // The devices an event named: only these are read (the gone ones left out), and which of them
    // are planned is still up to `interfaces` or the profile's match; the host-wide settings are
    // planned as ever. Null: every device.
    const std::vector<std::string>* scope = nullptr;
    PlanMemory memory;  // the daemon's, from its earlier runs
};

Result<Prepared> preparePlan(const Profile& profile, const FileTree& fs, NetlinkSource& nl, const PlanRequest& req = {});

// The cgroup cpuset a profile's `steering.cpus: cgroup:<path>` names, put into opts; a missing
// cgroup is an error located at that key.
Result<void> addCgroupCpus(const Profile& profile, const FileTree& fs, const Topology& host, PlanOptions& opts);

// mode auto's raw counters now: /proc/stat, softnet drops and squeezes, the stack's delivered and
// lost counters, each NIC's RX packets (from snap). The daemon adds BPF NET_RX time where it has it.
Result<AutoRaw> readAutoRaw(const FileTree& fs, const HostSnapshot& snap);

// This network namespace's stack counters (StackCounters); nullopt where procfs has no snmp.
Result<std::optional<StackCounters>> readStackCounters(const FileTree& fs);

// Mode auto's candidates cut to what this kernel can put in place (availableCandidates: a busy-poll
// only where napi-set's policy takes it), in the profile itself, so that neither the daemon nor a
// one-shot command plans a trial that changes nothing. Returns what was left out and why, or "".
std::string keepAvailableCandidates(Profile& profile, NetlinkSource& nl, const FileTree& fs);

// The one-shot commands' auto decision: one look over the interval between two raw readings, per
// interface of the plan; no trial (the daemon does that), said in the explanation.
Result<AutoInputs> decideAutoOnce(const Profile& profile, const FileTree& fs, const HostSnapshot& snap, const std::vector<std::string>& interfaces,
                                  const AutoRaw& before, const AutoRaw& after);

}  // namespace rxtune
