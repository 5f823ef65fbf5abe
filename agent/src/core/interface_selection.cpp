#include "core/interface_selection.hpp"

#include <fnmatch.h>

#include <algorithm>

namespace rxtune {

bool InterfaceSelection::wants(const std::string& name, bool managed, bool physical) const {
    switch (kind) {
        case Kind::kAll: return true;
        case Kind::kManaged: return managed || physical;
        case Kind::kGlobs:
            return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return fnmatch(g.c_str(), name.c_str(), 0) == 0; });
    }
    return false;
}

}  // namespace rxtune
