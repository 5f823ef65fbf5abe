// Per-lcore counters of rxtune-dp. Each block is written by one lcore only (relaxed load+store, no
// locked instruction) and read by the telemetry thread; alignas(64) keeps lcores off each other's
// cache lines.
#pragma once

#include <atomic>
#include <cstdint>

#include "fanout.hpp"

namespace rxtune::dp {

using Counter = std::atomic<uint64_t>;

inline void bump(Counter& c, uint64_t n) { c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
inline uint64_t get(const Counter& c) { return c.load(std::memory_order_relaxed); }

struct alignas(64) RxStats {            // the RX core
    Counter packets{0}, bytes{0};         // taken from the NIC's RX queue
    Counter nonIp{0};                     // of those, frames without a flow (to worker 0)
    Counter busyCycles{0};                // TSC cycles spent on polls that found work
    Counter nicTxPackets{0}, nicTxBytes{0}, nicTxDropped{0};  // replies sent from the TX ring
    Counter dispatched[kMaxWorkers]{};    // enqueued to worker i's ring
    Counter ringFull[kMaxWorkers]{};      // dropped because worker i's ring was full
};

struct alignas(64) WorkerStats {        // worker i
    Counter toTapPackets{0}, toTapBytes{0}, toTapDropped{0};  // ring -> TAP queue i
    Counter fromTapPackets{0}, fromTapBytes{0};              // TAP queue i -> NIC (replies)
    Counter toNic{0}, toNicDropped{0};    // replies handed on (TX ring or locked TX) / dropped there
    Counter checksumsFixed{0};
    Counter busyCycles{0};
};

}  // namespace rxtune::dp
