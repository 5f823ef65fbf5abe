// Profile: the validated, merged tuning intent loaded from YAML (the only module that knows YAML).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpuset.hpp"
#include "core/nic.hpp"
#include "core/result.hpp"
#include "core/slots.hpp"

namespace rxtune {

struct Location {
    std::string file;
    unsigned line = 0, col = 0;  // 1-based
    // "file:line:col"; the file alone for what has no position (an empty file).
    std::string str() const { return line == 0 ? file : file + ":" + std::to_string(line) + ":" + std::to_string(col); }
};

// An error about a profile value: "file:line:col: key: what".
inline Error profileError(const Location& where, const std::string& key, const std::string& what) {
    return Error{EINVAL, where.str() + ": " + key, "", what, {}};
}

enum class SteeringMode { kRps, kXdp, kNone, kAuto, kNapi, kBusyPoll };

// Every steering mode and its name, in the order the docs give them: the one place a mode's name
// is spelled (the loader parses by it, toString prints it).
struct SteeringModeName {
    SteeringMode mode;
    const char* name;
};
inline constexpr SteeringModeName kSteeringModes[] = {{SteeringMode::kRps, "rps"},
                                                      {SteeringMode::kXdp, "xdp"},
                                                      {SteeringMode::kNapi, "napi"},
                                                      {SteeringMode::kBusyPoll, "busypoll"},
                                                      {SteeringMode::kAuto, "auto"},
                                                      {SteeringMode::kNone, "none"}};
// The mode of that name; nullopt for none of them.
std::optional<SteeringMode> steeringModeOf(std::string_view name);
// What mode auto can try (steering.auto.candidates).
inline bool isAutoCandidate(SteeringMode m) {
    return m == SteeringMode::kRps || m == SteeringMode::kXdp || m == SteeringMode::kNapi || m == SteeringMode::kBusyPoll;
}

// steering.auto: when mode auto steers, which ways it tries, how it judges them, and when it undoes.
struct AutoThresholds {
    // receive CPU's NET_RX softirq time share that counts as saturated... A candidate is tried, measured
    // and undone when it does not beat none, so the trigger can be permissive: at 40 % a receive CPU
    // freed of that work could do up to 1.67x. (60 % left a 2x RPS win on the table: a sender on the
    // same CPU takes the other half.)
    double onRxShare = 0.40;
    double busyOn = 0.90;         // ...when that CPU is also at least this busy overall
    double minSpare = 0.25;       // a target needs at least this idle share
    double worseMargin = 0.05;    // delivered packets/s this much lower after a change = worse
    double gainMargin = 0.05;     // a candidate is kept only if it delivers this much more than none
    std::vector<SteeringMode> candidates{SteeringMode::kRps, SteeringMode::kXdp};  // tried in this order
    double sustainSeconds = 2;    // saturation (or a kept choice's shortfall) this long before acting
    double intervalSeconds = 0.25;  // the daemon's own clock for mode auto's samples
    double windowSeconds = 15;    // the longest a trial is measured; it ends once its result is clear
    double backoffSeconds = 300;  // hold-off after an undo
};
const char* toString(SteeringMode m);

struct CpuChoice {
    enum class Kind { kAll, kNumaLocal, kList, kCgroup, kBig };
    Kind kind = Kind::kAll;
    CpuSet list;             // kList
    std::string cgroupPath;  // kCgroup: a cgroup v2 (or v1 cpuset) path such as /system.slice/nginx.service
    Location where;
    std::string str() const;
};

struct Steering {
    SteeringMode mode = SteeringMode::kRps;
    CpuChoice cpus;
    bool excludeIsolated = true;   // isolated and nohz_full CPUs
    bool excludeIrqCpus = false;   // CPUs serving the device's RX IRQs, and their SMT siblings
    std::uint32_t flowEntries = 32768;  // 0 disables RFS; rounded up to a power of two
    bool xps = true;
    bool defaultMask = true;  // net.core.rps_default_mask for devices created later
    bool xdpNative = false;   // mode xdp: attach in the driver (native) instead of generic (skb) mode
    std::uint32_t xdpQsize = 2048;  // cpumap queue size per target CPU
    AutoThresholds autoThresholds;  // mode auto
};
// The profile runs the receive poll in NAPI kthreads: mode napi or busypoll, or auto with either
// among its candidates (what reads each device's NAPI state, its kthreads and their CPU time).
inline bool runsNapiKthreads(const Steering& s) {
    const auto kthread = [](SteeringMode m) { return m == SteeringMode::kNapi || m == SteeringMode::kBusyPoll; };
    if (kthread(s.mode)) return true;
    if (s.mode != SteeringMode::kAuto) return false;
    for (SteeringMode m : s.autoThresholds.candidates)
        if (kthread(m)) return true;
    return false;
}

struct Match {
    std::vector<std::string> interfaces;  // name globs; empty = any
    std::vector<std::string> drivers;     // empty = any
    std::optional<Verdict> verdict;       // nullopt = any
    bool includeVirtual = false;
};

struct Profile {
    std::string name;
    std::string description;
    std::vector<std::string> files;  // every file that contributed, root first
    std::string digest;              // of every file's text, in load order (core/digest.hpp)
    Match match;
    Steering steering;
    bool recommendDatapath = false;  // datapath.recommend: advise rxtune-dp for single-queue NICs
    // The families' own keys (profile/section.hpp), by their path ("nic.coalesce"); absent: unset.
    // Each family declares its section's slot (its path and its type) beside the type.
    Slots sections;

    // A family's value of its section, or null where the profile does not set it.
    template <class T>
    const T* section(Slot<T> slot) const {
        return sections.get(slot);
    }
    // The same, or T's default (what the family does where the profile is silent).
    template <class T>
    const T& sectionOr(Slot<T> slot) const {
        static const T unset;
        const T* v = section(slot);
        return v ? *v : unset;
    }
};

// Directories searched for a profile given by name, in order.
std::vector<std::string> profileSearchPath();
// A profile is named by a path (it has a '/' or ends in .yaml) or by a name looked up in the
// search path.
bool isProfilePath(const std::string& nameOrPath);

// name ("single-queue-gateway") or path ("./x.yaml"); includes resolved, validated, merged.
Result<Profile> loadProfile(const std::string& nameOrPath, const std::vector<std::string>& searchPath);
// Same, from text (for tests and the fuzzer); includes resolve against searchPath.
Result<Profile> loadProfileText(const std::string& text, const std::string& fileName,
                                const std::vector<std::string>& searchPath);

}  // namespace rxtune
