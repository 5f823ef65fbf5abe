// libFuzzer target: the Authorization header of every scrape request where users are configured
// (web/basic_auth). Any text gives credentials or nothing, never a crash; what it accepts is Basic
// in some case with base64 of user:password, and the credentials encoded again read back the same.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "web/basic_auth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string header(reinterpret_cast<const char*>(data), size);
    auto creds = rxtune::parseBasicAuth(header);
    if (!creds) return 0;
    if (header.size() < 6 || (header[0] | 0x20) != 'b' || header[5] != ' ') std::abort();
    if (creds->first.find(':') != std::string::npos) std::abort();
    auto again = rxtune::parseBasicAuth(rxtune::basicAuthHeader(creds->first, creds->second));
    if (!again || *again != *creds) std::abort();
    return 0;
}
