// rxtune-dp configuration: a YAML file (validated like rxtune's profiles: file:line:col and the key)
// with command-line overrides, then one validation pass against the CPUs this process may use.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpuset.hpp"
#include "core/result.hpp"

namespace rxtune::dp {

// How workers share the NIC's one TX queue: under a spinlock (the default: in every run of
// bench/datapath_bench.sh it held 35-72 Mpps, where the ring drained by the RX core ranged 6-47),
// or through a multi-producer ring that the RX core drains.
enum class TxMode { kRing, kLock };
// The kernel side: virtio-user over vhost-net (no system call per packet on our side) where the
// host has it, else the TAP PMD (a readv/writev per packet); auto picks.
enum class TapBackend { kAuto, kTap, kVirtioUser };

// Whether the RX core prefetches for ownership (PREFETCHW) the mbufs its next receive will take,
// which a worker on another CPU read last. In bench/datapath_bench.sh it gained 4-21 % where the two
// CPUs' cache-line round trip was ~450 ns and cost 3-7 % where it was ~100 ns: auto turns it on when
// a worker does not share the RX core's last-level cache (sysfs cacheinfo).
enum class Prefetch { kAuto, kOn, kOff };

struct DpConfig {
    std::string file;                      // where it came from; empty for command line only
    std::vector<std::string> eal;          // extra EAL arguments, e.g. --no-huge -m 256
    std::string filePrefix = "rxtune-dp";  // EAL --file-prefix: telemetry at /var/run/dpdk/<prefix>/
    std::string nic;                       // "net_af_packet0,iface=eth1" (a vdev) or "0000:03:00.0"
    bool fixChecksums = false;             // recompute TCP/UDP checksums of frames from the NIC
    std::optional<unsigned> rxCpu;         // default: the first CPU we may use
    std::vector<unsigned> workerCpus;      // one worker (and one TAP queue) per entry
    std::vector<unsigned> weights;         // share of flows per worker; default all 1
    std::string tapName = "rxdp0";
    std::string tapMac;                    // default: derived from tapName (stable across restarts)
    std::vector<std::string> tapAddresses; // CIDR, set on the TAP after it comes up
    // A DPDK vdev used instead of the TAP as the kernel side, with one queue pair per worker:
    // virtio_user...,path=/dev/vhost-net,queues=N (where the host has vhost-net), or net_null
    // for benchmarks. Addresses and MTU are then the device's business; tap.name labels stats.
    std::string exceptionDevice;
    TapBackend tapBackend = TapBackend::kAuto;
    std::string vhostNet = "/dev/vhost-net";  // the vhost-net device virtio-user opens
    unsigned mtu = 0;                      // 0: the NIC interface's MTU (af_packet/af_xdp), else 1500
    unsigned ringSize = 1024;              // per worker ring and the shared TX ring; power of two
    unsigned burst = 32;
    unsigned mbufs = 0;                    // 0: sized from queues and rings
    unsigned retaSize = 128;
    TxMode txMode = TxMode::kLock;
    unsigned idleSleepUs = 0;              // 0: busy poll; else sleep this long after idle polls
    Prefetch prefetchNextMbufs = Prefetch::kAuto;
};

struct PrefetchChoice {
    bool on = false;
    std::string why;
};

Result<DpConfig> parseDpConfig(const std::string& text, const std::string& file);
Result<DpConfig> loadDpConfig(const std::string& path);

// Checks what parsing cannot: counts, power-of-two sizes, names, and that every CPU is one this
// process may run on (sched_getaffinity: the cpuset, not the CPU count). Fills defaults.
Result<void> validateDpConfig(DpConfig& c, const CpuSet& allowed);

// The exception path chosen: what EAL is given, and why, for the log, telemetry and metrics.
struct ExceptionPath {
    std::string kind;  // "tap", "virtio-user", or "device" (tap.device names a vdev)
    std::string vdev;  // the EAL --vdev argument
    std::string port;  // its DPDK port name
    std::string why;
};
// vhostProbe: whether c.vhostNet can serve virtio-user (sys/vhost_net's probe), asked only where
// the choice depends on it. tap.backend virtio-user without a usable vhost-net is an error; auto
// falls back to the TAP and says why.
Result<ExceptionPath> chooseExceptionPath(const DpConfig& c, const std::function<Result<void>()>& vhostProbe);

// The worker CPUs outside the RX core's last-level cache (rxLlc: the CPUs sharing it, from
// sysfs cacheinfo; empty when unknown, and then none is reported). Every mbuf goes from the RX core
// to its worker and back, so a worker across caches makes the RX core pay a cross-cache transfer
// per packet: about twice its cycles per packet in bench/datapath_bench.sh.
CpuSet workersAcrossLlc(const DpConfig& c, const CpuSet& rxLlc);
std::string acrossLlcWarning(const DpConfig& c, const CpuSet& rxLlc);  // empty when there are none

// prefetch_next_mbufs resolved against this host: the RX core's last-level cache (empty: unknown)
// and whether the CPU has PREFETCHW (without it, the prefetch would be a read, which does nothing here).
std::optional<Prefetch> parsePrefetch(std::string_view v);  // auto, on/true, off/false
PrefetchChoice choosePrefetch(const DpConfig& c, const CpuSet& rxLlc, bool cpuHasPrefetchw);
bool cpuHasPrefetchw();  // a prefetch for writing: CPUID 0x80000001 ECX bit 8 on x86-64; PRFM PSTL1KEEP on arm64 (always); false elsewhere

Result<std::array<uint8_t, 6>> parseMac(const std::string& text);
std::string stableMac(const std::string& name);  // 02:xx:..: locally administered, from the name

// The interface behind an af_packet / af_xdp vdev ("net_af_packet0,iface=veth0" -> "veth0").
std::optional<std::string> kernelInterfaceOf(const std::string& device);
// "net_af_packet0,iface=x" -> "net_af_packet0"; a PCI address stays as it is.
std::string portNameOf(const std::string& device);
bool isVdev(const std::string& device);

}  // namespace rxtune::dp
