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
    // Big and little cores. capacity: cpu -> the kernel's cpu_capacity (arm64, riscv: 1024 for the
    // biggest core at its highest frequency, from the device tree's capacity-dmips-mhz or ACPI);
    // coreType: cpu -> "core" or "atom" on x86 hybrid parts (the PMUs' /sys/devices/cpu_core/cpus and
    // cpu_atom/cpus). Both empty: the kernel says nothing, and every CPU is taken as alike.
    std::map<unsigned, unsigned> capacity;
    std::map<unsigned, std::string> coreType;
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

// The online CPUs by what a core can do, biggest first: by cpu_capacity where the kernel gives it
// (CPUs without one take the smallest), else by core type (core before atom). One class when
// neither tells them apart. name: "big", "little", and "middle" between them.
struct CpuClass {
    std::string name;
    CpuSet cpus;
    unsigned capacity = 0;  // 0: not given (x86 hybrid, or a uniform host)
    std::string coreType;   // "core", "atom" or ""
};
std::vector<CpuClass> cpuClasses(const Topology& t);

// The CPUs of `among` in the biggest class that has any of them; `among` itself where the host's
// CPUs are alike.
CpuSet biggestOf(const Topology& t, const CpuSet& among);

// "capacity 1024", "core type atom", or "" (alike), for plan --explain and detect.
std::string describeCapacity(const Topology& t, unsigned cpu);

}  // namespace rxtune
