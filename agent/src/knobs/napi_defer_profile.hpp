// nic.gro_flush_timeout / nic.napi_defer_hard_irqs: the NAPI deferral family's profile keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "profile/profile.hpp"

namespace rxtune {

inline constexpr std::string_view kGroFlushTimeout = "gro_flush_timeout";
inline constexpr std::string_view kNapiDeferHardIrqs = "napi_defer_hard_irqs";

// One number each, where it stands in the profile.
struct DeferValue {
    std::uint64_t value = 0;
    Location where;
};

// The profile's value of nic.<key>; null where it does not set it.
inline const DeferValue* deferValueOf(const Profile& p, std::string_view key) {
    return p.section<DeferValue>("nic." + std::string(key));
}

}  // namespace rxtune
