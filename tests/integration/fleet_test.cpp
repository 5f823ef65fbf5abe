// A fleet on one machine: N daemons, each in its own network namespace standing in for a node
// (its own one-queue veth, state and run directories), all reading one configuration directory
// laid out the way the kubelet lays out a mounted ConfigMap, and one real Prometheus scraping
// them with the shipped alerting and recording rules. The test changes the profile the way the
// kubelet does (a new timestamped directory, then `..data` renamed onto it) and sends no signal.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "profile/profile.hpp"
#include "support.hpp"

using namespace rxtune::itest;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int kNodes = 8;
constexpr int kPromPort = 19095;
const std::string kNet = "10.213.0";  // the hub's bridge .1, node i at .(10+i): our own namespaces only

// The kubelet's layout: <dir>/..<timestamp>/{files}, <dir>/..data -> ..<timestamp>, and
// <dir>/<file> -> ..data/<file> for each key. An update writes a new timestamped directory,
// points ..data_tmp at it and renames ..data_tmp over ..data (atomic), then removes the old one.
class ConfigMapDir {
public:
    explicit ConfigMapDir(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
    void publish(const std::map<std::string, std::string>& files) {
        const std::string version = "..2026_12_01_00_00_00." + std::to_string(++serial_);
        fs::create_directories(dir_ / version);
        for (const auto& [name, text] : files) std::ofstream(dir_ / version / name) << text;
        fs::create_symlink(version, dir_ / "..data_tmp");
        fs::rename(dir_ / "..data_tmp", dir_ / "..data");
        for (const auto& [name, text] : files)
            if (!fs::is_symlink(dir_ / name)) fs::create_symlink("..data/" + name, dir_ / name);
        if (!current_.empty()) fs::remove_all(dir_ / current_);
        current_ = version;
    }
    const fs::path& path() const { return dir_; }

private:
    fs::path dir_;
    std::string current_;
    int serial_ = 0;
};

// Prometheus in the hub namespace: the nodes as targets, the shipped rules with every `for:` set
// to 0s (their timing is what rxtune-alerts.test.yml tests; here, that the fleet's real series
// drive them).
std::string fleetPrometheusConfig(const fs::path& dir) {
    const std::string src = env("RXTUNE_SOURCE");
    fs::create_directories(dir);
    std::string alerts = slurp(src + "/packaging/prometheus/rxtune-alerts.yml");
    alerts = std::regex_replace(alerts, std::regex("for: [0-9]+[smh]"), "for: 0s");
    std::ofstream(dir / "alerts.yml") << alerts;
    fs::copy_file(src + "/packaging/prometheus/rxtune-recording.yml", dir / "recording.yml");
    std::ostringstream cfg;
    cfg << "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n"
        << "rule_files: ['" << (dir / "alerts.yml").string() << "', '" << (dir / "recording.yml").string() << "']\n"
        << "scrape_configs:\n  - job_name: rxtune\n    static_configs:\n      - targets: [";
    for (int i = 0; i < kNodes; ++i) cfg << (i ? ", " : "") << "'" << kNet << "." << 10 + i << ":9867'";
    cfg << "]\n";
    return cfg.str();
}

// One node: a namespace with its one-queue veth n0 (the other end on the hub's bridge), and a
// daemon whose state and run directories are its own: a private mount namespace binds the node's
// directory onto the path the shared configuration names.
struct Node {
    NetNs ns;
    fs::path dir;
    std::unique_ptr<Background> daemon;
};

std::string somaxconn(const Node& n) {
    std::string v = n.ns.exec({"cat", "/proc/sys/net/core/somaxconn"}).out;
    return v.substr(0, v.find('\n'));
}

std::string profileYaml(int somaxconn) {
    return "description: fleet test\n"
           "match:\n  interfaces: [n0]\n  virtual: include\n"
           "steering:\n  mode: auto\n  cpus: all\n"
           "sysctl:\n  net.core.somaxconn: " +
           std::to_string(somaxconn) + "\n";
}

std::string digestOf(const fs::path& profile) {
    auto p = rxtune::loadProfile(profile.string(), {});
    REQUIRE(p);
    return p->digest;
}

double secondsSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("a fleet follows its ConfigMap: a change reaches every node without a signal, a broken one is refused everywhere",
          "[integration][fleet][prometheus]") {
    TempDir tmp;
    const fs::path shared = tmp.path / "node";  // each daemon's own directory is bound here
    fs::create_directories(shared);
    ConfigMapDir cm(tmp.path / "config");
    const std::string config = "profile: " + (cm.path() / "gw.yaml").string() +
                               "\nlisten: 0.0.0.0:9867\nmetrics_interval: 1s\ndrift_interval: 30s\non_stop: revert\n"
                               "state_dir: " + (shared / "state").string() + "\nrun_dir: " + (shared / "run").string() +
                               "\nbpf_accounting: off\ndatapaths: [" + (shared / "run" / "no-datapath.sock").string() + "]\n";
    cm.publish({{"rxtune.yaml", config}, {"gw.yaml", profileYaml(8192)}});
    const std::string v1 = digestOf(cm.path() / "gw.yaml");

    NetNs hub;
    hub.ip({"link", "add", "br0", "type", "bridge"});
    hub.ip({"addr", "add", kNet + ".1/24", "dev", "br0"});
    hub.ip({"link", "set", "br0", "up"});
    std::vector<std::unique_ptr<Node>> nodes;
    const auto started = std::chrono::steady_clock::now();  // the peer: what a restart of every pod costs
    for (int i = 0; i < kNodes; ++i) {
        auto n = std::make_unique<Node>();
        n->dir = tmp.path / ("node" + std::to_string(i));
        fs::create_directories(n->dir);
        const std::string h = "h" + std::to_string(i);
        n->ns.ip({"link", "add", "n0", "type", "veth", "peer", "name", h, "netns", hub.name()});
        n->ns.ip({"addr", "add", kNet + "." + std::to_string(10 + i) + "/24", "dev", "n0"});
        n->ns.ip({"link", "set", "n0", "up"});
        hub.ip({"link", "set", h, "master", "br0"});
        hub.ip({"link", "set", h, "up"});
        n->daemon = std::make_unique<Background>(
            n->ns,
            std::vector<std::string>{"unshare", "-m", "--propagation", "private", "sh", "-c",
                                     "mount --bind " + n->dir.string() + " " + shared.string() + " && exec " + rxtuneBin() +
                                         " daemon --config " + (cm.path() / "rxtune.yaml").string()},
            n->dir / "log");
        nodes.push_back(std::move(n));
    }
    PrometheusServer prom(hub, tmp.path / "prom", fleetPrometheusConfig(tmp.path / "prom"), kPromPort);
    auto allLogs = [&] {
        std::string s;
        for (const auto& n : nodes) s += n->dir.filename().string() + ":\n" + slurp(n->dir / "log");
        return s + "prometheus:\n" + prom.log().substr(0, 3000);
    };
    auto count = [&](const std::string& digest) {
        return prom.value("count(rxtune_applied_profile_info{digest=\"" + digest + "\"})");
    };
    INFO(allLogs());

    // 1. Every node up, on the first version, its settings applied.
    REQUIRE(eventually([&] { return prom.value("count(up{job=\"rxtune\"} == 1)") == kNodes; }, 60s, 200ms));
    REQUIRE(eventually([&] { return count(v1) == kNodes; }, 30s, 100ms));
    const double startAll = secondsSince(started);  // Prometheus, its first scrapes included
    for (const auto& n : nodes) CHECK(somaxconn(*n) == "8192");

    // 2. The kubelet's swap to a new profile: no signal. Every node reports it in Prometheus,
    //    has applied it, and is in sync.
    fs::path staged = tmp.path / "v2.yaml";
    std::ofstream(staged) << profileYaml(16384);
    const std::string v2 = digestOf(staged);
    REQUIRE(v2 != v1);
    const auto swap = std::chrono::steady_clock::now();
    cm.publish({{"rxtune.yaml", config}, {"gw.yaml", profileYaml(16384)}});
    // On the nodes: each one's reload answer names the new digest.
    std::vector<double> nodeSeconds(kNodes, -1);
    CHECK(eventually(
        [&] {
            bool all = true;
            for (int i = 0; i < kNodes; ++i) {
                if (nodeSeconds[i] >= 0) continue;
                const std::string r = slurp(nodes[i]->dir / "run" / "reload.json");
                if (r.find("\"digest\":\"" + v2 + "\"") != std::string::npos && r.find("\"success\"") != std::string::npos)
                    nodeSeconds[i] = secondsSince(swap);
                else
                    all = false;
            }
            return all;
        },
        30s, 20ms));
    const double allNodes = *std::max_element(nodeSeconds.begin(), nodeSeconds.end());
    // In Prometheus: every node on v2, none left on v1 (scraped every second).
    CHECK(eventually([&] { return count(v2) == kNodes && count(v1) <= 0; }, 30s, 100ms));
    const double allInPrometheus = secondsSince(swap);
    for (const auto& n : nodes) CHECK(somaxconn(*n) == "16384");
    CHECK(prom.value("sum(rxtune_settings{state=\"drifted\"})") == 0);
    CHECK(prom.value("count(rxtune_config_last_reload_successful == 1)") == kNodes);
    // The profile's info gauge is set by the reload's reconcile, the counter a moment later: a
    // scrape may fall between the two (seen under ASan), so the counter gets its own scrape or two.
    CHECK(eventually([&] { return prom.value("sum(rxtune_config_reload_total{result=\"success\"})") >= kNodes; }, 10s, 100ms));
    const double reloadMax = prom.value("max(rxtune_config_last_reload_duration_seconds)");
    const double reloadMedian = prom.value("quantile(0.5, rxtune_config_last_reload_duration_seconds)");
    CHECK(reloadMax > 0);
    // Bounds well above what was measured (docs/BENCHMARKS.md, "A fleet following its ConfigMap"):
    // the debounce is 200 ms and Prometheus scrapes every second.
    CHECK(allNodes < 5);
    CHECK(allInPrometheus < 10);

    // 3. A broken profile: every node keeps v2, says so, and the alert fires.
    cm.publish({{"rxtune.yaml", config}, {"gw.yaml", "stering:\n  mode: rps\n"}});
    CHECK(eventually([&] { return prom.value("count(rxtune_config_last_reload_successful == 0)") == kNodes; }, 30s, 200ms));
    CHECK(eventually([&] { return prom.value("count(ALERTS{alertname=\"RxtuneConfigReloadFailing\",alertstate=\"firing\"})") == kNodes; },
                     30s, 200ms));
    CHECK(count(v2) == kNodes);
    CHECK(prom.value("sum(rxtune_config_reload_total{result=\"failure\"})") == kNodes);  // each said once
    for (const auto& n : nodes) {
        CHECK(somaxconn(*n) == "16384");
        const std::string log = slurp(n->dir / "log");
        CHECK(log.find("reload rejected, the running configuration stays") != std::string::npos);
        CHECK(log.find("gw.yaml:1:1: stering: unknown key") != std::string::npos);
    }

    // 4. The dashboard's queries, against this Prometheus and its real series: each parses and
    //    returns series, and each metric it names is one the daemon or a family registers, or a
    //    recording rule.
    const std::string src = env("RXTUNE_SOURCE");
    const auto dash = nlohmann::json::parse(slurp(src + "/packaging/grafana/rxtune.json"));
    std::string registered;
    // The daemon's own series, and those the knob families register (KnobFamily::counters, gauges).
    for (const char* dir : {"/agent/src/metrics", "/agent/src/knobs"})
        for (const auto& f : fs::directory_iterator(src + dir)) registered += slurp(f.path());
    registered += slurp(src + "/packaging/prometheus/rxtune-recording.yml");
    size_t queries = 0;
    for (const auto& panel : dash["panels"]) {
        if (!panel.contains("targets")) continue;
        for (const auto& t : panel["targets"]) {
            std::string expr = t["expr"];
            INFO(panel["title"].get<std::string>() << ": " << expr);
            for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
                     {"$__rate_interval", "1m"}, {"$__range", "5m"}, {"$__interval", "1m"}, {"$node", ".*"}})
                for (size_t at; (at = expr.find(from)) != std::string::npos;) expr.replace(at, from.size(), to);
            auto r = prom.query(expr);
            CHECK(r["status"] == "success");
            CHECK_FALSE(r["data"]["result"].empty());
            std::smatch m;
            for (auto it = expr.cbegin(); std::regex_search(it, expr.cend(), m, std::regex("[a-z:]*rxtune_[a-z_:]+")); it = m.suffix().first) {
                INFO(m.str());
                const bool known = registered.find("\"" + m.str() + "\"") != std::string::npos ||
                                   registered.find("record: " + m.str() + "\n") != std::string::npos;
                CHECK(known);
            }
            ++queries;
        }
    }
    CHECK(queries >= 20);
    // The node variable: label_values(rxtune_build_info, instance).
    auto values = prom.api("/api/v1/label/instance/values", "match[]=rxtune_build_info");
    CHECK(values["data"].size() == static_cast<size_t>(kNodes));

    WARN("fleet of " << kNodes << ": swap -> every node reloaded " << allNodes << " s; -> every node on the new profile in Prometheus "
                     << allInPrometheus << " s; reload took median " << reloadMedian * 1000 << " ms, max " << reloadMax * 1000
                     << " ms; starting every daemon (and Prometheus) -> all on the first profile in Prometheus " << startAll << " s");
    if (const char* report = std::getenv("RXTUNE_FLEET_REPORT"))
        std::ofstream(report, std::ios::app) << allNodes << " " << allInPrometheus << " " << reloadMedian << " " << reloadMax << " "
                                             << startAll << "\n";

    for (auto& n : nodes) n->daemon->signal(SIGTERM);
    for (auto& n : nodes) CHECK(n->daemon->wait() == 0);
}
