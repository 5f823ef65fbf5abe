// The napi_defer family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kNapiDeferFixture{[] {
    FamilyFixture f;
    f.family = "napi_defer";
    f.profile = "steering:\n  mode: none\nnic:\n  gro_flush_timeout: 20000\n  napi_defer_hard_irqs: 10\n";
    f.keys = {{"napi_defer", "enp2s0", "gro_flush_timeout"}, {"napi_defer", "enp2s0", "napi_defer_hard_irqs"}};
    f.refused = {{"nic:\n  gro_flush_timeout: -5\n", "nic.gro_flush_timeout"}, {"nic:\n  napi_defer_hard_irqs: 3000000000\n", "nic.napi_defer_hard_irqs"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
