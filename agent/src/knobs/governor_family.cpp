// cpufreq governor: the first of the profile's list that the host offers, on every CPU.
#include <algorithm>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "knobs/path_key.hpp"
#include "knobs/governor_profile.hpp"
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

constexpr std::string_view kGovernorInfo = "rxtune_cpu_governor_info";

constexpr std::string_view kGovernorPrefix = "sys/devices/system/cpu/cpu";
constexpr std::string_view kGovernorFile = "/cpufreq/scaling_governor";

class GovernorFamily final : public KnobFamily {
public:
    std::vector<CounterSpec> gauges() const override { return {{std::string(kGovernorInfo), "cpufreq governor of the CPU; always 1"}}; }
    void exportSnapshot(const HostSnapshot& snap, GaugeSink& g) const override {
        for (const auto& [cpu, gov] : snap.host.governors) g.set(std::string(kGovernorInfo), {{"cpu", std::to_string(cpu)}, {"governor", gov}}, 1);
    }

    // detect: each CPU's governor, and those offered.
    void detectHostJson(const HostSnapshot& s, nlohmann::ordered_json& host) const override {
        const Topology& h = s.host;
        auto gov = nlohmann::ordered_json::object();
        for (const auto& [cpu, g] : h.governors) gov[std::to_string(cpu)] = g;
        host["cpufreq"] = {{"available", h.cpufreq}, {"governors", gov}, {"available_governors", h.availableGovernors}};
    }
    void detectHostText(const HostSnapshot& s, std::ostream& out) const override {
        const Topology& h = s.host;
        if (!h.cpufreq) {
            out << "  governor: cpufreq absent (no governor to set)\n";
            return;
        }
        std::map<std::string, CpuSet> byGov;
        for (const auto& [cpu, g] : h.governors) byGov[g].add(cpu);
        out << "  governor";
        for (const auto& [g, cpus] : byGov) out << " " << g << " on " << cpus.toList();
        out << "\n";
    }

    std::string_view name() const override { return "governor"; }
    std::string id(const KnobKey& k) const override { return "cpu" + std::to_string(k.cpu) + " governor"; }
    std::string path(const KnobKey& k) const override { return paths::cpuDir(static_cast<unsigned>(k.cpu)) + std::string(kGovernorFile); }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto rest = pathkey::after(p, kGovernorPrefix);
        if (!rest || !rest->ends_with(kGovernorFile)) return std::nullopt;
        auto cpu = pathkey::number(rest->substr(0, rest->size() - kGovernorFile.size()));
        if (!cpu) return std::nullopt;
        KnobKey k{"governor", "", "governor"};
        k.cpu = *cpu;
        return k;
    }

    Result<void> planLate(const PlanInput& in, Plan& p) const override {
        const Profile& profile = in.profile;
        const Topology& host = in.snap.host;
        const GovernorIntent* want = governorOf(profile);
        if (!want || want->names.empty()) return {};
        if (!host.cpufreq) {
            p.skipped.push_back({"cpu governor", "cpufreq is absent on this host: nothing to set"});
            return {};
        }
        std::string chosen;
        for (const auto& g : want->names)
            if (std::find(host.availableGovernors.begin(), host.availableGovernors.end(), g) != host.availableGovernors.end()) {
                chosen = g;
                break;
            }
        if (chosen.empty()) {
            std::string offered;
            for (const auto& a : host.availableGovernors) offered += a + " ";
            p.skipped.push_back({"cpu governor", "none of the profile's governors is available (available: " + joinFields(offered) + ")"});
            return {};
        }
        for (const auto& [cpu, gov] : host.governors) {
            KnobKey k{"governor", "", "governor"};
            k.cpu = static_cast<int>(cpu);
            p.settings.push_back(makeSetting(*this, k, ValueKind::kWord, gov, chosen, "profile " + want->where.str()));
        }
        return {};
    }
};

const GovernorFamily kGovernorFamily;
const FamilyRegistration kGovernorRegistered{kGovernorFamily, 300};

}  // namespace

}  // namespace rxtune
