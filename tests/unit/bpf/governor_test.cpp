#include <catch2/catch.hpp>

#include "bpf/governor.hpp"

using namespace rxtune;
using Action = GovernorStep::Action;

TEST_CASE("governor: pauses above the rate, names the CPU, resumes after calm samples at half of it", "[bpf][governor]") {
    BpfGovernor g(100000, 3);
    CHECK(g.step(0, {{0, 0}, {1, 0}}, true).action == Action::kNone);  // first sample: no rate yet
    auto low = g.step(1, {{0, 50000}, {1, 1000}}, true);
    CHECK(low.action == Action::kNone);
    CHECK(low.cpu == 0);
    CHECK(low.rate == Approx(50000));
    auto high = g.step(2, {{0, 50000 + 20000}, {1, 1000 + 750000}}, true);
    CHECK(high.action == Action::kPause);
    CHECK(high.cpu == 1);
    CHECK(high.rate == Approx(750000));
    CHECK(high.detail.find("CPU 1 runs 750000 NET_RX softirqs/s, above bpf_max_softirq_rate 100000") == 0);

    // Paused: 60000/s is under the limit but over half of it: stays paused.
    std::uint64_t n = 751000;
    for (double t = 3; t < 10; ++t) {
        n += 60000;
        CHECK(g.step(t, {{0, 70000}, {1, n}}, false).action == Action::kNone);
    }
    // Two quiet samples, a loud one (the count starts again), then three quiet ones.
    CHECK(g.step(10, {{0, 70000}, {1, n += 1000}}, false).action == Action::kNone);
    CHECK(g.step(11, {{0, 70000}, {1, n += 1000}}, false).action == Action::kNone);
    CHECK(g.step(12, {{0, 70000}, {1, n += 90000}}, false).action == Action::kNone);
    CHECK(g.step(13, {{0, 70000}, {1, n += 1000}}, false).action == Action::kNone);
    CHECK(g.step(14, {{0, 70000}, {1, n += 1000}}, false).action == Action::kNone);
    auto back = g.step(15, {{0, 70000}, {1, n += 1000}}, false);
    CHECK(back.action == Action::kResume);
    CHECK(back.detail.find("resumed") != std::string::npos);
}

TEST_CASE("governor: a CPU that appears or a counter that goes back is not a rate", "[bpf][governor]") {
    BpfGovernor g(1000, 1);
    g.step(0, {{0, 100}}, true);
    CHECK(g.step(1, {{0, 150}, {1, 99999999}}, true).action == Action::kNone);  // CPU 1 new
    CHECK(g.step(2, {{0, 10}, {1, 99999999}}, true).action == Action::kNone);   // CPU 0 went back
    CHECK(g.step(2, {{0, 999999}, {1, 99999999}}, true).action == Action::kNone);  // no time passed
    CHECK(g.step(3, {{0, 999999 + 1001}, {1, 99999999}}, true).action == Action::kPause);
}
