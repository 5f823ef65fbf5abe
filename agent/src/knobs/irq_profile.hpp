// irq.cpus: the IRQ family's profile key (the CPU(s) of each matched device's RX IRQ(s)).
#pragma once

#include "core/cpuset.hpp"
#include "profile/profile.hpp"

namespace rxtune {

struct IrqIntent {
    enum class Kind { kKeep, kAuto, kList };
    Kind kind = Kind::kKeep;
    CpuSet list;
    Location where;
};
inline constexpr Slot<IrqIntent> kIrqSection{"irq.cpus"};

// What the profile asks; keep where it does not say.
inline const IrqIntent& irqIntentOf(const Profile& p) { return p.sectionOr(kIrqSection); }

}  // namespace rxtune
