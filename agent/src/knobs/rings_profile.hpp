// nic.rings: the rings family's profile key (a size per ring, unset where the profile leaves it).
#pragma once

#include <cstdint>
#include <optional>

#include "profile/profile.hpp"

namespace rxtune {

struct RingSize {
    bool max = false;                // "max": the driver's maximum
    std::optional<std::uint32_t> n;  // a number of descriptors
    bool set() const { return max || n.has_value(); }
};
struct RingsIntent {
    RingSize rx, tx;
    Location where;
};
inline constexpr Slot<RingsIntent> kRingsSection{"nic.rings"};

inline const RingsIntent& ringsIntentOf(const Profile& p) { return p.sectionOr(kRingsSection); }

}  // namespace rxtune
