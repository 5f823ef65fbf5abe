// A short, stable digest of configuration text (FNV-1a, 64 bits): it names what a daemon loaded
// (rxtune_applied_profile_info{digest}) so that a fleet can see which version each node runs.
// Not a security hash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace rxtune {

class Digest {
public:
    Digest& add(std::string_view bytes) {
        for (unsigned char c : bytes) h_ = (h_ ^ c) * 0x100000001b3ull;
        // The length too, so that ("ab", "c") and ("a", "bc") differ.
        for (std::size_t n = bytes.size(), i = 0; i < 8; ++i, n >>= 8) h_ = (h_ ^ (n & 0xff)) * 0x100000001b3ull;
        return *this;
    }
    std::string hex() const {
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
        return buf;
    }

private:
    std::uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace rxtune
