#include "knobs/sysctl_profile.hpp"

#include <charconv>
#include <climits>
#include <sstream>

#include "core/paths.hpp"
#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

Location at(const Location& section, const YAML::Node& n) {
    const auto m = n.Mark();
    return {section.file, static_cast<unsigned>(m.line + 1), static_cast<unsigned>(m.column + 1)};
}

std::int64_t number(const YAML::Node& n, const std::string& key, const std::string& s) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) yamlcfg::bad(n, key, "expected an integer, got '" + s + "'");
    if (v < 0) yamlcfg::bad(n, key, std::to_string(v) + " is out of range [0, " + std::to_string(INT64_MAX) + "]");
    return v;
}

// Keys are sysctl names, checked one by one rather than against a fixed set.
SysctlIntents parseSysctl(const YAML::Node& s, const Location& where) {
    if (!s.IsMap()) yamlcfg::bad(s, "sysctl", "expected a mapping of sysctl names to values");
    SysctlIntents out;
    for (const auto& kv : s) {
        const auto key = yamlcfg::scalar(kv.first, "sysctl");
        const std::string k = "sysctl." + key;
        if (!validateSysctlKey(key)) yamlcfg::bad(kv.first, k, "is not a sysctl name");
        if (!key.starts_with("net.") && !key.starts_with("vm."))
            yamlcfg::bad(kv.first, k, "only net.* and vm.* sysctls may be set by a profile");
        const YAML::Node& v = kv.second;
        if (!v.IsScalar()) yamlcfg::bad(v, k, "expected a number, three numbers, or '>= N' / '<= N'");
        std::string text = v.Scalar();
        SysctlIntent in;
        in.key = key;
        in.where = at(where, v);
        if (text.starts_with(">=")) {
            in.guard = Guard::kAtLeast;
            text = text.substr(2);
        } else if (text.starts_with("<=")) {
            in.guard = Guard::kAtMost;
            text = text.substr(2);
        }
        std::istringstream words(text);
        std::string w;
        while (words >> w) in.values.push_back(number(v, k, w));
        if (in.values.size() != 1 && in.values.size() != 3)
            yamlcfg::bad(v, k, "expected one number or three numbers, got '" + v.Scalar() + "'");
        out[key] = in;
    }
    return out;
}

// An include's sysctls under the file's own: each key the file names replaces the include's.
void merge(SysctlIntents& b, const SysctlIntents& over) {
    for (const auto& [k, v] : over) b[k] = v;
}

const SectionRegistration kSysctlRegistered{{ProfileSection::of(kSysctlSection, parseSysctl, merge)}};

}  // namespace

}  // namespace rxtune
