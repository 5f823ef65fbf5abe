// nic.gro_flush_timeout / napi_defer_hard_irqs / irq_suspend_timeout: the NAPI deferral family's profile keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "profile/profile.hpp"

namespace rxtune {

// One number each, where it stands in the profile.
struct DeferValue {
    std::uint64_t value = 0;
    Location where;
};

// Each is the napi-set attribute (and the first two the sysfs file) of the same name (after "nic.").
inline constexpr Slot<DeferValue> kGroFlushTimeout{"nic.gro_flush_timeout"};
inline constexpr Slot<DeferValue> kNapiDeferHardIrqs{"nic.napi_defer_hard_irqs"};
// Per NAPI only (netdev napi-set, 6.13+): there is no sysfs file of it.
inline constexpr Slot<DeferValue> kIrqSuspendTimeout{"nic.irq_suspend_timeout"};

// The attribute a section sets: "gro_flush_timeout".
inline std::string_view deferAttribute(Slot<DeferValue> s) { return s.name.substr(s.name.find('.') + 1); }

// The profile's value of the section; null where it does not set it.
inline const DeferValue* deferValueOf(const Profile& p, Slot<DeferValue> s) { return p.section(s); }

}  // namespace rxtune
