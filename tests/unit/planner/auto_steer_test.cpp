#include <catch2/catch.hpp>

#include "planner/auto_steer.hpp"

using namespace rxtune;

namespace {

// Four CPUs; CPU 0 receives. rx: CPU 0's (NET_RX share, busy); others: the other CPUs' busy.
AutoSample sample(double at, double pps, double rxNet, double rxBusy, double othersBusy, double drops = 0) {
    AutoSample s;
    s.at = at;
    s.deliveredPps = pps;
    s.drops = drops;
    s.cpus[0] = {rxBusy, rxNet};
    for (unsigned c = 1; c < 4; ++c) s.cpus[c] = {othersBusy, 0.02};
    return s;
}

const CpuSet kAll = CpuSet::range(0, 3);
const CpuSet kRxOnly = CpuSet::of({0});

AutoThresholds fast() {
    AutoThresholds t;
    t.sustain = 3;
    t.windowSeconds = 10;
    t.backoffSeconds = 60;
    return t;
}

}  // namespace

TEST_CASE("auto: a saturated receive CPU and idle others turn steering on after `sustain` samples", "[auto]") {
    AutoSteer a(fast());
    CHECK(a.step(sample(1, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly).decision.empty());
    CHECK(a.step(sample(2, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly).decision.empty());
    auto d = a.step(sample(3, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly);
    CHECK(d.decision == "enable");
    CHECK(d.reason == "saturated");
    CHECK(d.changed);
    CHECK(a.targets() == CpuSet::of({1, 2, 3}));  // the receive CPU left out
    CHECK(a.state() == AutoState::kTrial);
    CHECK(d.detail.find("100000 packets/s") != std::string::npos);
}

TEST_CASE("auto: an idle or merely busy receive CPU leaves steering off", "[auto]") {
    AutoSteer a(fast());
    for (int i = 1; i < 50; ++i) {
        CHECK(a.step(sample(i, 5000, 0.05, 0.1, 0.1), 0, kAll, kRxOnly).decision.empty());    // idle
        CHECK(a.step(sample(i, 5000, 0.10, 1.0, 0.1), 0, kAll, kRxOnly).decision.empty());    // busy, not with receive work
    }
    CHECK(a.state() == AutoState::kOff);
    CHECK(a.targets().empty());
}

TEST_CASE("auto: time_squeeze counts: a busy receive CPU out of budget with half the NET_RX share", "[auto]") {
    AutoSteer a(fast());
    auto squeezing = [](double at, double squeezes) {
        AutoSample s = sample(at, 100000, 0.35, 1.0, 0.2);
        s.cpus[0].squeezed = squeezes;
        return s;
    };
    for (int i = 1; i <= 5; ++i) CHECK(a.step(squeezing(i, 0), 0, kAll, kRxOnly).decision.empty());  // 35%: not enough alone
    a.step(squeezing(6, 500), 0, kAll, kRxOnly);
    a.step(squeezing(7, 500), 0, kAll, kRxOnly);
    auto d = a.step(squeezing(8, 500), 0, kAll, kRxOnly);
    CHECK(d.decision == "enable");
    CHECK(d.detail.find("500 squeezes/s") != std::string::npos);
}

TEST_CASE("auto: no flapping on noisy input: saturation must hold for `sustain` samples in a row", "[auto]") {
    AutoSteer a(fast());
    for (int i = 1; i < 60; ++i) {
        const bool hot = i % 3 != 0;  // two hot samples, one cool, repeated
        CHECK(a.step(sample(i, 90000, hot ? 0.9 : 0.2, hot ? 1.0 : 0.5, 0.2), 0, kAll, kRxOnly).decision.empty());
    }
    CHECK(a.state() == AutoState::kOff);
}

TEST_CASE("auto: busy targets: hold (said once), never steer onto them", "[auto]") {
    AutoSteer a(fast());
    int holds = 0;
    for (int i = 1; i < 20; ++i) {
        auto d = a.step(sample(i, 100000, 0.8, 1.0, 0.95), 0, kAll, kRxOnly);
        CHECK_FALSE(d.changed);
        if (d.decision == "hold") {
            ++holds;
            CHECK(d.reason == "no_spare_cpu");
            CHECK(d.detail.find("no other CPU has 25% idle") != std::string::npos);
        }
    }
    CHECK(holds == 1);
    CHECK(a.targets().empty());
}

TEST_CASE("auto: a change that helped is kept; with the load gone it stays on", "[auto]") {
    AutoSteer a(fast());
    for (int i = 1; i <= 3; ++i) a.step(sample(i, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly);
    REQUIRE(a.state() == AutoState::kTrial);
    for (int i = 4; i < 13; ++i) CHECK(a.step(sample(i, 150000, 0.4, 0.7, 0.5), 0, kAll, kRxOnly).decision.empty());
    auto d = a.step(sample(13, 150000, 0.4, 0.7, 0.5), 0, kAll, kRxOnly);
    CHECK(d.decision == "keep");
    CHECK(d.reason == "better");
    CHECK(d.detail.find("100000 -> 150000") != std::string::npos);
    CHECK_FALSE(d.changed);
    for (int i = 14; i < 100; ++i) CHECK(a.step(sample(i, 0, 0.0, 0.01, 0.01), 0, kAll, kRxOnly).decision.empty());
    CHECK(a.state() == AutoState::kOn);
    CHECK(a.targets() == CpuSet::of({1, 2, 3}));
}

TEST_CASE("auto: a change that made things worse is undone, held off, then retried", "[auto]") {
    AutoSteer a(fast());
    for (int i = 1; i <= 3; ++i) a.step(sample(i, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly);
    for (int i = 4; i < 13; ++i) a.step(sample(i, 60000, 0.5, 1.0, 1.0), 0, kAll, kRxOnly);
    auto d = a.step(sample(13, 60000, 0.5, 1.0, 1.0), 0, kAll, kRxOnly);
    CHECK(d.decision == "undo");
    CHECK(d.reason == "worse");
    CHECK(d.changed);
    CHECK(a.targets().empty());
    CHECK(a.state() == AutoState::kBackoff);
    // Saturated all through the back-off: no new attempt until it is over.
    for (int i = 14; i < 73; ++i) CHECK(a.step(sample(i, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly).decision.empty());
    auto r = a.step(sample(74, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly);
    CHECK(r.decision == "retry");
    CHECK(a.state() == AutoState::kOff);
    // The next attempt's "before" is measured afresh: only samples after the retry count.
    for (int i = 75; i <= 76; ++i) CHECK(a.step(sample(i, 80000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly).decision.empty());
    auto again = a.step(sample(77, 80000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly);
    CHECK(again.decision == "enable");
    CHECK(again.detail.find("before: 80000 packets/s") != std::string::npos);
}

TEST_CASE("auto: more drops with more delivered is kept (a deeper queue, not a loss)", "[auto]") {
    AutoSteer a(fast());
    for (int i = 1; i <= 3; ++i) a.step(sample(i, 360000, 0.8, 1.0, 0.1), 0, kAll, kRxOnly);
    for (int i = 4; i < 13; ++i) a.step(sample(i, 690000, 0.1, 1.0, 0.9, 15000), 0, kAll, kRxOnly);
    auto d = a.step(sample(13, 690000, 0.1, 1.0, 0.9, 15000), 0, kAll, kRxOnly);
    CHECK(d.decision == "keep");
    CHECK(a.rxCpuAtEnable() == 0);
}

TEST_CASE("auto: steering kept on, then its targets run out of room: undo", "[auto]") {
    AutoSteer a(fast());
    for (int i = 1; i <= 3; ++i) a.step(sample(i, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly);
    for (int i = 4; i <= 13; ++i) a.step(sample(i, 150000, 0.4, 0.7, 0.5), 0, kAll, kRxOnly);
    REQUIRE(a.state() == AutoState::kOn);
    // Other work takes the targets: they are full, less gets through, drops appear.
    CHECK(a.step(sample(14, 90000, 0.3, 0.6, 0.99, 5000), 0, kAll, kRxOnly).decision.empty());
    CHECK(a.step(sample(15, 90000, 0.3, 0.6, 0.99, 5000), 0, kAll, kRxOnly).decision.empty());
    auto d = a.step(sample(16, 90000, 0.3, 0.6, 0.99, 5000), 0, kAll, kRxOnly);
    CHECK(d.decision == "undo");
    CHECK(d.reason == "targets_busy");
    CHECK(a.targets().empty());
}

TEST_CASE("auto: SMT siblings of the receive CPU are left out when others remain", "[auto]") {
    AutoSteer a(fast());
    auto c = a.choose(sample(1, 1, 0.9, 1.0, 0.1), 0, kAll, CpuSet::of({0, 2}));
    CHECK(c.targets == CpuSet::of({1, 3}));
    CHECK(c.why.at(2) == "left out: SMT sibling of the receive CPU");
    CHECK(c.why.at(0).starts_with("left out: the receive CPU"));
    CHECK(c.why.at(1) == "chosen: 90% idle");
    // Only the sibling is left: it is used rather than nothing.
    auto two = a.choose(sample(1, 1, 0.9, 1.0, 0.1), 0, CpuSet::of({0, 2}), CpuSet::of({0, 2}));
    CHECK(two.targets == CpuSet::of({2}));
}

TEST_CASE("auto: samples from raw counters, BPF NET_RX time where both readings have it", "[auto]") {
    AutoRaw a, b;
    a.at = 10;
    b.at = 12;
    a.cpu[0] = {100, 1000, 10};
    b.cpu[0] = {250, 1200, 90};  // 150 of 200 jiffies busy, 80 softirq
    a.rxPackets["eth0"] = 1000;
    b.rxPackets["eth0"] = 21000;  // 10000/s
    a.softnetDrops = 5;
    b.softnetDrops = 2005;  // 1000/s
    auto s = autoSample(a, b, "eth0");
    CHECK(s.cpus.at(0).busy == Approx(0.75));
    CHECK(s.cpus.at(0).netRx == Approx(0.40));  // /proc/stat softirq share
    CHECK(s.deliveredPps == Approx(9000));
    CHECK(s.drops == Approx(1000));
    CHECK(s.cpus.at(0).squeezed == 0);  // no squeeze counters in these readings
    a.squeezes[0] = 10;
    b.squeezes[0] = 210;
    CHECK(autoSample(a, b, "eth0").cpus.at(0).squeezed == Approx(100));
    a.netRxNs[0] = 0;
    b.netRxNs[0] = 1'000'000'000;  // 1 s of NET_RX in 2 s
    CHECK(autoSample(a, b, "eth0").cpus.at(0).netRx == Approx(0.5));
    CHECK(busiestRxCpu(s) == 0);
}

TEST_CASE("auto: reloaded thresholds apply from the next sample; a kept change stays on", "[auto]") {
    AutoSteer a(fast());
    for (int i = 1; i <= 3; ++i) a.step(sample(i, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly);
    REQUIRE(a.state() == AutoState::kTrial);
    for (int i = 4; i <= 14; ++i) a.step(sample(i, 150000, 0.5, 1.0, 0.5), 0, kAll, kRxOnly);
    REQUIRE(a.state() == AutoState::kOn);
    AutoThresholds stricter = fast();
    stricter.onRxShare = 0.95;
    a.setThresholds(stricter);
    CHECK(a.thresholds().onRxShare == 0.95);
    CHECK(a.step(sample(15, 150000, 0.5, 1.0, 0.5), 0, kAll, kRxOnly).decision.empty());
    CHECK(a.state() == AutoState::kOn);
    CHECK(a.targets() == CpuSet::of({1, 2, 3}));

    // A machine that is off judges the next samples by the new share: 80 % is no longer saturated.
    AutoSteer b(fast());
    b.setThresholds(stricter);
    for (int i = 1; i <= 10; ++i) CHECK(b.step(sample(i, 100000, 0.8, 1.0, 0.2), 0, kAll, kRxOnly).decision.empty());
    CHECK(b.state() == AutoState::kOff);
}
