// An Authorization header's Basic credentials (RFC 7617), as Go's net/http reads them: the scheme
// in any case, then base64 (standard alphabet, padded) of user:password, the password being all
// after the first ':'; and the header a client sends. No I/O: outside input, with a fuzz target of its own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rxtune {

// nullopt: another scheme, or malformed.
std::optional<std::pair<std::string, std::string>> parseBasicAuth(std::string_view header);
// The header's value for these credentials: "Basic " and base64 of user:password (clients: the
// benchmarks, the fuzz target's round trip).
std::string basicAuthHeader(const std::string& user, const std::string& password);

}  // namespace rxtune
