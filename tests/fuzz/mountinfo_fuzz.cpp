// libFuzzer target: the mountinfo parser (cgroup mounts, bpffs checks) never crashes, and what it
// returns has the fields a mountinfo line must have.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/mountinfo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (const auto& m : rxtune::parseMountinfo(text))
        if (m.fsType.empty() || m.device.empty()) std::abort();
    (void)rxtune::mountinfoHasBpf(text, 0, 39);
    return 0;
}
