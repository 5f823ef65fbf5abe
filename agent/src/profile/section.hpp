// A knob family's own keys in a profile (nic.coalesce, ...): the family parses its subtree and
// merges an include's value under the file's own; the loader places each one and keeps its value
// opaque (Profile::section), so a new family adds keys without touching the loader.
// A family registers its sections from its own file (knobs/<family>_profile.cpp), which needs YAML
// and the profile types only: the parser library the fuzz targets link holds them too.
#pragma once

#include <any>
#include <functional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "profile/profile.hpp"

namespace rxtune {

struct ProfileSection {
    std::string parent;  // the top-level mapping it is a key of ("nic"); "" for a top-level key
    std::string key;     // "coalesce"
    // The family's value from its node; errors thrown with yamlcfg::bad (file:line:col is added
    // by the loader). `where` is the node's own position, for the plan's reasons.
    std::function<std::any(const YAML::Node&, const Location& where)> parse;
    // `over` (a later file's value) on top of `base` (what the includes gave); null: over replaces.
    std::function<void(std::any& base, const std::any& over)> merge;

    std::string path() const { return parent.empty() ? key : parent + "." + key; }
};

// Every registered section, by path.
const std::vector<ProfileSection>& profileSections();

// `static const SectionRegistration r{{...}};` in a family's profile file adds its sections. The
// files are linked whole (agent/meson.build), so nothing has to name them.
struct SectionRegistration {
    explicit SectionRegistration(std::vector<ProfileSection> sections);
};

}  // namespace rxtune
