// Interrupt coalescing (knobs/coalesce_family.cpp) against the fake ethtool netlink: the profile's
// keys, the plan (set, skipped with the driver's answer, advised), apply, verify and revert.
#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include <cstdio>
#include <fstream>
#include <tuple>

#include "../support/fixture.hpp"
#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "cli/detect_output.hpp"
#include "knobs/registry.hpp"

using namespace rxtune;

namespace {


Plan planOf(const test::TempTree& tree, const std::string& profile) {
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    return preparePlan(test::profileOf(profile), fs, nl).value().plan;
}

std::vector<std::string> coalesceLines(const Plan& p) {
    std::vector<std::string> out;
    for (const auto& s : p.settings)
        if (s.key.family == "coalesce") out.push_back(s.id + " " + s.current + " -> " + s.desired);
    for (const auto& s : p.skipped)
        if (s.id.find(" coalesce ") != std::string::npos) out.push_back("skip " + s.id + ": " + s.reason);
    return out;
}

void setCoalesce(test::TempTree& tree, const std::string& dev, const nlohmann::json& values) {
    auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
    for (auto& l : doc["links"])
        if (l["name"] == dev) l["coalesce"] = values;
    tree.put("netlink.json", doc.dump());
}

const char* kNone = "steering:\n  mode: none\n";

// The mlx5 fixture host (coalescing: rx_usecs 8, adaptive on) with its fake driver and a journal.
struct CoalesceRig {
    test::TempTree tree{"mlx5-one-channel"};
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fs{tree.path().string()};
    test::FakeNetlink nl{tree.path()};
    const Knobs knobs{fs, Services().with<NetlinkSource>(&nl)};
    JournalStore store{(state.path() / "state").string()};
    auto parts() { return std::tie(fs, nl, knobs, store); }
};

}  // namespace

TEST_CASE("coalesce: the profile's keys, checked where they stand, merged per key over an include", "[knobs][coalesce][profile]") {
    auto err = [](const std::string& text) { return loadProfileText(text, "bad.yaml", {}).error().message(); };
    CHECK(err("nic:\n  coalesce: {rx_usec: 5}\n").find("bad.yaml:2:14: nic.coalesce.rx_usec: unknown key (expected one of: adaptive_rx, "
                                                   "adaptive_tx, rx_frames, rx_usecs, tx_frames, tx_usecs)") == 0);
    CHECK(err("nic:\n  coalesce:\n    adaptive_rx: yes\n").find("bad.yaml:3:18: nic.coalesce.adaptive_rx: expected true or false, got 'yes'") == 0);
    CHECK(err("nic:\n  coalesce:\n    rx_usecs: -1\n").find("bad.yaml:3:15: nic.coalesce.rx_usecs: expected an integer from 0 to 4294967295") == 0);
    CHECK(err("nic:\n  coalesce: 5\n").find("bad.yaml:2:13: nic.coalesce: expected a mapping") == 0);
    CHECK(err("nic:\n  coalesce_x: {}\n").find("nic") != std::string::npos);

    test::TempTree dir{"vm-no-cpufreq"};
    dir.put("base.yaml", "nic:\n  coalesce: {rx_usecs: 50, rx_frames: 16}\n");
    dir.put("child.yaml", "include: base.yaml\nnic:\n  coalesce: {rx_usecs: 8, adaptive_rx: true}\n");
    auto p = loadProfile((dir.path() / "child.yaml").string(), {}).value();
    REQUIRE(p.sections.has("nic.coalesce"));
    // Planned on the igb fixture, which offers rx_usecs and tx_usecs only: the merged intent shows.
    test::TempTree igb{"igb-one-queue"};
    FileTree fs(igb.path().string());
    test::FakeNetlink nl(igb.path());
    auto plan = preparePlan(p, fs, nl).value().plan;
    CHECK(coalesceLines(plan) == std::vector<std::string>{"enp1s0 coalesce rx_usecs 3 -> 8",
                                                  "skip enp1s0 coalesce rx_frames: the driver does not offer rx_frames (ethtool -c shows it n/a)",
                                                  "skip enp1s0 coalesce adaptive_rx: the driver does not offer adaptive_rx (ethtool -c shows it n/a)"});
    REQUIRE_FALSE(plan.settings.empty());
    const auto& s = *std::find_if(plan.settings.begin(), plan.settings.end(), [](const Setting& x) { return x.key.family == "coalesce"; });
    CHECK(s.why.find("child.yaml:3:13 (nic.coalesce.rx_usecs), ethtool COALESCE_SET") != std::string::npos);
}

TEST_CASE("coalesce: only what the profile asks; a device without coalescing is skipped with the driver's answer", "[knobs][coalesce]") {
    test::TempTree mlx{"mlx5-one-channel"};
    // Nothing asked: nothing planned (the driver's values are its own).
    CHECK(coalesceLines(planOf(mlx, kNone)).empty());
    CHECK(coalesceLines(planOf(mlx, std::string(kNone) + "nic:\n  coalesce: {rx_usecs: 64, adaptive_rx: false, tx_frames: 32}\n")) ==
          std::vector<std::string>{"ens2f0np0 coalesce rx_usecs 8 -> 64", "ens2f0np0 coalesce tx_frames 32 -> 32",
                                   "ens2f0np0 coalesce adaptive_rx on -> off"});
    test::TempTree iso{"isolated-cpus-netns"};
    CHECK(coalesceLines(planOf(iso, "match:\n  interfaces: [veth0]\n  virtual: include\nsteering:\n  mode: none\nnic:\n  coalesce: {rx_usecs: 8}\n")) ==
          std::vector<std::string>{"skip veth0 coalesce rx_usecs: the driver has no coalescing to set (Operation not supported)"});
}

TEST_CASE("coalesce: adaptive RX advised where the driver offers it off and the RX IRQ's CPU is squeezed", "[knobs][coalesce]") {
    test::TempTree r8{"r8125-irqbalance"};
    setCoalesce(r8, "enp3s0", {{"rx_usecs", 0}, {"adaptive_rx", false}});
    auto adaptive = [](const Plan& p) {
        std::vector<std::string> out;
        for (const auto& a : p.advice)
            if (a.text.find("adaptive RX") != std::string::npos) out.push_back(a.text);
        return out;
    };
    CHECK(adaptive(planOf(r8, kNone)).empty());  // no squeezes yet
    std::string softnet;
    for (unsigned cpu = 0; cpu < 8; ++cpu) {
        char row[160];
        std::snprintf(row, sizeof row, "000f4240 00000000 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %08x\n",
                      cpu == 4 ? 321u : cpu == 1 ? 999u : 0u, cpu);
        softnet += row;
    }
    r8.put("proc/net/softnet_stat", softnet);
    const auto advised = adaptive(planOf(r8, kNone));
    REQUIRE(advised.size() == 1);
    CHECK(advised[0] == "adaptive RX coalescing is off while softnet counts 321 squeezes on CPU(s) 4, which take its RX IRQ: the driver can batch "
                        "interrupts under load and answer at once when idle (nic.coalesce.adaptive_rx: true)");
    CHECK(planOf(r8, kNone).pendingCount() == 0);  // advice sets nothing
    // Asked for either way: no advice, the profile's word stands.
    CHECK(adaptive(planOf(r8, std::string(kNone) + "nic:\n  coalesce: {adaptive_rx: false}\n")).empty());
    // A driver without adaptive RX: nothing to advise.
    setCoalesce(r8, "enp3s0", {{"rx_usecs", 0}});
    CHECK(adaptive(planOf(r8, kNone)).empty());
}

TEST_CASE("coalesce: set through ethtool, read back, verified, reverted to the driver's values", "[knobs][coalesce][apply]") {
    CoalesceRig rig;
    auto [fs, nl, knobs, store] = rig.parts();
    const auto profile = test::profileOf(std::string(kNone) + "nic:\n  coalesce: {rx_usecs: 64, adaptive_rx: false}\n");
    const EthtoolMessage coalesce{"coalesce", 0, 0, 0, {}};
    auto plan = preparePlan(profile, fs, nl).value().plan;
    REQUIRE(applyPlan(plan, knobs, store, "t1"));
    CHECK(nl.ethtoolGet(coalesce, "ens2f0np0").value().values.at("rx_usecs") == 64);
    CHECK(nl.ethtoolGet(coalesce, "ens2f0np0").value().values.at("adaptive_rx") == 0);
    CHECK(nl.ethtoolSets == 2);
    // Again: nothing to write; verify holds; the journal has the typed keys.
    CHECK(preparePlan(profile, fs, nl).value().plan.pendingCount() == 0);
    const Journal j = store.load().value().value();
    CHECK(verifyApplied(j, knobs).value().empty());
    std::ifstream in(store.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("\"key\": {\"family\": \"coalesce\", \"device\": \"ens2f0np0\", \"name\": \"adaptive_rx\"}") != std::string::npos);
    // Someone else changes it: verify says so.
    REQUIRE(nl.ethtoolSet(coalesce, "ens2f0np0", {{"rx_usecs", 5}}));
    CHECK(verifyApplied(j, knobs).value().size() == 1);
    REQUIRE(revertAll(knobs, store));
    CHECK(nl.ethtoolGet(coalesce, "ens2f0np0").value().values.at("rx_usecs") == 8);
    CHECK(nl.ethtoolGet(coalesce, "ens2f0np0").value().values.at("adaptive_rx") == 1);
    CHECK_FALSE(store.load().value().has_value());
}

TEST_CASE("coalesce: a driver that refuses the values fails the apply, which undoes what it wrote", "[knobs][coalesce][apply]") {
    CoalesceRig rig;
    auto [fs, nl, knobs, store] = rig.parts();
    auto plan = preparePlan(test::profileOf(std::string(kNone) + "nic:\n  coalesce: {rx_usecs: 64, tx_usecs: 99999}\n"), fs, nl).value().plan;
    nl.ethtoolErrno["ens2f0np0"] = EINVAL;
    auto r = applyPlan(plan, knobs, store, "t1");
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("ens2f0np0 coalesce rx_usecs") != std::string::npos);
    CHECK(nl.ethtoolGet({"coalesce", 0, 0, 0, {}}, "ens2f0np0").value().values.at("rx_usecs") == 8);
    CHECK_FALSE(store.load().value().has_value());
}
