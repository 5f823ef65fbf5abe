// libFuzzer target: the Authorization header of every scrape request where users are configured
// (web/basic_auth). Any text gives credentials or nothing, never a crash; what it accepts is Basic
// in some case with base64 of user:password, and the credentials encoded again read back the same.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "web/basic_auth.hpp"

namespace {

std::string base64(const std::string& in) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < in.size(); i += 3) {
        unsigned v = static_cast<unsigned char>(in[i]) << 16;
        if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
        if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
        out += kAlphabet[v >> 18 & 63];
        out += kAlphabet[v >> 12 & 63];
        out += i + 1 < in.size() ? kAlphabet[v >> 6 & 63] : '=';
        out += i + 2 < in.size() ? kAlphabet[v & 63] : '=';
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string header(reinterpret_cast<const char*>(data), size);
    auto creds = rxtune::parseBasicAuth(header);
    if (!creds) return 0;
    if (header.size() < 6 || (header[0] | 0x20) != 'b' || header[5] != ' ') std::abort();
    if (creds->first.find(':') != std::string::npos) std::abort();
    auto again = rxtune::parseBasicAuth("Basic " + base64(creds->first + ":" + creds->second));
    if (!again || *again != *creds) std::abort();
    return 0;
}
