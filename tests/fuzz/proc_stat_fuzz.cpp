// libFuzzer target: the /proc/stat parser (mode auto's and `rxtune status`'s CPU time) never crashes.
#include <cstdint>
#include <string_view>

#include "inventory/softnet.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)rxtune::parseProcStat(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
