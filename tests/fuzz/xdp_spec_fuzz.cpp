// libFuzzer target: XdpSpec parsing (plans, the journal, the pinned state) never crashes, and a
// spec it accepts prints to text that parses back to the same spec.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bpf/xdp_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto s = rxtune::XdpSpec::parse(std::string(reinterpret_cast<const char*>(data), size));
    if (!s) return 0;
    auto back = rxtune::XdpSpec::parse(s->str());
    if (!back || !(*back == *s)) std::abort();
    return 0;
}
