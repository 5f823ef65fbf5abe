// Value types describing the host: CPUs, NUMA, cpusets, governors and managed sysctls.
#pragma once

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

struct Topology {
    CpuSet online, possible, isolated, nohzFull;
    std::map<unsigned, CpuSet> smtSiblings;  // cpu -> its thread siblings (itself included)
    std::map<unsigned, CpuSet> numaNodes;    // node -> cpus
    std::string cgroupVersion;               // "v2", "v1" or "none"
    std::string cgroupPath;                  // rxtune's own cgroup
    CpuSet cgroupCpus;                       // its effective cpuset; online CPUs when unrestricted
    std::string cgroupCpusSource;            // the file it was read from, or "online"
    std::string cgroupRoot;                  // FileTree path of the cpuset hierarchy's mount
    bool cpufreq = false;
    std::map<unsigned, std::string> governors;  // cpu -> scaling_governor
    std::vector<std::string> availableGovernors;
    bool initialNetns = true;
    std::vector<SysctlValue> sysctls;
};

}  // namespace rxtune
