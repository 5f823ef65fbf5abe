// What a plan is asked with (the planner's options, the daemon's memory): what every family's
// planning sees beside the profile and the snapshot. Below the planner: the families include this,
// not planner.hpp, and the planner includes them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/cpuset.hpp"
#include "core/slots.hpp"
#include "core/topology.hpp"
#include "profile/profile.hpp"

namespace rxtune {

// What the daemon carries from its earlier runs into a plan (the one-shot commands have none).
struct PlanMemory {
    // What each family lends its planning from its earlier runs (KnobFamily::beforePlan), by the
    // family's own slot (core/slots.hpp); only that family knows the type.
    Slots families;
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

}  // namespace rxtune
