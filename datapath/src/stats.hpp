// Per-lcore counters of rxtune-dp. Each block is written by one lcore only (relaxed load+store, no
// locked instruction) and read by the telemetry thread; aligned to DPDK's cache line
// (RTE_CACHE_LINE_SIZE: 64 on x86-64, 128 in Debian's arm64 build, which covers the arm64 cores
// with 128-byte lines and the adjacent-line prefetch of the 64-byte ones) so that lcores stay off
// each other's lines.
#pragma once

#include <rte_build_config.h>

#include <atomic>
#include <cstdint>

#include "fanout.hpp"

namespace rxtune::dp {

using Counter = std::atomic<uint64_t>;

inline void bump(Counter& c, uint64_t n) { c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
inline uint64_t get(const Counter& c) { return c.load(std::memory_order_relaxed); }

struct alignas(RTE_CACHE_LINE_SIZE) RxStats {            // the RX core
    Counter packets{0}, bytes{0};         // taken from the NIC's RX queue
    Counter nonIp{0};                     // of those, frames without a flow (to worker 0)
    Counter busyCycles{0};                // TSC cycles spent on polls that found work
    Counter nicTxPackets{0}, nicTxBytes{0}, nicTxDropped{0};  // replies sent from the TX ring
    Counter dispatched[kMaxWorkers]{};    // enqueued to worker i's ring
    Counter ringFull[kMaxWorkers]{};      // dropped because worker i's ring was full
};

struct alignas(RTE_CACHE_LINE_SIZE) WorkerStats {        // worker i
    Counter toTapPackets{0}, toTapBytes{0}, toTapDropped{0};  // ring -> TAP queue i
    Counter fromTapPackets{0}, fromTapBytes{0};              // TAP queue i -> NIC (replies)
    Counter toNic{0}, toNicDropped{0};    // replies handed on (TX ring or locked TX) / dropped there
    Counter checksumsFixed{0};
    Counter busyCycles{0};
};

}  // namespace rxtune::dp
