#include <catch2/catch.hpp>

#include <sstream>

#include "cli/status.hpp"

using namespace rxtune;

namespace {

// Two readings one second apart: CPU 0 spends 60 % in softirq and is 100 % busy, CPU 1 idles.
std::pair<StatusRaw, StatusRaw> readings() {
    StatusRaw a, b;
    a.at = 10;
    b.at = 11;
    a.cpu[0] = {1000, 2000, 100};
    b.cpu[0] = {1100, 2100, 160};
    a.cpu[1] = {1000, 2000, 0};
    b.cpu[1] = {1002, 2100, 0};
    a.softnet[0].processed = 4294967000u;  // wraps within the interval
    b.softnet[0].processed = 200000;
    b.softnet[0].timeSqueeze = 12;
    a.softnet[1] = b.softnet[1] = {};
    a.rxPackets["fb"] = 1000;
    b.rxPackets["fb"] = 251000;
    return {a, b};
}

}  // namespace

TEST_CASE("status: per-CPU shares, rates across a counter wrap, the hot CPU", "[status]") {
    auto [a, b] = readings();
    StatusInputs in;
    in.profile = "single-queue-gateway";
    in.appliedAt = "2026-11-30T15:00:00Z";
    in.drifted = 0;
    in.steered["fb"] = {"rps", "1"};
    const StatusSample s = makeStatus(a, b, in);
    REQUIRE(s.cpus.size() == 2);
    CHECK(s.cpus[0].busy == Approx(1.0));
    CHECK(s.cpus[0].softirq == Approx(0.6));
    CHECK(s.cpus[0].packets == Approx(200000 + 296));
    CHECK(s.cpus[0].squeezes == Approx(12));
    REQUIRE(s.hot);
    CHECK(*s.hot == 0);
    REQUIRE(s.ifaces.size() == 1);
    CHECK(s.ifaces[0].rxPps == Approx(250000));
    const auto j = statusJson(s);
    CHECK(j["hot_cpu"] == 0);
    CHECK(j["in_sync"] == true);
    CHECK(j["interfaces"][0]["mode"] == "rps");
}

TEST_CASE("status: the daemon's view adds mode auto's state, its decision and BPF's NET_RX", "[status]") {
    auto [a, b] = readings();
    StatusInputs in;
    in.daemon = nlohmann::json::parse(R"({"pid": 77, "interfaces": {"fb": {"auto_state": "on", "mode": "xdp", "targets": "1",
        "last_decision": {"decision": "keep", "reason": "better", "detail": "none 131926, rps 261303, xdp 270000 packets/s delivered: keeping xdp (2.05x none) and a long tail of words"}}},
        "bpf_net_rx_share": {"0": 0.48, "1": 0.02}})");
    const StatusSample s = makeStatus(a, b, in);
    CHECK(s.daemonPid == 77);
    REQUIRE(s.cpus[0].netRx);
    CHECK(*s.cpus[0].netRx == Approx(0.48));
    REQUIRE(s.ifaces.size() == 1);
    CHECK(s.ifaces[0].mode == "xdp");
    CHECK(s.ifaces[0].autoState == "on");
    const std::string screen = renderStatus(s, 80);
    INFO(screen);
    std::istringstream lines(screen);
    for (std::string l; std::getline(lines, l);) CHECK(l.size() <= 80);
    CHECK(screen.find("NET_RX (BPF)") != std::string::npos);
    CHECK(screen.find("daemon pid 77") != std::string::npos);
    CHECK(screen.find("[######......] 48%") != std::string::npos);
    CHECK(screen.find("<- hot") != std::string::npos);
    CHECK(screen.find("keep (better)") != std::string::npos);
    CHECK(screen.find("profile: none applied") != std::string::npos);
}

TEST_CASE("status: mode auto's trials in the daemon's order, predicted and measured, the skipped ones last", "[status]") {
    auto [a, b] = readings();
    StatusInputs in;
    in.daemon = nlohmann::json::parse(R"({"pid": 77, "interfaces": {"fb": {"auto_state": "trial", "mode": "rps", "targets": "1",
        "trial_order": [{"trial": "xdp", "targets": "1", "predicted_ratio": 1.9, "measured_ratio": 2.95},
                        {"trial": "rps", "targets": "1", "predicted_ratio": 1.9},
                        {"trial": "napi", "targets": "1", "predicted_ratio": 0.5, "skipped": "cannot beat 1.05x"}]}}})");
    const StatusSample s = makeStatus(a, b, in);
    REQUIRE(s.ifaces.size() == 1);
    CHECK(s.ifaces[0].trials == "xdp 1.90x predicted, 2.95x measured; rps 1.90x predicted; skipped: napi");
    const std::string screen = renderStatus(s, 120);
    CHECK(screen.find("                trials: xdp 1.90x predicted, 2.95x measured; rps 1.90x predicted; skipped: napi\n") !=
          std::string::npos);
    CHECK(statusJson(s)["interfaces"][0]["trials"] == s.ifaces[0].trials);
}

TEST_CASE("status: an idle host has no hot CPU", "[status]") {
    StatusRaw a, b;
    a.at = 0;
    b.at = 1;
    a.cpu[0] = {0, 0, 0};
    b.cpu[0] = {5, 100, 1};
    const StatusSample s = makeStatus(a, b, {});
    CHECK_FALSE(s.hot);
    CHECK(renderStatus(s).find("<- hot") == std::string::npos);
}
