// The rings family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kRingsFixture{[] {
    FamilyFixture f;
    f.family = "rings";
    f.edit = storyDevice;
    f.profile = "steering:\n  mode: none\nnic:\n  rings: {rx: max, tx: 512}\n";
    f.keys = {{"rings", "enp3s0", "rx"}, {"rings", "enp3s0", "tx"}};
    f.refused = {{"nic:\n  rings: {rx: huge}\n", "nic.rings.rx"}, {"nic:\n  rings: {sideways: 5}\n", "nic.rings"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
