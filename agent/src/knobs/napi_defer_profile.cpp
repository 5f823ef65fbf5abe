#include "knobs/napi_defer_profile.hpp"

#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

// The kernel's limits: gro_flush_timeout is an unsigned long of ns (capped here at an hour, beyond
// any sane deferral; irq_suspend_timeout the same), napi_defer_hard_irqs at most S32_MAX (net-sysfs.c).
ProfileSection section(Slot<DeferValue> slot, std::uint64_t max) {
    return ProfileSection::of(slot, [path = std::string(slot.name), max](const YAML::Node& v, const Location& where) {
        return DeferValue{yamlcfg::integer<std::uint64_t>(v, path, 0, max), where};
    });
}

const SectionRegistration kNapiDeferRegistered{{section(kGroFlushTimeout, 3600ULL * 1000000000ULL), section(kNapiDeferHardIrqs, 2147483647ULL),
                                      section(kIrqSuspendTimeout, 3600ULL * 1000000000ULL)}};

}  // namespace

}  // namespace rxtune
