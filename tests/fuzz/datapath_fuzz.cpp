// libFuzzer target: rxtune-dp's telemetry reply parser (the agent reads it from a socket) and its
// configuration loader + validation never crash on any input.
#include <cstdint>
#include <string>

#include "config.hpp"
#include "inventory/dp_telemetry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    (void)rxtune::parseDatapathStats(text);
    if (auto c = rxtune::dp::parseDpConfig(text, "fuzz.yaml")) (void)rxtune::dp::validateDpConfig(*c, rxtune::CpuSet::range(0, 7));
    return 0;
}
