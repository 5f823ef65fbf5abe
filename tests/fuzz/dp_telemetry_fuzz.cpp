// libFuzzer target: the parser of rxtune-dp's telemetry replies, which the daemon reads from a
// socket another process serves, never crashes.
#include <cstdint>
#include <string_view>

#include "inventory/dp_telemetry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)rxtune::parseDatapathStats(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
