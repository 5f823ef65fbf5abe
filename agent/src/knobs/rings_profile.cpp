#include "knobs/rings_profile.hpp"

#include <cctype>

#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

RingSize parseSize(const YAML::Node& v, const std::string& key) {
    RingSize s;
    if (v.IsScalar() && v.Scalar() == "max") s.max = true;
    else if (v.IsScalar() && !v.Scalar().empty() && std::isdigit(static_cast<unsigned char>(v.Scalar()[0])))
        s.n = yamlcfg::integer<std::uint32_t>(v, key, 1, 1u << 20);
    else
        yamlcfg::bad(v, key, "expected max or a number of descriptors, got '" +
                                 (v.IsScalar() ? v.Scalar() : std::string("a ") + (v.IsMap() ? "mapping" : "list")) + "'");
    return s;
}

RingsIntent parseRings(const YAML::Node& n, const Location& where) {
    yamlcfg::requireKeys(n, "nic.rings", {"rx", "tx"});
    RingsIntent in;
    in.where = where;
    if (auto v = n["rx"]) in.rx = parseSize(v, "nic.rings.rx");
    if (auto v = n["tx"]) in.tx = parseSize(v, "nic.rings.tx");
    return in;
}

// An include's sizes under the file's own: each ring the file names replaces the include's.
void merge(RingsIntent& b, const RingsIntent& o) {
    if (o.rx.set()) b.rx = o.rx;
    if (o.tx.set()) b.tx = o.tx;
    b.where = o.where;
}

const SectionRegistration kRingsRegistered{{ProfileSection::of(kRingsSection, parseRings, merge)}};

}  // namespace

}  // namespace rxtune
