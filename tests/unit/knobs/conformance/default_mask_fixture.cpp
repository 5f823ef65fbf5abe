// The default_mask family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kDefaultMaskFixture{[] {
    FamilyFixture f;
    f.family = "rps_default_mask";
    f.profile = "steering:\n  mode: rps\n  cpus: all\n  default_mask: true\n";
    f.keys = {{"rps_default_mask", "", "net.core.rps_default_mask"}};
    f.refused = {{"steering:\n  mode: rps\n  default_mask: maybe\n", "steering.default_mask"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
