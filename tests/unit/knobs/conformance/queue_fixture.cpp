// The queue family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

KnobKey queue(const std::string& dev, bool tx, int q, const std::string& file) {
    KnobKey k{"queue", dev, file};
    k.queue = q;
    k.tx = tx;
    return k;
}

const FixtureRegistration kQueueFixture{[] {
    FamilyFixture f;
    f.family = "queue";
    f.profile = "steering:\n  mode: rps\n  cpus: all\n  rfs:\n    flow_entries: 32768\n";
    f.keys = {queue("eth0", false, 3, "rps_cpus"), queue("cpu0", false, 0, "rps_flow_cnt"), queue("sysctl", true, 11, "xps_cpus")};
    f.refused = {{"steering:\n  mode: rps\n  rfs:\n    flow_entries: lots\n", "steering.rfs.flow_entries"},
                {"steering:\n  mode: rps\n  cpus: 99\n", "steering.cpus"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
