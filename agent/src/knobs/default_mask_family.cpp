// net.core.rps_default_mask (Linux 6.3+): devices created later start with RPS to the targets.
#include "core/paths.hpp"
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

class DefaultMaskFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "rps_default_mask"; }
    std::string id(const KnobKey&) const override { return "sysctl " + std::string(kDefaultMaskSysctl); }
    std::string path(const KnobKey&) const override { return paths::sysctl(std::string(kDefaultMaskSysctl)); }
    std::string settingLabel(const KnobKey&) const override { return std::string(kDefaultMaskSysctl); }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        if (p != path({})) return std::nullopt;
        return key();
    }
    static KnobKey key() { return {"rps_default_mask", "", std::string(kDefaultMaskSysctl)}; }

    Result<void> planHost(const PlanInput& in, Plan& p) const override {
        if (in.profile.steering.mode != SteeringMode::kRps || !in.profile.steering.defaultMask || in.nics.empty()) return {};
        const SysctlValue* cur = findSysctl(in.snap.host, std::string(kDefaultMaskSysctl));
        if (cur && cur->present && cur->writable)
            p.settings.push_back(makeSetting(*this, key(), ValueKind::kCpuMask, normalise(ValueKind::kCpuMask, cur->value),
                                             in.hostTargets.toMask(), "devices created later start steered"));
        else
            p.skipped.push_back({"sysctl " + std::string(kDefaultMaskSysctl), "not available on this kernel (added in 6.3)"});
        return {};
    }
};

const DefaultMaskFamily kDefaultMaskFamily;
const FamilyRegistration kDefaultMaskRegistered{kDefaultMaskFamily, 110};

}  // namespace

}  // namespace rxtune
