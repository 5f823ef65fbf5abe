// rxtune-dp's counters, read from its DPDK telemetry socket (/rxtune_dp/stats). The parser is
// pure (unit-tested and fuzzed); the reader does the socket protocol.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace rxtune {

inline constexpr const char* kDefaultDatapathSocket = "/var/run/dpdk/rxtune-dp/dpdk_telemetry.v2";

struct DatapathWorker {
    unsigned queue = 0, cpu = 0, retaEntries = 0;
    uint64_t dispatched = 0, ringFull = 0, ringCount = 0;
    uint64_t toTapPackets = 0, toTapBytes = 0, toTapDropped = 0;
    uint64_t fromTapPackets = 0, fromTapBytes = 0, toNic = 0, toNicDropped = 0;
    uint64_t checksumsFixed = 0, busyCycles = 0;
};

struct DatapathStats {
    long pid = 0;  // from the socket's greeting; a new pid means the counters restarted
    std::string nic, tap, txMode;
    std::string flowHash, exceptionPath;  // "nic"/"software"; "tap"/"virtio-user"/"device"
    std::string prefetch;                 // prefetch_next_mbufs as resolved: "on"/"off"
    unsigned rxCpu = 0;
    uint64_t tscHz = 0, uptimeCycles = 0;
    uint64_t rxPackets = 0, rxBytes = 0, rxNonIp = 0, rxBusyCycles = 0;
    uint64_t nicTxPackets = 0, nicTxBytes = 0, nicTxDropped = 0;
    uint64_t mbufsInUse = 0, mbufsTotal = 0;
    std::map<std::string, uint64_t> nicPort, tapPort;  // rte_eth_stats: ipackets, imissed, ...
    std::vector<DatapathWorker> workers;
};

// The reply to "/rxtune_dp/stats": {"/rxtune_dp/stats": {...}}.
Result<DatapathStats> parseDatapathStats(std::string_view json);
// Connects (SOCK_SEQPACKET), reads the greeting, asks for /rxtune_dp/stats; timeout per step.
Result<DatapathStats> readDatapathTelemetry(const std::string& socketPath, int timeoutMs = 500);

}  // namespace rxtune
