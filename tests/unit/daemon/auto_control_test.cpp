#include <catch2/catch.hpp>

#include "../support/fixture.hpp"
#include "daemon/auto_control.hpp"
#include "inventory/snapshot.hpp"
#include "planner/planner.hpp"

using namespace rxtune;

namespace {

// The story's host; its NIC's receive CPU runs flat out in NET_RX, the others idle. Every call is
// one second later with `pps` more delivered.
struct AutoHost {
    test::TempTree tree;
    FileTree fs{tree.path().string()};
    test::FakeNetlink nl{tree.path()};
    HostSnapshot snap = takeSnapshot(fs, nl, {}).value();
    unsigned rx = 0;
    AutoRaw raw;

    explicit AutoHost(const std::string& scenario = "story-20cpu-single-queue", const std::string& name = "enp2s0") : tree(scenario) {
        const Nic& nic = snap.nics.front().name == name ? snap.nics.front() : snap.nics.back();
        auto irq = irqCpus(nic).cpus();
        if (!irq.empty()) rx = irq.front();
        raw.stack = StackCounters{};
        for (unsigned c : snap.host.online.cpus()) raw.cpu[c] = {};
    }
    AutoRaw next(double pps) {
        raw.at += 1;
        for (auto& [cpu, j] : raw.cpu) {
            j.total += 100;
            if (cpu == rx) {
                j.busy += 100;
                j.softirq += 90;
            }
        }
        raw.stack->delivered += static_cast<std::uint64_t>(pps);
        return raw;
    }
};

Profile autoProfile() {
    auto p = loadProfile("single-queue-gateway", {std::getenv("RXTUNE_PROFILES")}).value();
    p.steering.mode = SteeringMode::kAuto;
    p.steering.autoThresholds.sustainSeconds = 2;
    p.steering.autoThresholds.candidates = {SteeringMode::kXdp, SteeringMode::kRps};
    return p;
}

}  // namespace

TEST_CASE("auto control: a saturated receive CPU is steered; a candidate that cannot be put in place is skipped",
          "[daemon][auto]") {
    AutoHost host;
    Metrics metrics("test");
    AutoControl control(metrics);
    const Profile profile = autoProfile();
    const std::vector<std::string> steered{"enp2s0"};
    std::vector<AutoInputs> applies;
    // The first candidate (XDP) fails to apply, as it would with someone else's program on the
    // device; the next (RPS) is put in place at once, in the same sample.
    auto apply = [&](const AutoInputs& in) {
        applies.push_back(in);
        return in.modes.at("enp2s0") != SteeringMode::kXdp;
    };
    for (int i = 0; i < 6 && applies.size() < 2; ++i) control.step(profile, host.fs, host.snap, host.next(100000), steered, apply);
    REQUIRE(applies.size() == 2);
    CHECK(applies[0].modes.at("enp2s0") == SteeringMode::kXdp);
    CHECK(applies[1].modes.at("enp2s0") == SteeringMode::kRps);
    CHECK_FALSE(applies[1].targets.at("enp2s0").empty());
    CHECK_FALSE(applies[1].targets.at("enp2s0").contains(host.rx));  // steered away from the receive CPU
    const AutoSteer* m = control.machine("enp2s0");
    REQUIRE(m);
    CHECK(m->state() == AutoState::kTrial);
    CHECK(control.inputs().modes.at("enp2s0") == SteeringMode::kRps);
    // Leaving mode auto forgets the machines and what they decided.
    control.clear();
    CHECK(control.machine("enp2s0") == nullptr);
    CHECK(control.inputs().targets.empty());
}

TEST_CASE("auto control: an idle host is left alone", "[daemon][auto]") {
    AutoHost host;
    host.rx = 9999;  // no CPU busy
    Metrics metrics("test");
    AutoControl control(metrics);
    int applies = 0;
    for (int i = 0; i < 6; ++i)
        control.step(autoProfile(), host.fs, host.snap, host.next(1000), {"enp2s0"}, [&](const AutoInputs&) {
            ++applies;
            return true;
        });
    CHECK(applies == 0);
    REQUIRE(control.machine("enp2s0"));
    CHECK(control.machine("enp2s0")->state() == AutoState::kOff);
}

TEST_CASE("auto control: on big and little cores every trial gets its apply; all failing ends in one undo", "[daemon][auto][capacity]") {
    AutoHost host("gb10-big-little", "enP7s7");
    REQUIRE(host.rx == 7);  // the RTL8127's IRQ, on a little core
    Metrics metrics("test");
    AutoControl control(metrics);
    const Profile profile = autoProfile();
    std::vector<AutoInputs> applies;
    // Nothing can be put in place: xdp_big, xdp, rps_big, rps are each tried, then all undone.
    auto apply = [&](const AutoInputs& in) {
        applies.push_back(in);
        return in.targets.at("enP7s7").empty();
    };
    for (int i = 0; i < 6 && applies.empty(); ++i) control.step(profile, host.fs, host.snap, host.next(100000), {"enP7s7"}, apply);
    REQUIRE(applies.size() == 5);
    const CpuSet big = *CpuSet::parseList("0-4,10-14");
    CHECK(applies[0].modes.at("enP7s7") == SteeringMode::kXdp);
    CHECK((applies[0].targets.at("enP7s7") - big).empty());
    CHECK_FALSE((applies[1].targets.at("enP7s7") - big).empty());
    CHECK(applies[2].modes.at("enP7s7") == SteeringMode::kRps);
    CHECK((applies[2].targets.at("enP7s7") - big).empty());
    CHECK(applies[4].targets.at("enP7s7").empty());
    REQUIRE(control.machine("enP7s7"));
    CHECK(control.machine("enP7s7")->state() == AutoState::kBackoff);
}

TEST_CASE("auto: plan --explain lists the trials in the order the daemon runs them, big cores first", "[daemon][auto][capacity]") {
    AutoHost host("gb10-big-little", "enP7s7");
    const Profile profile = autoProfile();
    const AutoRaw before = host.next(100000);
    const AutoRaw after = host.next(100000);
    auto in = decideAutoOnce(profile, host.fs, host.snap, {"enP7s7"}, before, after);
    REQUIRE(in);
    std::string explained;
    for (const auto& l : in->explain.at("enP7s7")) explained += l + "\n";
    INFO(explained);
    // The daemon's machine, stepped over the same readings, queues the same trials.
    Metrics metrics("test");
    AutoControl control(metrics);
    AutoHost same("gb10-big-little", "enP7s7");
    for (int i = 0; i < 4; ++i) control.step(profile, same.fs, same.snap, same.next(100000), {"enP7s7"}, [](const AutoInputs&) { return true; });
    REQUIRE(control.machine("enP7s7"));
    REQUIRE(control.machine("enP7s7")->trials().size() == 4);
    const std::string order = trialOrderText(control.machine("enP7s7")->trials());
    CHECK(order.starts_with("xdp_big (CPUs "));
    CHECK(explained.find("trials (steering.auto.candidates), in the daemon's order (by prediction): " + order + ", ") != std::string::npos);
}
