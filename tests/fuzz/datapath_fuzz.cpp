// libFuzzer target: rxtune-dp's configuration loader + validation never crash or hang on any input
// (its telemetry replies have their own target, dp_telemetry_fuzz).
#include <cstdint>
#include <string>

#include "config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (auto c = rxtune::dp::parseDpConfig(text, "fuzz.yaml")) (void)rxtune::dp::validateDpConfig(*c, rxtune::CpuSet::range(0, 7));
    return 0;
}
