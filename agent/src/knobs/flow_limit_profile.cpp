#include "knobs/flow_limit_profile.hpp"

#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

constexpr const char* kFlowLimitKey = "steering.flow_limit";

FlowLimitIntent parseFlowLimit(const YAML::Node& v, const Location& where) {
    FlowLimitIntent in;
    in.where = where;
    if (!v.IsMap()) {
        in.enabled = yamlcfg::boolean(v, kFlowLimitKey);
        return in;
    }
    yamlcfg::requireKeys(v, kFlowLimitKey, {"enabled", "table_len"});
    in.enabled = true;
    if (auto e = v["enabled"]) in.enabled = yamlcfg::boolean(e, std::string(kFlowLimitKey) + ".enabled");
    if (auto t = v["table_len"]) {
        const std::string key = std::string(kFlowLimitKey) + ".table_len";
        const auto len = yamlcfg::integer<std::uint32_t>(t, key, 1, kFlowLimitMaxTableLen);
        if ((len & (len - 1)) != 0) yamlcfg::bad(t, key, "expected a power of two (the kernel takes no other), got " + std::to_string(len));
        in.tableLen = len;
    }
    return in;
}

// A later file's value replaces its includes' whole.
const SectionRegistration kFlowLimitRegistered{{ProfileSection::of(kFlowLimit, parseFlowLimit)}};

}  // namespace

}  // namespace rxtune
