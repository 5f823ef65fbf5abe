// The coalesce family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kCoalesceFixture{[] {
    FamilyFixture f;
    f.family = "coalesce";
    f.edit = storyDevice;
    f.profile = "steering:\n  mode: none\nnic:\n  coalesce: {rx_usecs: 50, adaptive_rx: true}\n";
    f.keys = {{"coalesce", "enp3s0", "rx_usecs"}, {"coalesce", "enp3s0", "adaptive_tx"}};
    f.refused = {{"nic:\n  coalesce: {rx_usecs: soon}\n", "nic.coalesce.rx_usecs"}, {"nic:\n  coalesce: {adaptive_rx: 7}\n", "nic.coalesce.adaptive_rx"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
