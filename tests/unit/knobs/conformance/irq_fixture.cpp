// The irq family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

KnobKey irq(const std::string& dev, int n, const std::string& action) {
    KnobKey k{"irq", dev, action};
    k.irq = n;
    return k;
}

const FixtureRegistration kIrqFixture{[] {
    FamilyFixture f;
    f.family = "irq";
    f.edit = storyDevice;
    f.profile = "steering:\n  mode: none\nirq:\n  cpus: '5'\n";
    f.keys = {irq("enp1s0", 77, "enp1s0-TxRx-0"), irq("ens2f0np0", 99, "mlx5_comp0@pci:0000:3b:00.0"), irq("a", 5, "x irq 5 y")};
    f.refused = {{"irq:\n  cpus: sometimes\n", "irq.cpus"}, {"irq:\n  cpu: '1'\n", "irq.cpu"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
