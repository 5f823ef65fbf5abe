// The sysctl family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kSysctlFixture{[] {
    FamilyFixture f;
    f.family = "sysctl";
    f.profile = "steering:\n  mode: none\nsysctl:\n  net.core.netdev_max_backlog: \">= 300000\"\n  net.ipv4.tcp_rmem: \">= 4096 131072 268435456\"\n";
    f.keys = {{"sysctl", "", "net.core.rmem_max"}, {"sysctl", "", "net.ipv4.tcp_rmem"}};
    f.refused = {{"sysctl:\n  net.core.rmem_max: [1, 2]\n", "bad.yaml:2:"}, {"sysctl:\n  net.core.rmem_maxx: 5\n", "sysctl.net.core.rmem_maxx"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
