#include "knobs/coalesce_profile.hpp"

#include <climits>
#include <set>

#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

CoalesceIntent parseCoalesce(const YAML::Node& n, const Location& where) {
    std::set<std::string> keys;
    for (const auto& a : coalesceMessage().attrs) keys.insert(a.name);
    yamlcfg::requireKeys(n, std::string(kCoalesceSection.name), keys);
    CoalesceIntent in;
    in.where = where;
    for (const auto& a : coalesceMessage().attrs) {
        const auto v = n[a.name];
        if (!v) continue;
        const std::string key = std::string(kCoalesceSection.name) + "." + a.name;
        in.values[a.name] = a.u8 ? (yamlcfg::boolean(v, key) ? 1u : 0u) : yamlcfg::integer<std::uint32_t>(v, key, 0, UINT32_MAX);
    }
    return in;
}

// An include's parameters under the file's own: each one the file names replaces the include's.
void merge(CoalesceIntent& b, const CoalesceIntent& o) {
    for (const auto& [k, v] : o.values) b.values[k] = v;
    b.where = o.where;
}

const SectionRegistration kCoalesceRegistered{{ProfileSection::of(kCoalesceSection, parseCoalesce, merge)}};

}  // namespace

}  // namespace rxtune
