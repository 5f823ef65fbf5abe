// steering.busypoll: how steering mode busypoll polls (knobs/napi_family.cpp, planner/planner.cpp).
//   busypoll:
//     cpus: 3        the CPU(s) the RX NAPIs' kthreads poll on, one per RX NAPI in queue order
//                    (rx-0 the lowest); named, an isolated CPU is taken. Absent: chosen from the
//                    steering targets (the biggest cores, the highest-numbered first), never
//                    the CPU of an application's busy thread pinned there (kPinnedBusyThreads).
//     fanout: rps    RPS from the poll CPU to the other targets; none (the default): the poll CPU
//                    takes the whole stack's receive work, as a DPDK poll-mode core would.
//     tx: threaded   each TX-only NAPI (virtio-net's tx-0) threaded too, its kthread pinned to the
//                    poll CPU of the RX NAPI of its index (the last one's past them), so that TX
//                    completions run beside the poll; leave (the default): the TX NAPIs as they are.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "core/cpuset.hpp"
#include "profile/profile.hpp"
#include "sys/napi_threads.hpp"

namespace rxtune {

struct BusyPollIntent {
    std::optional<CpuSet> cpus;
    bool rpsFanout = false;
    bool txThreaded = false;
    Location where;       // of the section
    Location cpusWhere;   // of cpus
};

inline constexpr Slot<BusyPollIntent> kBusyPoll{"steering.busypoll"};

// The applications' threads pinned to one CPU that keep it busy (sys/napi_threads.hpp), a host fact
// the NAPI family reads where busy-poll chooses its CPU itself (and for detect): the planner keeps
// the poll off their CPUs.
using PinnedBusyThreads = std::vector<PinnedBusyThread>;
inline constexpr Slot<PinnedBusyThreads> kPinnedBusyThreads{"pinned_busy_threads"};
// Whether a plan under this profile may choose a poll CPU itself: busypoll (or auto with it a
// candidate) without steering.busypoll.cpus.
inline bool choosesPollCpu(const Profile& profile) {
    const auto& s = profile.steering;
    const bool busy = s.mode == SteeringMode::kBusyPoll ||
                      (s.mode == SteeringMode::kAuto && std::find(s.autoThresholds.candidates.begin(), s.autoThresholds.candidates.end(),
                                                                  SteeringMode::kBusyPoll) != s.autoThresholds.candidates.end());
    return busy && !profile.sectionOr(kBusyPoll).cpus;
}

}  // namespace rxtune
