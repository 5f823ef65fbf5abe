// The governor family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

KnobKey governor(int cpu) {
    KnobKey k{"governor", "", "governor"};
    k.cpu = cpu;
    return k;
}

const FixtureRegistration kGovernorFixture{[] {
    FamilyFixture f;
    f.family = "governor";
    f.profile = "steering:\n  mode: none\ncpu:\n  governor: [performance]\n";
    f.keys = {governor(0), governor(17)};
    f.refused = {{"cpu:\n  governor: {fast: yes}\n", "cpu.governor"}, {"cpu:\n  governor: [performance, [powersave]]\n", "cpu.governor"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
