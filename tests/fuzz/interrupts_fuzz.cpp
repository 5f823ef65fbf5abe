// libFuzzer target: the /proc/interrupts parser must never crash and keep its invariants.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "inventory/interrupts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto t = rxtune::parseInterrupts(text)) {
        for (const auto& line : t->lines) {
            if (line.counts.size() > t->cpus.size()) std::abort();
            if (line.numeric && line.counts.size() != t->cpus.size()) std::abort();
        }
    }
    return 0;
}
