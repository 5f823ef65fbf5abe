#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "core/digest.hpp"
#include "core/paths.hpp"
#include "profile/profile.hpp"
#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

#ifndef RXTUNE_PROFILE_DIRS
#define RXTUNE_PROFILE_DIRS "/etc/rxtune/profiles"
#endif

namespace rxtune {

namespace {

// Thrown inside the parser only; converted to an Error at the module edge.
struct ProfileError {
    Location where;
    std::string key;
    std::string what;
};

// A profile file's own settings; unset fields are inherited from its includes.
struct Partial {
    std::optional<std::string> description;
    std::optional<std::vector<std::string>> interfaces, drivers;
    std::optional<std::optional<Verdict>> verdict;
    std::optional<bool> includeVirtual;
    std::optional<SteeringMode> mode;
    std::optional<CpuChoice> cpus;
    std::optional<bool> excludeIsolated, excludeIrqCpus, xps, defaultMask;
    std::optional<std::uint32_t> flowEntries, xdpQsize;
    std::optional<bool> xdpNative;
    std::optional<bool> recommendDatapath;
    std::map<std::string, double> autoKeys;  // steering.auto, merged per key
    std::optional<std::vector<SteeringMode>> autoCandidates;
    Slots sections;  // the families' own (profile/section.hpp), by path
};

// The keys of a mapping: its own and those the families' sections add under it.
std::set<std::string> keysOf(const std::string& parent, std::set<std::string> own) {
    for (const auto& s : profileSections())
        if (s.parent == parent) own.insert(s.key);
    return own;
}

class Parser {
public:
    Parser(std::string file) : file_(std::move(file)) {}

    Location at(const YAML::Node& n) const {
        auto m = n.Mark();
        return {file_, static_cast<unsigned>(m.line + 1), static_cast<unsigned>(m.column + 1)};
    }

    [[noreturn]] void error(const YAML::Node& n, const std::string& key, const std::string& what) const {
        throw ProfileError{at(n), key, what};
    }

    // The shared YAML rules (yaml_config.hpp); their errors become ProfileErrors in Loader::load.
    void requireMap(const YAML::Node& n, const std::string& key, const std::set<std::string>& allowed) const {
        yamlcfg::requireKeys(n, key, allowed);
    }

    std::string str(const YAML::Node& n, const std::string& key) const { return yamlcfg::scalar(n, key); }
    bool boolean(const YAML::Node& n, const std::string& key) const { return yamlcfg::boolean(n, key); }
    double fraction(const YAML::Node& n, const std::string& key) const { return yamlcfg::fraction(n, key); }
    double seconds(const YAML::Node& n, const std::string& key, double lo, double hi) const {
        return yamlcfg::seconds(n, key, lo, hi);
    }
    std::int64_t integer(const YAML::Node& n, const std::string& key, std::int64_t lo, std::int64_t hi) const {
        return yamlcfg::integer<std::int64_t>(n, key, lo, hi);
    }

    std::vector<std::string> strings(const YAML::Node& n, const std::string& key) const {
        std::vector<std::string> out;
        if (n.IsScalar()) {
            out.push_back(n.Scalar());
            return out;
        }
        if (!n.IsSequence()) error(n, key, "expected a string or a list of strings");
        for (const auto& e : n) out.push_back(str(e, key));
        return out;
    }

    Partial parse(const YAML::Node& root, std::vector<std::pair<std::string, YAML::Node>>& includes) const {
        Partial p;
        requireMap(root, "", keysOf("", {"include", "description", "match", "steering", "cpu", "datapath", "nic", "irq"}));
        if (auto inc = root["include"]) {
            for (const auto& name : strings(inc, "include")) includes.emplace_back(name, inc);
        }
        if (auto d = root["description"]) p.description = str(d, "description");
        if (auto m = root["match"]) parseMatch(m, p);
        if (auto s = root["steering"]) parseSteering(s, p);
        // The mappings whose keys are the families' own.
        for (const char* parent : {"irq", "nic", "cpu"})
            if (auto n = root[parent]) requireMap(n, parent, keysOf(parent, {}));
        if (auto d = root["datapath"]) {
            requireMap(d, "datapath", keysOf("datapath", {"recommend"}));
            if (auto r = d["recommend"]) p.recommendDatapath = boolean(r, "datapath.recommend");
        }
        for (const auto& s : profileSections()) {
            const YAML::Node parent = s.parent.empty() ? root : root[s.parent];
            if (!parent || !parent.IsMap()) continue;
            if (auto v = parent[s.key]) s.parse(p.sections, v, at(v));
        }
        return p;
    }

    void parseMatch(const YAML::Node& m, Partial& p) const {
        requireMap(m, "match", {"interfaces", "drivers", "verdict", "virtual"});
        if (auto i = m["interfaces"]) {
            p.interfaces = strings(i, "match.interfaces");
            for (const auto& g : *p.interfaces)
                if (g.empty() || g.size() > 15 || g.find('/') != std::string::npos)
                    error(i, "match.interfaces", "'" + g + "' is not an interface name glob");
        }
        if (auto d = m["drivers"]) p.drivers = strings(d, "match.drivers");
        if (auto v = m["verdict"]) {
            const auto s = str(v, "match.verdict");
            if (s == "single-queue") p.verdict = std::optional<Verdict>(Verdict::kSingleQueue);
            else if (s == "multi-queue") p.verdict = std::optional<Verdict>(Verdict::kMultiQueue);
            else if (s == "any") p.verdict = std::optional<Verdict>();
            else error(v, "match.verdict", "expected single-queue, multi-queue or any, got '" + s + "'");
        }
        if (auto v = m["virtual"]) {
            const auto s = str(v, "match.virtual");
            if (s == "include") p.includeVirtual = true;
            else if (s == "exclude") p.includeVirtual = false;
            else error(v, "match.virtual", "expected include or exclude, got '" + s + "'");
        }
    }

    void parseSteering(const YAML::Node& s, Partial& p) const {
        requireMap(s, "steering",
                   keysOf("steering", {"mode", "cpus", "exclude_isolated", "exclude_irq_cpus", "rfs", "xps", "default_mask", "xdp", "auto"}));
        if (auto a = s["auto"]) {
            requireMap(a, "steering.auto", {"rx_share", "busy", "min_spare", "worse_margin", "gain_margin", "sustain", "interval",
                                            "window", "backoff", "candidates"});
            for (const char* k : {"rx_share", "busy", "min_spare", "worse_margin", "gain_margin"})
                if (auto v = a[k]) p.autoKeys[k] = fraction(v, std::string("steering.auto.") + k);
            if (auto v = a["sustain"]) p.autoKeys["sustain"] = seconds(v, "steering.auto.sustain", 0.05, 600);
            if (auto v = a["interval"]) p.autoKeys["interval"] = seconds(v, "steering.auto.interval", 0.05, 60);
            if (auto v = a["window"]) p.autoKeys["window"] = seconds(v, "steering.auto.window", 0.1, 3600);
            if (auto v = a["backoff"]) p.autoKeys["backoff"] = seconds(v, "steering.auto.backoff", 0, 86400);
            if (auto c = a["candidates"]) {
                const std::string key = "steering.auto.candidates";
                if (!c.IsSequence() || c.size() == 0) error(c, key, "expected a list of rps, xdp, napi and/or busypoll, e.g. [rps, xdp]");
                std::vector<SteeringMode> list;
                for (const auto& e : c) {
                    const auto v = str(e, key);
                    const auto parsed = steeringModeOf(v);
                    if (!parsed || !isAutoCandidate(*parsed)) error(e, key, "expected rps, xdp, napi or busypoll, got '" + v + "'");
                    const SteeringMode m = *parsed;
                    if (std::find(list.begin(), list.end(), m) != list.end()) error(e, key, "'" + v + "' is listed twice");
                    list.push_back(m);
                }
                p.autoCandidates = list;
            }
        }
        if (auto x = s["xdp"]) {
            requireMap(x, "steering.xdp", {"mode", "qsize"});
            if (auto m = x["mode"]) {
                const auto v = str(m, "steering.xdp.mode");
                if (v != "generic" && v != "native") error(m, "steering.xdp.mode", "expected generic or native, got '" + v + "'");
                p.xdpNative = v == "native";
            }
            if (auto q = x["qsize"]) p.xdpQsize = static_cast<std::uint32_t>(integer(q, "steering.xdp.qsize", 8, 16384));
        }
        if (auto m = s["mode"]) {
            const auto v = str(m, "steering.mode");
            p.mode = steeringModeOf(v);
            if (!p.mode) error(m, "steering.mode", "expected rps, xdp, napi, busypoll, auto or none, got '" + v + "'");
        }
        if (auto c = s["cpus"]) {
            const auto v = str(c, "steering.cpus");
            CpuChoice choice;
            choice.where = at(c);
            if (v == "all") {
                choice.kind = CpuChoice::Kind::kAll;
            } else if (v == "numa-local") {
                choice.kind = CpuChoice::Kind::kNumaLocal;
            } else if (v == "big") {
                choice.kind = CpuChoice::Kind::kBig;
            } else if (v.starts_with("cgroup:")) {
                choice.kind = CpuChoice::Kind::kCgroup;
                choice.cgroupPath = v.substr(7);
                if (!choice.cgroupPath.starts_with("/") || choice.cgroupPath.find("..") != std::string::npos)
                    error(c, "steering.cpus", "cgroup path '" + choice.cgroupPath + "' must be absolute without '..'");
            } else {
                auto set = CpuSet::parseList(v);
                if (!set || set->empty())
                    error(c, "steering.cpus", "expected all, big, numa-local, cgroup:<path> or a cpulist, got '" + v + "'");
                choice.kind = CpuChoice::Kind::kList;
                choice.list = *set;
            }
            p.cpus = choice;
        }
        if (auto v = s["exclude_isolated"]) p.excludeIsolated = boolean(v, "steering.exclude_isolated");
        if (auto v = s["exclude_irq_cpus"]) p.excludeIrqCpus = boolean(v, "steering.exclude_irq_cpus");
        if (auto v = s["xps"]) p.xps = boolean(v, "steering.xps");
        if (auto v = s["default_mask"]) p.defaultMask = boolean(v, "steering.default_mask");
        if (auto r = s["rfs"]) {
            requireMap(r, "steering.rfs", {"flow_entries"});
            if (auto f = r["flow_entries"])
                p.flowEntries = static_cast<std::uint32_t>(integer(f, "steering.rfs.flow_entries", 0, 1 << 30));
        }
    }

private:
    std::string file_;
};

void mergeInto(Partial& base, const Partial& over) {
    auto take = [](auto& dst, const auto& src) {
        if (src) dst = src;
    };
    take(base.description, over.description);
    take(base.interfaces, over.interfaces);
    take(base.drivers, over.drivers);
    take(base.verdict, over.verdict);
    take(base.includeVirtual, over.includeVirtual);
    take(base.mode, over.mode);
    take(base.cpus, over.cpus);
    take(base.excludeIsolated, over.excludeIsolated);
    take(base.excludeIrqCpus, over.excludeIrqCpus);
    take(base.xps, over.xps);
    take(base.defaultMask, over.defaultMask);
    take(base.flowEntries, over.flowEntries);
    take(base.xdpNative, over.xdpNative);
    take(base.xdpQsize, over.xdpQsize);
    take(base.recommendDatapath, over.recommendDatapath);
    for (const auto& [k, v] : over.autoKeys) base.autoKeys[k] = v;
    take(base.autoCandidates, over.autoCandidates);
    for (const auto& s : profileSections()) {
        const std::string path = s.path();
        if (!over.sections.has(path)) continue;
        if (base.sections.has(path) && s.merge) s.merge(base.sections, over.sections);
        else base.sections.copyFrom(over.sections, path);
    }
}

Result<std::string> resolve(const std::string& nameOrPath, const std::string& relativeTo,
                            const std::vector<std::string>& searchPath) {
    namespace fs = std::filesystem;
    if (nameOrPath.empty()) return fail(EINVAL, "profile", "''", "expected a profile name or path, got an empty one");
    if (isProfilePath(nameOrPath)) {
        fs::path p(nameOrPath);
        if (p.is_relative() && !relativeTo.empty()) p = fs::path(relativeTo).parent_path() / p;
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) return fail(ENOENT, "profile", p.string(), "no such profile file");
        return fs::weakly_canonical(p, ec).string();
    }
    for (char c : nameOrPath)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'))
            return fail(EINVAL, "profile", nameOrPath, "a profile name has only letters, digits, '-' and '_'");
    for (const auto& dir : searchPath) {
        fs::path p = fs::path(dir) / (nameOrPath + ".yaml");
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
    }
    std::string dirs;
    for (const auto& d : searchPath) dirs += (dirs.empty() ? "" : ", ") + d;
    return fail(ENOENT, "profile", nameOrPath, "not found in " + dirs);
}

class Loader {
public:
    explicit Loader(const std::vector<std::string>& searchPath) : searchPath_(searchPath) {}

    // Loads one file's text and, first, everything it includes (parents before the child).
    Partial load(const std::string& text, const std::string& file, std::vector<std::string>& stack) {
        Parser parser(file);
        YAML::Node root;
        std::vector<std::pair<std::string, YAML::Node>> includes;
        Partial own;
        try {
            root = yamlcfg::loadDocument(text, "profile");
            own = parser.parse(root, includes);
        } catch (const YAML::ParserException& e) {
            throw ProfileError{{file, static_cast<unsigned>(e.mark.line + 1), static_cast<unsigned>(e.mark.column + 1)},
                               "", "malformed YAML: " + e.msg};
        } catch (const yamlcfg::ConfigError& e) {
            const bool placed = e.mark.line >= 0;
            throw ProfileError{{file, placed ? static_cast<unsigned>(e.mark.line + 1) : 0u,
                                placed ? static_cast<unsigned>(e.mark.column + 1) : 0u},
                               e.key, e.what};
        }
        Partial merged;
        stack.push_back(file);
        for (const auto& [name, node] : includes) {
            auto path = resolve(name, file, searchPath_);
            if (!path) parser.error(node, "include", path.error().message());
            if (std::find(stack.begin(), stack.end(), *path) != stack.end())
                parser.error(node, "include", "include cycle: '" + name + "' is already being loaded (" + *path + ")");
            auto text = yamlcfg::readDocumentFile(*path);
            if (!text) parser.error(node, "include", "cannot read " + *path + ": " + text.error().message());
            mergeInto(merged, load(*text, *path, stack));
        }
        stack.pop_back();
        files_.push_back(file);
        digest_.add(text);  // the texts alone: the kubelet's swap renames their directory, not them
        mergeInto(merged, own);
        return merged;
    }

    std::vector<std::string> files_;
    Digest digest_;

private:
    const std::vector<std::string>& searchPath_;
};

Profile finish(const Partial& p, std::string name, std::vector<std::string> files) {
    Profile out;
    out.name = std::move(name);
    out.files = std::move(files);
    out.description = p.description.value_or("");
    if (p.interfaces) out.match.interfaces = *p.interfaces;
    if (p.drivers) out.match.drivers = *p.drivers;
    if (p.verdict) out.match.verdict = *p.verdict;
    out.match.includeVirtual = p.includeVirtual.value_or(false);
    out.steering.mode = p.mode.value_or(SteeringMode::kRps);
    if (p.cpus) out.steering.cpus = *p.cpus;
    out.steering.excludeIsolated = p.excludeIsolated.value_or(true);
    out.steering.excludeIrqCpus = p.excludeIrqCpus.value_or(false);
    out.steering.xps = p.xps.value_or(true);
    out.steering.defaultMask = p.defaultMask.value_or(true);
    out.steering.flowEntries = p.flowEntries.value_or(32768);
    out.steering.xdpNative = p.xdpNative.value_or(false);
    out.steering.xdpQsize = p.xdpQsize.value_or(2048);
    out.recommendDatapath = p.recommendDatapath.value_or(false);
    auto& at = out.steering.autoThresholds;
    for (const auto& [k, v] : p.autoKeys) {
        if (k == "rx_share") at.onRxShare = v;
        else if (k == "busy") at.busyOn = v;
        else if (k == "min_spare") at.minSpare = v;
        else if (k == "worse_margin") at.worseMargin = v;
        else if (k == "gain_margin") at.gainMargin = v;
        else if (k == "sustain") at.sustainSeconds = v;
        else if (k == "interval") at.intervalSeconds = v;
        else if (k == "window") at.windowSeconds = v;
        else if (k == "backoff") at.backoffSeconds = v;
    }
    if (p.autoCandidates) at.candidates = *p.autoCandidates;
    out.sections = p.sections;
    return out;
}

Result<Profile> loadFrom(const std::string& text, const std::string& file, const std::string& name,
                         const std::vector<std::string>& searchPath) {
    Loader loader(searchPath);
    std::vector<std::string> stack;
    try {
        Partial merged = loader.load(text, file, stack);
        Profile p = finish(merged, name, loader.files_);
        p.digest = loader.digest_.hex();
        return p;
    } catch (const ProfileError& e) {
        return fail(EINVAL, e.key.empty() ? e.where.str() : e.where.str() + ": " + e.key, "", e.what);
    } catch (const YAML::Exception& e) {
        return fail(EINVAL, file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1), "",
                    e.msg);
    }
}

}  // namespace

const char* toString(SteeringMode m) {
    for (const auto& n : kSteeringModes)
        if (n.mode == m) return n.name;
    return "?";
}

std::optional<SteeringMode> steeringModeOf(std::string_view name) {
    for (const auto& n : kSteeringModes)
        if (name == n.name) return n.mode;
    return std::nullopt;
}

std::string CpuChoice::str() const {
    switch (kind) {
        case Kind::kAll: return "all";
        case Kind::kNumaLocal: return "numa-local";
        case Kind::kBig: return "big";
        case Kind::kList: return list.toList();
        case Kind::kCgroup: return "cgroup:" + cgroupPath;
    }
    return "?";
}

bool isProfilePath(const std::string& s) { return s.find('/') != std::string::npos || s.ends_with(".yaml"); }

std::vector<std::string> profileSearchPath() {
    std::vector<std::string> out;
    std::string dirs = RXTUNE_PROFILE_DIRS;
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t c = dirs.find(':', start);
        std::string d = dirs.substr(start, c == std::string::npos ? std::string::npos : c - start);
        if (!d.empty()) out.push_back(d);
        if (c == std::string::npos) break;
        start = c + 1;
    }
    return out;
}

Result<Profile> loadProfile(const std::string& nameOrPath, const std::vector<std::string>& searchPath) {
    auto path = resolve(nameOrPath, "", searchPath);
    if (!path) return failWith(path.error());
    auto text = yamlcfg::readDocumentFile(*path);
    if (!text) return failWith(text.error());
    std::string name = std::filesystem::path(*path).stem().string();
    return loadFrom(*text, *path, name, searchPath);
}

Result<Profile> loadProfileText(const std::string& text, const std::string& fileName,
                                const std::vector<std::string>& searchPath) {
    return loadFrom(text, fileName, std::filesystem::path(fileName).stem().string(), searchPath);
}

}  // namespace rxtune
