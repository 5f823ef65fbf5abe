#include <catch2/catch.hpp>

#include "profile/daemon_config.hpp"

using namespace rxtune;
using namespace std::chrono_literals;

TEST_CASE("daemon config defaults and values", "[config]") {
    auto d = parseDaemonConfig("", "c.yaml").value();
    CHECK(d.profile == "single-queue-gateway");
    CHECK(d.listen == "0.0.0.0:9867");
    CHECK(d.driftInterval == 30s);
    CHECK_FALSE(d.revertOnStop);
    auto c = parseDaemonConfig("profile: balanced\ninterfaces: [eth0, eth1]\nlisten: '127.0.0.1:9999'\n"
                               "drift_interval: 500ms\nmetrics_interval: 2\non_stop: revert\nhttp_threads: 4\n",
                               "c.yaml")
                 .value();
    CHECK(c.profile == "balanced");
    CHECK(c.interfaces == std::vector<std::string>{"eth0", "eth1"});
    CHECK(c.listen == "127.0.0.1:9999");
    CHECK(c.driftInterval == 500ms);
    CHECK(c.metricsInterval == 2s);
    CHECK(c.revertOnStop);
    CHECK(c.httpThreads == 4);
    CHECK(d.bpfAccounting == BpfAccounting::kAuto);
    CHECK(d.bpfMaxSoftirqRate == 100000);
    auto b = parseDaemonConfig("bpf_accounting: off\nbpf_max_softirq_rate: 5000\n", "c.yaml").value();
    CHECK(b.bpfAccounting == BpfAccounting::kOff);
    CHECK(b.bpfMaxSoftirqRate == 5000);
    CHECK(parseDaemonConfig("bpf_accounting: on\n", "c.yaml").value().bpfAccounting == BpfAccounting::kOn);
}

TEST_CASE("daemon config errors are located", "[config]") {
    auto err = [](const std::string& text) { return parseDaemonConfig(text, "c.yaml").error().message(); };
    CHECK(err("profle: x\n").find("c.yaml:1:1: profle: unknown key") == 0);
    CHECK(err("drift_interval: soon\n") == "c.yaml:1:17: drift_interval: expected a duration such as 30s or 500ms, got 'soon'");
    CHECK(err("drift_interval: 5h\n").find("unknown unit 'h'") != std::string::npos);
    CHECK(err("drift_interval: 10ms\n").find("at least 100ms") != std::string::npos);
    CHECK(err("on_stop: maybe\n").find("c.yaml:1:10: on_stop") == 0);
    CHECK(err("listen: nowhere\n").find("c.yaml:1:9: listen") == 0);
    CHECK(err("interfaces: [a/b]\n").find("c.yaml:1:14: interfaces") == 0);
    CHECK(err("interfaces: eth0\n").find("expected a list") != std::string::npos);
    CHECK(err("bpf_accounting: sometimes\n") == "c.yaml:1:17: bpf_accounting: expected auto, on or off, got 'sometimes'");
    CHECK(err("bpf_max_softirq_rate: 10\n") == "c.yaml:1:23: bpf_max_softirq_rate: expected an integer from 100 to 100000000, got '10'");
    CHECK(err("http_threads: 1000\n").find("from 2 to 64") != std::string::npos);
    CHECK(err("profile: [x\n").find("malformed YAML") != std::string::npos);
    CHECK(err("- a\n- b\n").find("expected a mapping") != std::string::npos);
}

TEST_CASE("a missing default config means defaults; a missing given one is an error", "[config]") {
    CHECK(loadDaemonConfig("/nonexistent/rxtune.yaml", false));
    CHECK_FALSE(loadDaemonConfig("/nonexistent/rxtune.yaml", true));
}

TEST_CASE("datapaths: telemetry sockets to export, default rxtune-dp's, empty to switch off", "[config]") {
    auto def = parseDaemonConfig("", "c.yaml");
    REQUIRE(def);
    CHECK(def->datapaths == std::vector<std::string>{"/var/run/dpdk/rxtune-dp/dpdk_telemetry.v2"});
    auto none = parseDaemonConfig("datapaths: []\n", "c.yaml");
    REQUIRE(none);
    CHECK(none->datapaths.empty());
    auto two = parseDaemonConfig("datapaths: [/var/run/dpdk/a/dpdk_telemetry.v2, /run/b.sock]\n", "c.yaml");
    REQUIRE(two);
    CHECK(two->datapaths.size() == 2);
    auto bad = parseDaemonConfig("datapaths: [relative.sock]\n", "c.yaml");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message().find("c.yaml:1:13: datapaths") == 0);
}
