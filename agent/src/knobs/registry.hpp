// The table of knob families: the one place that lists them (a new family is one line here).
#pragma once

#include <string_view>
#include <vector>

#include "knobs/family.hpp"

namespace rxtune {

// In planning order: host-wide families first, then those of a device, then per-CPU ones.
const std::vector<const KnobFamily*>& knobFamilies();
// The family of that name; the plain-file family where none is.
const KnobFamily& familyOf(std::string_view name);
inline const KnobFamily& familyOf(const KnobKey& k) { return familyOf(k.family); }
// The journal's edge: the key of a path one of the families built; a plain file ("file")
// when none claims it.
KnobKey keyOfPath(std::string_view path, std::string_view id = {});

// A loaded journal's keys: those it stores, checked against their paths; from the paths for a
// journal of the build before (ids and paths only).
void recoverKeys(Journal& j);

// The families, one function each (knobs/<family>.cpp).
const KnobFamily& fileFamily();
const KnobFamily& sysctlFamily();
const KnobFamily& defaultMaskFamily();
const KnobFamily& xdpFamily();
const KnobFamily& queueFamily();
const KnobFamily& napiFamily();
const KnobFamily& napiDeferFamily();
const KnobFamily& governorFamily();
const KnobFamily& irqFamily();
const KnobFamily& ringsFamily();

}  // namespace rxtune
