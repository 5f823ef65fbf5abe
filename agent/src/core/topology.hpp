// Value types describing the host: CPUs, NUMA, cpusets, governors and managed sysctls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cpuset.hpp"

namespace rxtune {

// A sysctl rxtune manages, and whether it exists only in the initial network namespace.
struct SysctlSpec {
    const char* key;
    bool hostGlobal;
};
const std::vector<SysctlSpec>& managedSysctls();

struct SysctlValue {
    std::string key;
    bool hostGlobal = false;
    bool present = false;  // absent: a host-global knob inside a non-initial netns, or an older kernel
    bool writable = true;  // false: shown read-only here (rmem_max inside a non-initial netns)
    std::string value;     // whitespace-normalised ("4096 131072 6291456")
};

// A cgroup's CPU bandwidth limit: containers limit CPU time, not CPU count, so a cpuset of 16 CPUs
// may come with the time of 2.
struct CpuQuota {
    bool limited = false;
    double cpus = 0;                          // quota / period: CPUs' worth of time per period
    std::int64_t quotaUs = -1, periodUs = 0;  // the tightest level's values (-1: unlimited)
    std::string source;                       // the file it was read from ("" when unlimited everywhere)
};

// "0.50 CPUs' worth of time (50000/100000 us, <file>)", and whether that is far below the cpuset.
std::string describe(const CpuQuota& q, unsigned cpusetCpus);

struct Topology {
    CpuSet online, possible, isolated, nohzFull;
    std::map<unsigned, CpuSet> smtSiblings;  // cpu -> its thread siblings (itself included)
    std::map<unsigned, CpuSet> numaNodes;    // node -> cpus
    std::map<unsigned, CpuSet> llc;          // cpu -> the CPUs sharing its last-level cache; absent without cacheinfo
    std::string cgroupVersion;               // "v2", "v1" or "none"
    std::string cgroupPath;                  // rxtune's own cgroup
    CpuSet cgroupCpus;                       // its effective cpuset; online CPUs when unrestricted
    std::string cgroupCpusSource;            // the file it was read from, or "online"
    std::string cgroupRoot;                  // FileTree path of the cpuset hierarchy's mount
    std::string cgroupCpuRoot;               // ... and of the cpu (bandwidth) controller's (v2: the same)
    std::string cgroupCpuPath;               // rxtune's cgroup in the cpu controller's hierarchy
    CpuQuota cgroupQuota;                    // its CPU bandwidth limit, the tightest along its path
    bool cpufreq = false;
    std::map<unsigned, std::string> governors;  // cpu -> scaling_governor
    std::vector<std::string> availableGovernors;
    bool initialNetns = true;
    std::vector<SysctlValue> sysctls;
};

}  // namespace rxtune
