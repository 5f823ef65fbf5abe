#include "knobs/irq_profile.hpp"

#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

IrqIntent parseIrq(const YAML::Node& c, const Location& where) {
    IrqIntent in;
    in.where = where;
    const auto v = yamlcfg::scalar(c, "irq.cpus");
    if (v == "keep") in.kind = IrqIntent::Kind::kKeep;
    else if (v == "auto") in.kind = IrqIntent::Kind::kAuto;
    else {
        auto set = CpuSet::parseList(v);
        if (!set || set->empty()) yamlcfg::bad(c, "irq.cpus", "expected auto, keep or a cpulist, got '" + v + "'");
        in.kind = IrqIntent::Kind::kList;
        in.list = *set;
    }
    return in;
}

const SectionRegistration kIrqRegistered{{ProfileSection::of(kIrqSection, parseIrq)}};

}  // namespace

}  // namespace rxtune
