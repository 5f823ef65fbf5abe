#include "knobs/registry.hpp"

namespace rxtune {

// A family defines its accessor in its own unit (knobs/<family>_family.cpp).
const KnobFamily& coalesceFamily();

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
        &coalesceFamily(),
        &governorFamily(),
    };
    return table;
}

const KnobFamily& familyOf(std::string_view name) {
    for (const KnobFamily* k : knobFamilies())
        if (k->name() == name) return *k;
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
    // A stored key stands where its family builds the same path from it; where it does not (no
    // such family in this build, or a key edited by hand), the path is what revert writes, and
    // the key is read back from it as for a journal of the build before.
    auto settle = [](KnobKey& key, const std::string& path, const std::string& id) {
        if (!key.family.empty() && familyOf(key.family).name() == key.family && familyOf(key).path(key) == path) return;
        key = keyOfPath(path, id);
    };
    for (auto& o : j.originals) settle(o.key, o.path, o.id);
    for (auto& s : j.applied) settle(s.key, s.path, s.id);
}

}  // namespace rxtune
