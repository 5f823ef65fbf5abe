// sysctl: the sysctl family's profile keys (net.* and vm.* names to values).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profile/profile.hpp"

namespace rxtune {

enum class Guard { kSet, kAtLeast, kAtMost };

struct SysctlIntent {
    std::string key;
    Guard guard = Guard::kSet;
    std::vector<std::int64_t> values;  // one number, or three for tcp_rmem/tcp_wmem style knobs
    Location where;
};

// The profile's sysctl mapping, merged per key over its includes.
using SysctlIntents = std::map<std::string, SysctlIntent>;
inline constexpr Slot<SysctlIntents> kSysctlSection{"sysctl"};

// The sysctls a profile sets; empty where it sets none.
inline const SysctlIntents& sysctlsOf(const Profile& p) { return p.sectionOr(kSysctlSection); }

}  // namespace rxtune
