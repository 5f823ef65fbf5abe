#include <catch2/catch.hpp>

#include "../support/yaml_bomb.hpp"
#include "profile/daemon_config.hpp"

using namespace rxtune;
using namespace std::chrono_literals;

TEST_CASE("daemon config defaults and values", "[config]") {
    const DaemonConfig d;
    CHECK(d.profile == "single-queue-gateway");
    CHECK(d.listen == "0.0.0.0:9867");
    CHECK(d.driftInterval == 30s);
    CHECK_FALSE(d.revertOnStop);
    auto c = parseDaemonConfig("profile: balanced\ninterfaces: [eth0, eth1]\nlisten: '127.0.0.1:9999'\n"
                               "drift_interval: 500ms\nmetrics_interval: 2\non_stop: revert\nhttp_max_connections: 1000\nhttp_timeout: 2s\n",
                               "c.yaml")
                 .value();
    CHECK(c.profile == "balanced");
    CHECK(c.interfaces == std::vector<std::string>{"eth0", "eth1"});
    CHECK(c.listen == "127.0.0.1:9999");
    CHECK(c.driftInterval == 500ms);
    CHECK(c.metricsInterval == 2s);
    CHECK(c.revertOnStop);
    CHECK(c.httpMaxConnections == 1000);
    CHECK(c.httpTimeout == 2s);
    CHECK(d.httpMaxConnections == 4096);
    CHECK(d.httpTimeout == 10s);
    CHECK(d.bpfAccounting == BpfAccounting::kAuto);
    CHECK(d.bpfMaxSoftirqRate == 100000);
    auto b = parseDaemonConfig("bpf_accounting: off\nbpf_max_softirq_rate: 5000\n", "c.yaml").value();
    CHECK(b.bpfAccounting == BpfAccounting::kOff);
    CHECK(b.bpfMaxSoftirqRate == 5000);
    CHECK(parseDaemonConfig("bpf_accounting: on\n", "c.yaml").value().bpfAccounting == BpfAccounting::kOn);
    CHECK(d.procSys == "/proc/sys");
    CHECK(parseDaemonConfig("proc_sys: /host/proc/sys\n", "c.yaml").value().procSys == "/host/proc/sys");
}

TEST_CASE("daemon config errors are located", "[config]") {
    auto err = [](const std::string& text) { return parseDaemonConfig(text, "c.yaml").error().message(); };
    CHECK(err("profle: x\n").find("c.yaml:1:1: profle: unknown key") == 0);
    CHECK(err("drift_interval: soon\n") == "c.yaml:1:17: drift_interval: expected a duration such as 15s, 500ms or 5m, got 'soon'");
    CHECK(err("drift_interval: 5h\n").find("unknown unit 'h'") != std::string::npos);
    CHECK(err("drift_interval: 10ms\n").find("must be from 0.1 to 86400 seconds") != std::string::npos);
    CHECK(err("metrics_interval: nan\n").find("expected a duration") != std::string::npos);
    CHECK(err("metrics_interval: inf\n").find("expected a duration") != std::string::npos);
    CHECK(err("on_stop: maybe\n").find("c.yaml:1:10: on_stop") == 0);
    CHECK(err("listen: nowhere\n").find("c.yaml:1:9: listen") == 0);
    CHECK(err("interfaces: [a/b]\n").find("c.yaml:1:14: interfaces") == 0);
    CHECK(err("interfaces: eth0\n").find("expected a list") != std::string::npos);
    CHECK(err("bpf_accounting: sometimes\n") == "c.yaml:1:17: bpf_accounting: expected auto, on or off, got 'sometimes'");
    CHECK(err("bpf_max_softirq_rate: 10\n") == "c.yaml:1:23: bpf_max_softirq_rate: expected an integer from 100 to 100000000, got '10'");
    CHECK(err("http_max_connections: 1\n").find("from 16 to 65536") != std::string::npos);
    CHECK(err("http_threads: 8\n").find("http_threads: no longer used") != std::string::npos);
    CHECK(err("proc_sys: host/proc/sys\n") == "c.yaml:1:11: proc_sys: expected an absolute path, got 'host/proc/sys'");
    CHECK(err("profile: [x\n").find("malformed YAML") != std::string::npos);
    CHECK(err("- a\n- b\n").find("expected a mapping") != std::string::npos);
}

TEST_CASE("a missing default config means defaults; a missing given one is an error", "[config]") {
    CHECK(loadDaemonConfig("/nonexistent/rxtune.yaml", false));
    CHECK_FALSE(loadDaemonConfig("/nonexistent/rxtune.yaml", true));
}

TEST_CASE("datapaths: telemetry sockets to export, default rxtune-dp's, empty to switch off", "[config]") {
    CHECK(DaemonConfig{}.datapaths == std::vector<std::string>{"/var/run/dpdk/rxtune-dp/dpdk_telemetry.v2"});
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

TEST_CASE("an empty configuration and a key given twice are errors naming the file and both lines", "[config]") {
    for (const char* text : {"", "# only a comment\n\n"}) {
        auto e = parseDaemonConfig(text, "c.yaml");
        REQUIRE_FALSE(e);
        CHECK(e.error().message() == "c.yaml: empty configuration (no settings at all: a truncated write or a wrong path?)");
    }
    auto dup = parseDaemonConfig("profile: a\nlisten: '127.0.0.1:1'\nprofile: b\n", "c.yaml");
    REQUIRE_FALSE(dup);
    CHECK(dup.error().message() == "c.yaml:3:1: profile: duplicate key: already given on line 1 (a key may appear once in a mapping)");
}

TEST_CASE("daemon config: nested aliases are refused at once, not expanded", "[config][limits]") {
    for (unsigned levels : {10u, 20u})
        for (const auto& text : {test::aliasBomb(levels, "interfaces"), test::nestedAliasBomb(levels, "datapaths")}) {
            auto e = parseDaemonConfig(text, "c.yaml");
            REQUIRE_FALSE(e);
            CHECK(e.error().message().rfind("c.yaml:", 0) == 0);
            CHECK(e.error().message().find("more than 100000 nodes") != std::string::npos);
        }
}

TEST_CASE("daemon config: every path is absolute and not empty", "[config]") {
    auto err = [](const std::string& text) {
        auto c = parseDaemonConfig(text, "c.yaml");
        REQUIRE_FALSE(c);
        return c.error().message();
    };
    for (const char* key : {"state_dir", "run_dir", "bpf_dir", "proc_sys"}) {
        INFO(key);
        const std::string k = key;
        const std::string col = std::to_string(k.size() + 3);
        CHECK(err(k + ": \"\"\n") == "c.yaml:1:" + col + ": " + k + ": expected an absolute path, got an empty one");
        CHECK(err(k + ": var/lib/x\n") == "c.yaml:1:" + col + ": " + k + ": expected an absolute path, got 'var/lib/x'");
        CHECK(parseDaemonConfig(k + ": /var/lib/x\n", "c.yaml"));
    }
    CHECK(err("datapaths: ['']\n") == "c.yaml:1:13: datapaths: expected an absolute path, got an empty one");
    CHECK(err("profile: \"\"\n") == "c.yaml:1:10: profile: expected a profile name or an absolute path, got ''");
    CHECK(err("profile: profiles/mine.yaml\n") == "c.yaml:1:10: profile: expected an absolute path, got 'profiles/mine.yaml'");
    CHECK(err("profile: mine.yaml\n").find("expected an absolute path") != std::string::npos);
    CHECK(parseDaemonConfig("profile: /etc/rxtune/profiles/mine.yaml\n", "c.yaml"));
    CHECK(parseDaemonConfig("profile: throughput\n", "c.yaml"));  // a name, from the search path
}

TEST_CASE("daemon config: metrics_interfaces is managed, all or a list of globs", "[config]") {
    using Kind = InterfaceSelection::Kind;
    CHECK(DaemonConfig{}.metricsInterfaces.kind == Kind::kManaged);
    CHECK(parseDaemonConfig("metrics_interfaces: all\n", "c.yaml")->metricsInterfaces.kind == Kind::kAll);
    CHECK(parseDaemonConfig("metrics_interfaces: managed\n", "c.yaml")->metricsInterfaces.kind == Kind::kManaged);
    auto g = parseDaemonConfig("metrics_interfaces: ['eth*', ens1f0]\n", "c.yaml");
    REQUIRE(g);
    CHECK(g->metricsInterfaces.kind == Kind::kGlobs);
    CHECK(g->metricsInterfaces.globs == std::vector<std::string>{"eth*", "ens1f0"});
    auto err = [](const std::string& text) { return parseDaemonConfig(text, "c.yaml").error().message(); };
    CHECK(err("metrics_interfaces: some\n") ==
          "c.yaml:1:21: metrics_interfaces: expected managed, all, or a list of interface name globs such as [eth*, ens1f0], got 'some'");
    CHECK(err("metrics_interfaces: []\n").find("c.yaml:1:21: metrics_interfaces: expected managed, all") == 0);
    CHECK(err("metrics_interfaces: [a/b]\n") == "c.yaml:1:22: metrics_interfaces: 'a/b' is not an interface name glob");
    CHECK(err("metrics_interfaces: {a: 1}\n").find("expected managed, all") != std::string::npos);
}

TEST_CASE("which interfaces get series: managed devices and physical NICs, all, or globs", "[config]") {
    InterfaceSelection managed;
    CHECK(managed.wants("veth0", true, false));
    CHECK(managed.wants("eth0", false, true));
    CHECK_FALSE(managed.wants("vethabc", false, false));
    CHECK_FALSE(managed.byName());
    InterfaceSelection all{InterfaceSelection::Kind::kAll, {}};
    CHECK(all.wants("vethabc", false, false));
    InterfaceSelection globs{InterfaceSelection::Kind::kGlobs, {"eth*", "ens1f[01]"}};
    CHECK(globs.byName());
    CHECK(globs.wants("eth3", false, false));
    CHECK(globs.wants("ens1f1", false, false));
    CHECK_FALSE(globs.wants("ens1f2", false, true));   // physical, but not asked for
    CHECK_FALSE(globs.wants("veth0", true, false));    // managed, but not asked for
}
