// The knob families' conformance suite (conformance_test.cpp): what each family supplies to be
// checked, registered from the family's own fixture file beside this one (<family>_fixture.cpp).
// The suite iterates the registry and fails for a family without a fixture.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../../support/fixture.hpp"
#include "core/knob.hpp"

namespace rxtune::test {

struct FamilyFixture {
    std::string family;  // the family's name (KnobFamily::name)
    // The fixture host the family plans on, and what the family needs of it beyond the fixture
    // (the fake driver's answers in netlink.json, an IRQ's owner).
    std::string host = "story-20cpu-single-queue";
    std::function<void(TempTree&)> edit;
    // A profile that makes the family write on that host (other families may write too).
    std::string profile;
    // Keys of the family, for identity: each key's path and id give the key back.
    std::vector<KnobKey> keys;
    // Profiles the family refuses, at load or at plan, and what the message must hold (the file,
    // line and column, and the key).
    struct Refusal {
        std::string yaml, expect;
    };
    std::vector<Refusal> refused;
    // Where the family's backend is the kernel's own and has no fake (XDP programs): the
    // integration test that proves its apply, undo and revert on a real device instead.
    std::string appliedOnlyIn;
};

struct FixtureRegistration {
    explicit FixtureRegistration(FamilyFixture f);
};
const std::vector<FamilyFixture>& familyFixtures();

// The story's host as the device families need it: the driver's rings and coalescing answers for
// enp2s0, and its RX IRQ's owner as /proc/irq/N/<action> shows it.
void storyDevice(TempTree& tree);

}  // namespace rxtune::test
