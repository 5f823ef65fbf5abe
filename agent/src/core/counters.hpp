// Value types of the per-CPU and per-namespace receive counters (parsed in inventory/).
#pragma once

#include <cstdint>

namespace rxtune {

// One CPU's row of softnet_stat. Counters are the kernel's 32-bit values (they wrap).
struct SoftnetRow {
    std::uint32_t processed = 0, dropped = 0, timeSqueeze = 0, receivedRps = 0, flowLimitCount = 0;
    std::uint32_t backlogLen = 0;
};

// Per-CPU jiffies from /proc/stat: busy (all but idle and iowait), total, softirq.
struct CpuJiffies {
    std::uint64_t busy = 0, total = 0, softirq = 0;
};

// Totals since boot (or since the namespace was made), both monotonic.
struct StackCounters {
    // Reached the end of the receive path: TCP segments in, UDP datagrams read by an application,
    // UDP datagrams for a port nobody listens on (the stack finished its work on them), and
    // forwarded packets; IPv4 and IPv6.
    std::uint64_t delivered = 0;
    // Lost on the way: UDP receive errors (full socket buffers), TCP backlog and listen-queue
    // drops, IP input discards. Softnet backlog drops are per CPU and host-wide: added by the caller.
    std::uint64_t lost = 0;
};
}  // namespace rxtune
