// Value types describing one network interface as detect sees it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpuset.hpp"
#include "core/slots.hpp"

namespace rxtune {

struct Channels {
    bool supported = false;  // the driver answers channel queries at all
    std::string source;      // "ethtool-netlink" or "ioctl"
    std::string error;       // why not supported ("Operation not supported")
    std::uint32_t rx = 0, tx = 0, other = 0, combined = 0;
    std::uint32_t maxRx = 0, maxTx = 0, maxOther = 0, maxCombined = 0;

    // More RX channels than now could be had with ethtool -L.
    bool canRaise() const { return supported && (rx < maxRx || combined < maxCombined); }
};

struct DriverInfo {
    bool available = false;
    std::string driver, version, firmware, busInfo;
    std::string error;
};

struct RxQueue {
    unsigned index = 0;
    CpuSet rpsCpus;
    std::uint32_t rpsFlowCnt = 0;
    std::string rpsCpusRaw, rpsFlowCntRaw;  // the bytes as read: what a revert puts back
};

struct TxQueue {
    unsigned index = 0;
    std::optional<CpuSet> xpsCpus;  // absent when the kernel refuses to show it
    std::string xpsError;
    std::string xpsRaw;
};

struct Irq {
    unsigned number = 0;
    std::string name;  // action name from /proc/interrupts ("virtio0-input.0")
    std::string role;  // "rx", "tx", "rxtx" or "other", guessed from the name drivers give
    CpuSet affinity;   // smp_affinity_list
    std::optional<CpuSet> effective;  // effective_affinity_list where the kernel has it
    std::uint64_t total = 0;          // sum over CPUs from /proc/interrupts
};

// Drivers name queue IRQs "<x>-input.N", "<x>-rx-N", "<x>-TxRx-N", "mlx5_comp..."; guess the role.
std::string irqRole(const std::string& name);

// Interface counters from rtnetlink stats64.
struct LinkStats {
    std::uint64_t rxPackets = 0, rxBytes = 0, rxDropped = 0, rxErrors = 0;
    std::uint64_t rxMissed = 0;  // rx_missed_errors: where drivers count frames lost to a full ring
    std::uint64_t txPackets = 0, txBytes = 0, txDropped = 0, txErrors = 0;
};

// One NAPI instance of a device (netdev generic netlink napi-get, or a kthread found in /proc).
struct NapiInfo {
    unsigned id = 0;   // NAPI id; 0 where only the kthread's name was found
    int irq = -1;      // -1: none given
    int pid = 0;       // its kthread (threaded NAPI), 0: none
    std::optional<std::uint32_t> deferHardIrqs;    // per-NAPI values, where napi-get shows them
    std::optional<std::uint64_t> groFlushTimeout;  // ns
    std::optional<std::uint64_t> irqSuspendTimeout;  // ns (6.13+)
    std::optional<std::uint32_t> threaded;           // 0 disabled, 1 enabled, 2 busy-poll (6.17+)
    std::optional<CpuSet> affinity;                // the kthread's CPUs (/proc/<pid>/status)
    std::optional<double> cpuSeconds;              // the kthread's CPU time since it started (/proc/<pid>/stat)
};

// The netdev family's napi-threaded values (Documentation/netlink/specs/netdev.yaml).
inline constexpr std::uint32_t kNapiThreadedBusyPoll = 2;

// What this kernel's netdev napi-set takes, as its policy says (CTRL_CMD_GETPOLICY), not as a
// version number promises: per-NAPI deferral and irq-suspend-timeout came in 6.13, threaded per
// NAPI in 6.17, busy-poll (threaded's value 2) in 6.19.
struct NapiFeatures {
    bool napiSet = false;  // the request exists
    bool deferHardIrqs = false, groFlushTimeout = false, irqSuspendTimeout = false, threaded = false;
    std::uint32_t threadedMax = 0;  // the highest value the policy takes for threaded
    bool busyPoll() const { return threaded && threadedMax >= kNapiThreadedBusyPoll; }
};

// One queue of a device as netdev queue-get shows it, with the NAPI that serves it where the
// driver says (veth does not: its queues have no napi-id).
struct NapiQueue {
    unsigned id = 0;
    bool tx = false;
    std::optional<unsigned> napiId;
};

// What a napi-set carries: only the values given are set.
struct NapiSettings {
    std::optional<std::uint32_t> deferHardIrqs;
    std::optional<std::uint64_t> groFlushTimeout, irqSuspendTimeout;
    std::optional<std::uint32_t> threaded;
};

// How rxtune names a NAPI instance across device resets (its id changes, its queue does not): the
// NAPI that serves RX queue N is "rx-N" (TX queue N only: "tx-N"); where the kernel links no queue
// to it, "napi-N" is the N-th of the device's NAPIs in id order (the order they were added in).
struct NapiRole {
    enum Kind { kRx, kTx, kOrdinal } kind = kRx;
    unsigned index = 0;
    std::string str() const;
    auto operator<=>(const NapiRole&) const = default;
};
// "rx-0", "tx-1", "napi-2" (NapiRole::str()) -> the role; nullopt for anything else.
std::optional<NapiRole> parseNapiRole(std::string_view s);
// Each NAPI's role, in id order, from napi-get's instances (those with an id) and queue-get's queues.
std::vector<std::pair<NapiRole, const NapiInfo*>> napiRoles(const std::vector<NapiInfo>& napis,
                                                            const std::vector<NapiQueue>& queues);

enum class Verdict { kSingleQueue, kMultiQueue, kVirtual };
const char* toString(Verdict v);

struct Nic {
    std::string name;
    int ifindex = 0;
    std::string kind;       // physical, loopback, veth, tap, tun, bridge, or the rtnetlink kind
    std::string operstate;  // "up", "down", "unknown" ...
    std::uint32_t mtu = 0;
    std::optional<std::int64_t> speedMbps;
    std::uint32_t numRxQueues = 0, numTxQueues = 0;  // rtnetlink IFLA_NUM_{RX,TX}_QUEUES
    DriverInfo driver;
    Channels channels;
    std::vector<RxQueue> rx;  // sysfs queues/rx-*, the queues the kernel uses now
    std::vector<TxQueue> tx;
    std::vector<Irq> irqs;
    int numaNode = -1;  // -1: no NUMA affinity
    LinkStats stats;
    Verdict verdict = Verdict::kVirtual;
    // What a knob family read of the device for itself (knobs/, inventory/), by the family's name
    // ("napi": its NAPI state, "xdp": rxtune's XDP steering on it, "rings", "coalesce"); the
    // family declares the slot (the name and the type) beside the type (core/slots.hpp).
    Slots facts;

    // A family's fact of this device, or null where it read none.
    template <class T>
    const T* fact(Slot<T> slot) const {
        return facts.get(slot);
    }
};

// The CPUs serving a device's receive interrupts (effective affinity where the kernel has it).
CpuSet irqCpus(const Nic& nic);

// Whether the device's RX counter counts only frames the backlog accepted: veth and tun/tap hand
// frames to netif_rx and count after it; a NIC's driver counts before, drops included.
bool rxCountedAfterBacklog(const Nic& nic);

// single-queue: one RX queue and no way to get more; multi-queue: more now or raisable; virtual: no hardware.
Verdict classify(const Nic& nic);

}  // namespace rxtune
