// libFuzzer target: the CpuSet mask and list parsers must never crash, and what they accept round-trips.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/cpuset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto m = rxtune::CpuSet::parseMask(text)) {
        auto again = rxtune::CpuSet::parseMask(m->toMask());
        if (!again || !(*again == *m)) std::abort();
        auto fixed = rxtune::CpuSet::parseMask(m->toMask(4096));
        if (!fixed || !(*fixed == *m)) std::abort();
    }
    if (auto l = rxtune::CpuSet::parseList(text)) {
        auto again = rxtune::CpuSet::parseList(l->toList());
        if (!again || !(*again == *l)) std::abort();
    }
    return 0;
}
