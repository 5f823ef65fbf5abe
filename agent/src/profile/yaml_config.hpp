// Helpers shared by the small YAML configuration loaders (the daemon's, rxtune-dp's): a located
// error thrown from deep in the parse and turned into `file:line:col: key: what` at the top.
#pragma once

#include <charconv>
#include <set>
#include <string>

#include <yaml-cpp/yaml.h>

#include "core/result.hpp"

namespace rxtune::yamlcfg {

struct ConfigError {
    YAML::Mark mark;
    std::string key, what;
};

[[noreturn]] inline void bad(const YAML::Node& n, const std::string& key, const std::string& what) {
    throw ConfigError{n.Mark(), key, what};
}

inline std::string scalar(const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar()) bad(n, key, "expected a string");
    return n.Scalar();
}

// An integer from lo to hi (both included); anything else is a located error naming the range.
template <class T>
T integer(const YAML::Node& n, const std::string& key, T lo, T hi) {
    const std::string s = scalar(n, key);
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi)
        bad(n, key, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + s + "'");
    return v;
}

// Every key of the mapping n must be one of `keys`; the error lists them.
inline void requireKeys(const YAML::Node& n, const std::string& where, const std::set<std::string>& keys) {
    if (!n.IsMap()) bad(n, where, "expected a mapping");
    for (const auto& kv : n) {
        const auto k = kv.first.as<std::string>();
        if (keys.count(k)) continue;
        std::string list;
        for (const auto& a : keys) list += (list.empty() ? "" : ", ") + a;
        bad(kv.first, where.empty() ? k : where + "." + k, "unknown key (expected one of: " + list + ")");
    }
}

inline tl::unexpected<Error> located(const std::string& file, const YAML::Mark& m, const std::string& key,
                                     const std::string& what) {
    std::string where = file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    return fail(EINVAL, key.empty() ? where : where + ": " + key, "", what);
}

}  // namespace rxtune::yamlcfg
