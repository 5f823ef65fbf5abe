// steering.busypoll: how steering mode busypoll polls (knobs/napi_family.cpp, planner/planner.cpp).
//   busypoll:
//     cpus: 3        the CPU(s) the RX NAPIs' kthreads poll on, one per RX NAPI in queue order
//                    (rx-0 the lowest); named, an isolated CPU is taken. Absent: chosen from the
//                    steering targets (the biggest cores, the highest-numbered first).
//     fanout: rps    RPS from the poll CPU to the other targets; none (the default): the poll CPU
//                    takes the whole stack's receive work, as a DPDK poll-mode core would.
#pragma once

#include <optional>

#include "core/cpuset.hpp"
#include "profile/profile.hpp"

namespace rxtune {

struct BusyPollIntent {
    std::optional<CpuSet> cpus;
    bool rpsFanout = false;
    Location where;       // of the section
    Location cpusWhere;   // of cpus
};

inline constexpr Slot<BusyPollIntent> kBusyPoll{"steering.busypoll"};

}  // namespace rxtune
