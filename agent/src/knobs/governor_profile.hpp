// cpu.governor: the governor family's profile key (the first of its names the CPUs offer wins).
#pragma once

#include <string>
#include <vector>

#include "profile/profile.hpp"

namespace rxtune {

struct GovernorIntent {
    std::vector<std::string> names;  // in order of preference
    Location where;
};
inline constexpr Slot<GovernorIntent> kGovernorSection{"cpu.governor"};

// What the profile asks; null where it leaves the governor alone.
inline const GovernorIntent* governorOf(const Profile& p) { return p.section(kGovernorSection); }

}  // namespace rxtune
