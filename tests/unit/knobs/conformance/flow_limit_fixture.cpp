// The flow_limit family's conformance fixture (conformance_test.cpp): the story's host with the
// kernel's flow limit (CONFIG_NET_FLOW_LIMIT), no CPU in it yet.
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kFlowLimitFixture{[] {
    FamilyFixture f;
    f.family = "flow_limit";
    f.edit = [](TempTree& t) { t.put("proc/sys/net/core/flow_limit_cpu_bitmap", "00000\n"); };
    f.profile = "steering:\n  mode: rps\n  cpus: all\n  flow_limit: {table_len: 8192}\n";
    f.keys = {{"flow_limit", "", "flow_limit_cpu_bitmap"}, {"flow_limit", "", "flow_limit_table_len"}};
    f.refused = {{"steering:\n  flow_limit: {table_len: 1000}\n", "bad.yaml:2:27: steering.flow_limit.table_len: expected a power of two"},
                 {"steering:\n  flow_limit: {table_len: 0}\n", "steering.flow_limit.table_len"},
                 {"steering:\n  flow_limit: maybe\n", "bad.yaml:2:15: steering.flow_limit"},
                 {"steering:\n  flow_limit: {size: 4}\n", "steering.flow_limit.size: unknown key"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
