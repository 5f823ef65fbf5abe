// Helpers for a family's keyOf(): take a path it built apart again, at the journal's edge only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/text.hpp"

namespace rxtune::pathkey {

// What follows `prefix` in `path`, or nullopt.
inline std::optional<std::string_view> after(std::string_view path, std::string_view prefix) {
    if (!path.starts_with(prefix)) return std::nullopt;
    return path.substr(prefix.size());
}

// "<head>/<rest>" -> head, rest; nullopt without a '/' or with an empty head.
inline std::optional<std::pair<std::string, std::string_view>> head(std::string_view s) {
    const auto slash = s.find('/');
    if (slash == std::string_view::npos || slash == 0) return std::nullopt;
    return std::make_pair(std::string(s.substr(0, slash)), s.substr(slash + 1));
}

// "sys/class/net/<dev>/<rest>" -> dev, rest: the device a per-device family's path names.
inline std::optional<std::pair<std::string, std::string_view>> netDevice(std::string_view path) {
    auto rest = after(path, "sys/class/net/");
    if (!rest) return std::nullopt;
    return head(*rest);
}

inline std::optional<int> number(std::string_view s) {
    unsigned v = 0;
    if (!parseUnsigned(s, v) || v > 1u << 30) return std::nullopt;
    return static_cast<int>(v);
}

}  // namespace rxtune::pathkey
