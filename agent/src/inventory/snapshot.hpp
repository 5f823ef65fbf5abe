// Inventory: FileTree + Netlink -> HostSnapshot (topology, sysctls and every NIC). Read-only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/host_snapshot.hpp"
#include "inventory/interrupts.hpp"
#include "inventory/softnet.hpp"
#include "sys/file_tree.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

Result<Topology> readTopology(const FileTree& fs);
// /proc/stat's per-CPU jiffies, and /proc/net/softnet_stat's rows by CPU (rows map to the online
// CPUs on kernels that do not number them), read and parsed; errors name the file.
Result<std::map<unsigned, CpuJiffies>> readProcStat(const FileTree& fs);
Result<std::map<unsigned, SoftnetRow>> readSoftnetStat(const FileTree& fs, const std::vector<unsigned>& onlineCpus);
// snap.softnet from /proc/net/softnet_stat where it is not read yet and the file is there (for a
// family's advice about the CPUs that take a device's IRQ).
Result<void> readSoftnetInto(const FileTree& fs, HostSnapshot& snap);
// The CPUs that share `cpu`'s last-level cache (the highest data or unified cache level in
// sys/devices/system/cpu/cpuN/cache), itself included; empty where sysfs has no cache information.
Result<CpuSet> readLlc(const FileTree& fs, unsigned cpu);
// Effective cpuset of another cgroup (a profile's "cgroup:/system.slice/nginx.service").
Result<CpuSet> cgroupCpus(const FileTree& fs, const Topology& t, const std::string& cgroupPath);
// A cgroup's CPU bandwidth limit (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us), the
// tightest along its path up to the root; unlimited where no level limits it.
Result<CpuQuota> cgroupQuota(const FileTree& fs, const Topology& t, const std::string& cgroupPath);
// Reads sysctls a profile names beyond the managed set into t.sysctls (absent ones marked so).
Result<void> addSysctls(const FileTree& fs, Topology& t, const std::vector<std::string>& keys);

// only: interface names to include (validated); empty = all. A name that is not there is an
// error, or with skipMissing left out (the daemon waits for devices to appear).
Result<std::vector<Nic>> readNics(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only,
                                  bool skipMissing = false);

// The device's NAPI settings as sysfs shows them (absent: the kernel has no such file), and its
// NAPI instances (read only where a plan or detect needs them).
struct NapiState {
    std::optional<std::string> threaded;      // sysfs "threaded" ("0", "1")
    std::optional<std::string> groFlushTimeout, deferHardIrqs;  // sysfs, as read
    std::vector<NapiInfo> instances;
    std::string source;  // "netdev-genl", "proc" (kthread names), or "" (none found)
    NapiFeatures features;               // what this kernel's napi-set takes (the same for every device)
    std::optional<std::vector<NapiQueue>> queues;  // queue-get's answer, where the kernel has it
    // The device has NAPI that napi-get does not list: a TAP/TUN opened with IFF_NAPI (its NAPI is
    // added as a TX one, with no id), seen in tun_flags. Its kthread, once threaded, is napi/DEV-0.
    bool unlisted = false;
    std::string kernel;  // proc/sys/kernel/osrelease ("" where absent), for what the features need
};

// The device's NAPI settings (sysfs threaded, gro_flush_timeout, napi_defer_hard_irqs) and its
// NAPI instances with their kthreads' CPUs, into its facts ("napi"), shared by the NAPI and the
// deferral families: read only where a plan or detect asks (once).
Result<void> readNapiState(const FileTree& fs, NetlinkSource& nl, Nic& nic);
// What readNapiState found; null where it was not read.
inline constexpr Slot<NapiState> kNapiFacts{"napi"};
inline const NapiState* napiOf(const Nic& n) { return n.fact(kNapiFacts); }

// /proc/net/softnet_stat's drops and squeezes by CPU (since boot), a host fact ("softnet") read by
// the families that advise from it (rings, coalescing).
struct SoftnetCounts {
    std::uint64_t dropped = 0, squeezed = 0;
};
using SoftnetByCpu = std::map<unsigned, SoftnetCounts>;
inline constexpr Slot<SoftnetByCpu> kSoftnetFacts{"softnet"};
inline const SoftnetByCpu* softnetOf(const HostSnapshot& s) { return s.fact(kSoftnetFacts); }

Result<HostSnapshot> takeSnapshot(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only,
                                  bool skipMissing = false);

}  // namespace rxtune
