// libFuzzer target: the profile loader must turn any text into a Profile or a located error, never crash.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "profile/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    // No search path: includes must fail cleanly rather than read the machine's files.
    auto p = rxtune::loadProfileText(text, "fuzz.yaml", {});
    if (!p && p.error().message().rfind("fuzz.yaml", 0) != 0) std::abort();
    return 0;
}
