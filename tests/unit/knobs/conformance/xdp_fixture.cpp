// The xdp family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kXdpFixture{[] {
    FamilyFixture f;
    f.family = "xdp";
    f.keys = {{"xdp", "veth0", "steering"}};
    f.refused = {{"steering:\n  mode: xdp\n  xdp:\n    mode: sideways\n", "steering.xdp.mode"}};
    f.appliedOnlyIn = "tests/integration/xdp_test.cpp";
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
