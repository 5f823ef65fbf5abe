// The napi family's conformance fixture (conformance_test.cpp).
#include "conformance.hpp"

namespace rxtune::test {
namespace {

const FixtureRegistration kNapiFixture{[] {
    FamilyFixture f;
    f.family = "napi";
    f.profile = "steering:\n  mode: napi\n";
    f.keys = {{"napi", "va", "threaded"}, {"napi", "va", "napi-kthreads"}};
    f.refused = {{"steering:\n  mode: napi\n  cpus: 99\n", "steering.cpus"}};
    return f;
}()};

}  // namespace
}  // namespace rxtune::test
