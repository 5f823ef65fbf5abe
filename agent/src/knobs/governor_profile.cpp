#include "knobs/governor_profile.hpp"

#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

GovernorIntent parseGovernor(const YAML::Node& g, const Location& where) {
    GovernorIntent in;
    in.where = where;
    if (g.IsScalar()) in.names.push_back(g.Scalar());
    else if (g.IsSequence())
        for (const auto& e : g) in.names.push_back(yamlcfg::scalar(e, "cpu.governor"));
    else
        yamlcfg::bad(g, "cpu.governor", "expected a string or a list of strings");
    for (const auto& name : in.names)
        if (name.empty() || name.find_first_of("/. \t") != std::string::npos)
            yamlcfg::bad(g, "cpu.governor", "'" + name + "' is not a governor name");
    return in;
}

// A file's list replaces its includes' (the order is the preference).
const SectionRegistration kGovernorRegistered{{ProfileSection::of(kGovernorSection, parseGovernor)}};

}  // namespace

}  // namespace rxtune
