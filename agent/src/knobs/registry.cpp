#include "knobs/registry.hpp"

namespace rxtune {

const std::vector<const KnobFamily*>& knobFamilies() {
    static const std::vector<const KnobFamily*> table = {
        &sysctlFamily(),
        &defaultMaskFamily(),
        &xdpFamily(),
        &queueFamily(),
        &napiFamily(),
        &napiDeferFamily(),
        &irqFamily(),
        &ringsFamily(),
        &governorFamily(),
    };
    return table;
}

const KnobFamily& familyOf(Family f) {
    for (const KnobFamily* k : knobFamilies())
        if (k->family() == f) return *k;
    return fileFamily();
}

KnobKey keyOfPath(std::string_view path, std::string_view id) {
    for (const KnobFamily* k : knobFamilies())
        if (auto key = k->keyOf(path, id)) return *key;
    KnobKey plain;
    plain.name = std::string(path);
    return plain;
}

void recoverKeys(Journal& j) {
    for (auto& o : j.originals) o.key = keyOfPath(o.path, o.id);
    for (auto& s : j.applied) s.key = keyOfPath(s.path, s.id);
}

}  // namespace rxtune
