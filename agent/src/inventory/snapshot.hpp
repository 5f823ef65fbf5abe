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

// The device's NAPI settings (sysfs threaded, gro_flush_timeout, napi_defer_hard_irqs) and its
// NAPI instances with their kthreads' CPUs: read only where a plan or detect asks.
Result<void> readNapiState(const FileTree& fs, NetlinkSource& nl, Nic& nic);

Result<HostSnapshot> takeSnapshot(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only,
                                  bool skipMissing = false);

}  // namespace rxtune
