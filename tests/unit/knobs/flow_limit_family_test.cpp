// The RPS flow limit family (knobs/flow_limit_family.cpp): what it plans from the steering, where
// it stands aside, and the backlog depth it plans beside. Its round trip, undo and journal are the
// conformance suite's (conformance/flow_limit_fixture.cpp); its writes on a real kernel are
// tests/vm/flow_limit_kernel.py's (this VM's kernel has no CONFIG_NET_FLOW_LIMIT).
#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include <algorithm>

#include "../support/fixture.hpp"
#include "apply/lifecycle.hpp"
#include "apply/prepare.hpp"
#include "sys/clock.hpp"

using namespace rxtune;

namespace {


// The story's host (20 CPUs, enp2s0's one RX IRQ on CPU 3) with the kernel's flow limit.
struct FlowLimitHost {
    test::TempTree tree{"story-20cpu-single-queue"};
    explicit FlowLimitHost(const std::string& bitmap = "00000") {
        if (!bitmap.empty()) tree.put("proc/sys/net/core/flow_limit_cpu_bitmap", bitmap + "\n");
    }
    Plan plan(const Profile& p) {
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        return preparePlan(p, fs, nl).value().plan;
    }
};

const Setting* at(const Plan& p, const std::string& id) {
    auto it = std::find_if(p.settings.begin(), p.settings.end(), [&](const Setting& s) { return s.id == id; });
    return it == p.settings.end() ? nullptr : &*it;
}
std::string skipOf(const Plan& p, const std::string& id) {
    for (const auto& s : p.skipped)
        if (s.id == id) return s.reason;
    return {};
}
bool advised(const Plan& p, const std::string& text) {
    return std::any_of(p.advice.begin(), p.advice.end(), [&](const Advice& a) { return a.text.find(text) != std::string::npos; });
}

const std::string kBitmap = "sysctl net.core.flow_limit_cpu_bitmap";
const std::string kLen = "sysctl net.core.flow_limit_table_len";

}  // namespace

TEST_CASE("flow limit: the RPS targets and the RX CPU, the table length before the bitmap", "[knobs][flow_limit]") {
    FlowLimitHost h;
    auto p = h.plan(test::profileOf("steering:\n  mode: rps\n  cpus: 8-11\n  flow_limit: {table_len: 8192}\n"));
    const Setting* bitmap = at(p, kBitmap);
    const Setting* len = at(p, kLen);
    REQUIRE(bitmap);
    REQUIRE(len);
    CHECK(bitmap->key.family == "flow_limit");
    CHECK(bitmap->desired == CpuSet::of({3, 8, 9, 10, 11}).toMask());  // CPU 3 serves enp2s0's RX IRQ
    CHECK(bitmap->current == "0");
    CHECK(bitmap->why.find("enp2s0: its RPS targets and RX CPUs 3,8-11") != std::string::npos);
    CHECK(len->desired == "8192");
    CHECK(len->current == "4096");
    CHECK(len < bitmap);  // the kernel sizes a CPU's table when the CPU enters the bitmap
}

TEST_CASE("flow limit: planned beside the backlog it acts in", "[knobs][flow_limit]") {
    FlowLimitHost h;
    SECTION("the story's 300000: it acts past 150000 packets, and the plan advises on it") {
        auto p = h.plan(test::profileOf("steering:\n  mode: rps\n  flow_limit: true\nsysctl:\n  net.core.netdev_max_backlog: 300000\n"));
        REQUIRE(at(p, kBitmap));
        CHECK(at(p, kBitmap)->why.find("more than 150000 packets (netdev_max_backlog 300000 / 2)") != std::string::npos);
        CHECK(advised(p, "acts only once a CPU's backlog holds 150000 packets"));
        CHECK_FALSE(at(p, kLen));  // not asked: the kernel's length stays
    }
    SECTION("a shallow backlog: no advice") {
        auto p = h.plan(test::profileOf("steering:\n  mode: rps\n  flow_limit: true\nsysctl:\n  net.core.netdev_max_backlog: 2000\n"));
        REQUIRE(at(p, kBitmap));
        CHECK(at(p, kBitmap)->why.find("more than 1000 packets") != std::string::npos);
        CHECK_FALSE(advised(p, "steering.flow_limit"));
    }
    SECTION("the host's backlog where the profile sets none") {
        auto p = h.plan(test::profileOf("steering:\n  mode: rps\n  flow_limit: true\n"));
        CHECK(at(p, kBitmap)->why.find("more than 500 packets (netdev_max_backlog 1000 / 2)") != std::string::npos);
    }
}

TEST_CASE("flow limit: where it stands aside", "[knobs][flow_limit]") {
    SECTION("false or absent: nothing") {
        FlowLimitHost h;
        for (const char* yaml : {"steering:\n  mode: rps\n  flow_limit: false\n", "steering:\n  mode: rps\n",
                                 "steering:\n  mode: rps\n  flow_limit: {enabled: false, table_len: 64}\n"}) {
            auto p = h.plan(test::profileOf(yaml));
            CHECK_FALSE(at(p, kBitmap));
            CHECK_FALSE(at(p, kLen));
            CHECK(skipOf(p, kBitmap).empty());
        }
    }
    SECTION("no device steered by RPS (threaded NAPI polls without the backlog)") {
        FlowLimitHost h;
        auto p = h.plan(test::profileOf("steering:\n  mode: napi\n  flow_limit: true\n"));
        CHECK_FALSE(at(p, kBitmap));
        CHECK(skipOf(p, kBitmap).find("no device here is steered by RPS") == 0);
    }
    SECTION("a kernel without CONFIG_NET_FLOW_LIMIT (this VM's), or another network namespace") {
        FlowLimitHost h("");
        auto p = h.plan(test::profileOf("steering:\n  mode: rps\n  flow_limit: true\n"));
        CHECK_FALSE(at(p, kBitmap));
        CHECK(skipOf(p, kBitmap).find("the kernel has no flow limit here") == 0);
    }
    SECTION("the profile's own sysctl wins, and the plan says so") {
        FlowLimitHost h;
        auto p = h.plan(test::profileOf("steering:\n  mode: rps\n  flow_limit: true\nsysctl:\n  net.core.flow_limit_cpu_bitmap: 1\n"));
        REQUIRE(at(p, kBitmap));
        CHECK(at(p, kBitmap)->key.family == "sysctl");
        CHECK(std::count_if(p.settings.begin(), p.settings.end(), [](const Setting& s) { return s.id == kBitmap; }) == 1);
        CHECK(skipOf(p, "steering.flow_limit").find("the profile sets sysctl net.core.flow_limit_cpu_bitmap itself") == 0);
    }
}

namespace {
struct NoSignals : ProcessSignals {
    Result<void> hangUp(int, const std::string&) override { return {}; }
};
}  // namespace

TEST_CASE("flow limit: an event's plan keeps the CPUs of the devices it does not cover", "[knobs][flow_limit][daemon]") {
    FlowLimitHost h("80000");  // CPU 19: another device's RPS target, put there by the last whole-host run
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fs(h.tree.path().string());
    JournalStore store((state.path() / "state").string());
    NoSignals signals;
    SystemClock clock;
    Lifecycle life(fs, store, "", signals, clock, [](const char*, const std::string&) {}, true);
    const Profile profile = test::profileOf("steering:\n  mode: rps\n  cpus: 8-11\n  flow_limit: true\n");
    test::FakeNetlink nl(h.tree.path());
    auto whole = life.plan(profile, nl, {}, true);
    REQUIRE(whole);
    CHECK(at(whole->plan, kBitmap)->desired == CpuSet::of({3, 8, 9, 10, 11}).toMask());
    auto event = life.plan(profile, nl, {}, false);
    REQUIRE(event);
    CHECK(at(event->plan, kBitmap)->desired == CpuSet::of({3, 8, 9, 10, 11, 19}).toMask());
    CHECK(at(event->plan, kBitmap)->why.find("the CPUs of devices this run did not plan are kept") != std::string::npos);
}
