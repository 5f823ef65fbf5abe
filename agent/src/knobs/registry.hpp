// The knob families as the core sees them: each registers itself from its own unit
// (FamilyRegistration in knobs/family.hpp), and core code iterates them and never names one.
#pragma once

#include <string_view>
#include <vector>

#include "knobs/family.hpp"

namespace rxtune {

// Every registered family, in planning order (their ranks): host-wide families first, then those
// of a device, then per-CPU ones.
const std::vector<const KnobFamily*>& knobFamilies();
// The family of that name: a registered one, or "file" (a plain file under the tree, core's own);
// null where this build has none of that name.
const KnobFamily* findFamily(std::string_view name);
// The family of a key this build made or a journal's key recoverKeys accepted. A key of a family
// this build does not have is a defect of the caller: the process stops with the name said.
const KnobFamily& familyOf(const KnobKey& k);
// A plain file under the tree that no family claims (tests, journals of paths no family builds).
const KnobFamily& fileFamily();
// The journal's edge: the key of a path one of the families built; a plain file ("file")
// when none claims it.
KnobKey keyOfPath(std::string_view path, std::string_view id = {});

// A loaded journal's keys: those it stores, checked against their paths; from the paths for a
// journal of the build before (ids and paths only). An entry whose stored family this build does
// not have is refused (the error names the entry, the family and the journal): its key cannot be
// read, and writing its path as a plain file could put a value where the family never wrote.
Result<void> recoverKeys(Journal& j);

}  // namespace rxtune
