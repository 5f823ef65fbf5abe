// A knob family's own keys in a profile (nic.coalesce, ...): the family parses its subtree and
// merges an include's value under the file's own; the loader places each one and keeps its value
// opaque (Profile::section), so a new family adds keys without touching the loader.
// A family registers its sections from its own file (knobs/<family>_profile.cpp), which needs YAML
// and the profile types only: the parser library the fuzz targets link holds them too.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "profile/profile.hpp"

namespace rxtune {

struct ProfileSection {
    std::string parent;  // the top-level mapping it is a key of ("nic"); "" for a top-level key
    std::string key;     // "coalesce"
    // The family's value from its node, set into `into` under its slot; errors thrown with
    // yamlcfg::bad (file:line:col is added by the loader). `where` is the node's own position,
    // for the plan's reasons.
    std::function<void(Slots& into, const YAML::Node&, const Location& where)> parse;
    // `over`'s value (a later file's) on top of `base`'s (what the includes gave), both set;
    // null: over's replaces base's.
    std::function<void(Slots& base, const Slots& over)> merge;

    std::string path() const { return parent.empty() ? key : parent + "." + key; }

    // A section whose slot's name is its path ("nic.coalesce": parent "nic", key "coalesce"):
    // parse gives the family's T, merge (optional) lays a later file's T over an include's.
    template <class T, class Parse>
    static ProfileSection of(Slot<T> slot, Parse parse, void (*merge)(T& base, const T& over) = nullptr) {
        ProfileSection s;
        const std::string path(slot.name);
        const auto dot = path.rfind('.');
        s.parent = dot == std::string::npos ? "" : path.substr(0, dot);
        s.key = dot == std::string::npos ? path : path.substr(dot + 1);
        s.parse = [slot, parse](Slots& into, const YAML::Node& n, const Location& where) { into.set(slot, T(parse(n, where))); };
        if (merge) s.merge = [slot, merge](Slots& base, const Slots& over) { merge(*base.get(slot), *over.get(slot)); };
        return s;
    }
};

// Every registered section, by path.
const std::vector<ProfileSection>& profileSections();

// `static const SectionRegistration r{{...}};` in a family's profile file adds its sections. The
// files are linked whole (agent/meson.build), so nothing has to name them.
struct SectionRegistration {
    explicit SectionRegistration(std::vector<ProfileSection> sections);
};

}  // namespace rxtune
