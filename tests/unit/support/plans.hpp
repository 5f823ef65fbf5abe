// Helpers the unit tests of the planner and the knob families share: a profile from its text, a
// fixture host's snapshot, a plan as one line per setting, the shipped profiles' directory.
// (One definition here, not one per test file: tests/unit_tests is a unity build.)
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "inventory/snapshot.hpp"
#include "planner/planner.hpp"
#include "profile/profile.hpp"
#include "sys/file_tree.hpp"

namespace rxtune::test {

inline Profile profileOf(const std::string& text) { return loadProfileText(text, "t.yaml", {}).value(); }

// A fixture host's snapshot, read as rxtune reads a host (tests/fixtures/hosts/SCENARIO).
inline HostSnapshot snapshotOf(const std::string& scenario) {
    auto root = fixtureRoot(scenario);
    FileTree fs(root.string());
    FakeNetlink nl(root);
    return takeSnapshot(fs, nl, {}).value();
}

// One line per setting ("ID CURRENT -> DESIRED") and per skip ("skip ID: REASON").
inline std::vector<std::string> planLines(const Plan& p) {
    std::vector<std::string> out;
    for (const auto& s : p.settings) out.push_back(s.id + " " + s.current + " -> " + s.desired);
    for (const auto& s : p.skipped) out.push_back("skip " + s.id + ": " + s.reason);
    return out;
}

// The shipped profiles' directory, from RXTUNE_PROFILES (meson test sets it).
inline std::vector<std::string> shippedProfiles() {
    const char* dir = std::getenv("RXTUNE_PROFILES");
    if (!dir) {
        std::fprintf(stderr, "RXTUNE_PROFILES is not set (meson test sets it to the source tree's profiles/)\n");
        std::abort();
    }
    return {dir};
}

}  // namespace rxtune::test
