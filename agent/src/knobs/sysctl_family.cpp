// sysctls: the profile's `sysctl:` section (set, or only raised / only lowered) and the RFS flow
// table (net.core.rps_sock_flow_entries) that RPS steering needs.
#include <algorithm>
#include <iomanip>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "knobs/path_key.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/busypoll_profile.hpp"
#include "knobs/registry.hpp"
#include "knobs/sysctl_profile.hpp"

namespace rxtune {

namespace {

constexpr std::string_view kSysctlPrefix = "proc/sys/";

std::vector<std::int64_t> numbersOf(const std::string& v) {
    std::vector<std::int64_t> out;
    for (const auto& f : splitFields(v)) {
        std::int64_t n = 0;
        if (!parseSigned(f, n)) return {};
        out.push_back(n);
    }
    return out;
}

std::string joinNumbers(const std::vector<std::int64_t>& v) {
    std::string out;
    for (auto n : v) {
        if (!out.empty()) out += ' ';
        out += std::to_string(n);
    }
    return out;
}

bool knownHostGlobal(const std::string& key) {
    for (const auto& s : managedSysctls())
        if (key == s.key) return s.hostGlobal;
    return false;
}

class SysctlFamily final : public KnobFamily {
public:
    // detect: every sysctl read (the managed set, and those a profile named).
    void detectHostJson(const HostSnapshot& s, nlohmann::ordered_json& host) const override {
        auto sys = nlohmann::ordered_json::array();
        for (const auto& v : s.host.sysctls) {
            nlohmann::ordered_json e = {{"key", v.key}, {"host_global", v.hostGlobal}, {"present", v.present}, {"writable", v.writable}};
            e["value"] = v.present ? nlohmann::ordered_json(v.value) : nlohmann::ordered_json(nullptr);
            sys.push_back(std::move(e));
        }
        host["sysctls"] = std::move(sys);
    }
    void detectHostText(const HostSnapshot& s, std::ostream& out) const override {
        out << "  sysctls\n";
        for (const auto& v : s.host.sysctls)
            out << "    " << std::left << std::setw(32) << v.key << " " << std::setw(24) << (v.present ? v.value : std::string("(absent)"))
                << (v.hostGlobal ? " host-global" : " per-netns") << "\n";
    }

    std::string_view name() const override { return "sysctl"; }
    std::string id(const KnobKey& k) const override { return "sysctl " + k.name; }
    std::string path(const KnobKey& k) const override { return paths::sysctl(k.name); }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto rest = pathkey::after(p, kSysctlPrefix);
        if (!rest || rest->empty()) return std::nullopt;
        std::string key(*rest);
        std::replace(key.begin(), key.end(), '/', '.');
        return KnobKey{"sysctl", "", key};
    }
    bool keysAreATree() const override { return true; }  // a file another family owns is its

    // The sysctls the profile names beyond those every snapshot reads (absent ones marked so).
    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        std::vector<std::string> keys;
        for (const auto& [k, v] : sysctlsOf(profile)) keys.push_back(k);
        return addSysctls(io.fs, snap.host, keys);
    }

    Result<void> planHost(const PlanInput& in, Plan& p) const override {
        const Topology& host = in.snap.host;
        const Profile& profile = in.profile;
        std::map<std::string, std::pair<std::string, std::string>> desired;  // key -> (value, why)
        for (const auto& [key, want] : sysctlsOf(profile)) {
            const SysctlValue* cur = findSysctl(host, key);
            if (!cur || !cur->present) {
                if (knownHostGlobal(key) && !host.initialNetns) {
                    p.skipped.push_back({"sysctl " + key, "host-global sysctl, absent in this (non-initial) network namespace"});
                    continue;
                }
                return failWith(profileError(want.where, "sysctl." + key, "no such sysctl on this host"));
            }
            if (!cur->writable) {
                p.skipped.push_back({"sysctl " + key, "read-only here (inside a non-initial network namespace the kernel "
                                                      "shows the host's value)"});
                continue;
            }
            auto now = numbersOf(cur->value);
            if (now.size() != want.values.size())
                return failWith(profileError(want.where, "sysctl." + key,
                                             "the kernel holds " + std::to_string(now.size()) + " number(s) ('" + cur->value +
                                                 "'), the profile gives " + std::to_string(want.values.size())));
            std::vector<std::int64_t> v = want.values;
            for (size_t i = 0; i < v.size(); ++i) {
                if (want.guard == Guard::kAtLeast) v[i] = std::max(v[i], now[i]);
                if (want.guard == Guard::kAtMost) v[i] = std::min(v[i], now[i]);
            }
            const char* guard = want.guard == Guard::kAtLeast ? " (only raised)" : want.guard == Guard::kAtMost ? " (only lowered)" : "";
            desired[key] = {joinNumbers(v), "profile " + want.where.str() + guard};
        }
        // auto keeps the RFS table ready for whichever interface it turns RPS on for.
        const bool rpsAnywhere = profile.steering.mode == SteeringMode::kRps || profile.steering.mode == SteeringMode::kAuto ||
                                 (profile.steering.mode == SteeringMode::kBusyPoll && profile.sectionOr(kBusyPoll).rpsFanout);
        if (rpsAnywhere && !in.nics.empty() && !sysctlsOf(profile).count("net.core.rps_sock_flow_entries")) {
            const std::string key = "net.core.rps_sock_flow_entries";
            const std::uint32_t entries = flowTableSize(profile.steering.flowEntries);
            const SysctlValue* cur = findSysctl(host, key);
            if (cur && cur->present && cur->writable)
                desired[key] = {std::to_string(entries), entries ? "RFS flow table (steering.rfs.flow_entries)" : "RFS off"};
            else
                p.skipped.push_back({"sysctl " + key, "host-global sysctl, absent in this (non-initial) network namespace"});
        }
        for (const auto& [key, dv] : desired) {
            const SysctlValue* cur = findSysctl(host, key);
            const ValueKind kind = numbersOf(cur->value).size() > 1 ? ValueKind::kNumbers : ValueKind::kInteger;
            p.settings.push_back(makeSetting(*this, {"sysctl", "", key}, kind, normalise(kind, cur->value), dv.first, dv.second));
        }
        return {};
    }
};

const SysctlFamily kSysctlFamily;
const FamilyRegistration kSysctlRegistered{kSysctlFamily, 100};

}  // namespace

}  // namespace rxtune
