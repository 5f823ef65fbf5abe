#include "knobs/busypoll_profile.hpp"

#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

namespace rxtune {

namespace {

constexpr const char* kBusypollKey = "steering.busypoll";

BusyPollIntent parseBusypoll(const YAML::Node& v, const Location& where) {
    BusyPollIntent in;
    in.where = where;
    if (!v.IsMap()) yamlcfg::bad(v, kBusypollKey, "expected a mapping of cpus, fanout and tx");
    yamlcfg::requireKeys(v, kBusypollKey, {"cpus", "fanout", "tx"});
    if (auto c = v["cpus"]) {
        const std::string key = std::string(kBusypollKey) + ".cpus";
        const std::string text = yamlcfg::scalar(c, key);
        auto set = CpuSet::parseList(text);
        if (!set || set->empty()) yamlcfg::bad(c, key, "expected a cpulist (3, or 2-3 for two RX NAPIs), got '" + text + "'");
        in.cpus = *set;
        const auto m = c.Mark();
        in.cpusWhere = {where.file, static_cast<unsigned>(m.line + 1), static_cast<unsigned>(m.column + 1)};
    }
    if (auto f = v["fanout"]) {
        const std::string key = std::string(kBusypollKey) + ".fanout";
        const std::string text = yamlcfg::scalar(f, key);
        if (text != "rps" && text != "none") yamlcfg::bad(f, key, "expected rps or none, got '" + text + "'");
        in.rpsFanout = text == "rps";
    }
    if (auto t = v["tx"]) {
        const std::string key = std::string(kBusypollKey) + ".tx";
        const std::string text = yamlcfg::scalar(t, key);
        if (text != "threaded" && text != "leave") yamlcfg::bad(t, key, "expected threaded or leave, got '" + text + "'");
        in.txThreaded = text == "threaded";
    }
    return in;
}

// A later file's value replaces its includes' whole.
const SectionRegistration kBusypollRegistered{{ProfileSection::of(kBusyPoll, parseBusypoll)}};

}  // namespace

}  // namespace rxtune
