// A bcrypt hash made by the test (libxcrypt; cost 4: quick), never a shipped one.
#pragma once

#include <catch2/catch.hpp>

#include <crypt.h>

#include <string>

namespace rxtune::test {

inline std::string bcrypt(const std::string& password, const char* prefix = "$2y$") {
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    REQUIRE(crypt_gensalt_rn(prefix, 4, nullptr, 0, salt, sizeof salt));
    crypt_data data{};
    const char* h = crypt_r(password.c_str(), salt, &data);
    REQUIRE(h);
    return h;
}

}  // namespace rxtune::test
