// A registered knob family by name, for tests that build settings of one (the registry has no
// accessor per family: each registers itself).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "knobs/registry.hpp"

namespace rxtune::test {

inline const KnobFamily& family(std::string_view name) {
    const KnobFamily* f = findFamily(name);
    if (!f) {
        std::fprintf(stderr, "no knob family '%s' in this build\n", std::string(name).c_str());
        std::abort();
    }
    return *f;
}

}  // namespace rxtune::test
