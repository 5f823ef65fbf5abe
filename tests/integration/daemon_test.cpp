#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon_support.hpp"

using namespace rxtune::itest;
using namespace std::chrono_literals;

namespace {

std::string rps(const NetNs& ns, const std::string& dev, int q) {
    std::string v = ns.sysfsRead("class/net/" + dev + "/queues/rx-" + std::to_string(q) + "/rps_cpus");
    return v.substr(0, v.find('\n'));
}
bool steered(const NetNs& ns, const std::string& dev, int q) {
    try {
        return rps(ns, dev, q).find_first_not_of("0,") != std::string::npos;
    } catch (const std::exception&) {
        return false;  // the device or queue is not there (yet)
    }
}

// A real Prometheus in the namespace scraping `target` every second (1 s timeout).
class Prometheus : public PrometheusServer {
public:
    Prometheus(const NetNs& ns, const std::filesystem::path& dir, const std::string& target, int port)
        : PrometheusServer(ns, dir,
                           "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                           "scrape_configs:\n  - job_name: rxtune\n    static_configs:\n      - targets: ['" + target + "']\n",
                           port) {}
};

long rssKb(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}

}  // namespace

TEST_CASE("the daemon re-applies on link events, queue changes and drift", "[integration][daemon]") {
    NetNs ns;
    ns.ip({"link", "add", "v0", "numrxqueues", "4", "numtxqueues", "4", "type", "veth", "peer", "name", "v1"});
    Daemon d(ns, "drift_interval: 60s\nmetrics_interval: 500ms\non_stop: revert\n", 19871);
    REQUIRE(eventually([&] { return d.ready(); }));
    INFO(d.log());
    CHECK(steered(ns, "v0", 0));
    CHECK(steered(ns, "v1", 0));

    SECTION("a deleted and re-created device is steered again by the link event") {
        ns.ip({"link", "del", "v0"});
        ns.ip({"link", "add", "v0", "numrxqueues", "2", "type", "veth", "peer", "name", "v1"});
        CHECK(eventually([&] { return steered(ns, "v0", 0) && steered(ns, "v0", 1) && steered(ns, "v1", 0); }));
    }
    SECTION("queues added by a channel change are steered at once") {
        mustRun({"ip", "netns", "exec", ns.name(), "ethtool", "-L", "v0", "rx", "1"});
        mustRun({"ip", "netns", "exec", ns.name(), "ethtool", "-L", "v0", "rx", "4"});
        CHECK(eventually([&] { return steered(ns, "v0", 3) && steered(ns, "v0", 2); }));
    }
    SECTION("a hand edit is corrected by the drift timer and counted") {
        d.writeConfig("drift_interval: 300ms\nmetrics_interval: 500ms\non_stop: revert\n");
        d.signal(SIGHUP);
        REQUIRE(eventually([&] { return d.log().find("reloaded") != std::string::npos; }));
        ns.sysfsWrite("class/net/v0/queues/rx-1/rps_cpus", "0");
        CHECK(eventually([&] { return steered(ns, "v0", 1); }));
        CHECK(eventually([&] {
            return sample(d.metrics(), "rxtune_drift_corrections_total{interface=\"v0\",setting=\"rps_cpus\"}") >= 1;
        }));
    }
    const std::string m = d.metrics();
    CHECK(m.find("rxtune_interface_info{driver=\"veth\",interface=\"v0\"") != std::string::npos);
    CHECK(sample(m, "rxtune_applies_total{result=\"changed\"}") >= 1);
    d.signal(SIGTERM);
    CHECK(d.wait() == 0);
    CHECK_FALSE(steered(ns, "v0", 0));  // on_stop: revert
    CHECK(d.log().find("stopped and reverted") != std::string::npos);
}

// napi/<dev>-<id>: the device's NAPI kthreads, and the CPUs each may run on.
std::map<int, std::string> napiThreads(const std::string& dev) {
    std::map<int, std::string> out;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string pid = e.path().filename();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream comm(e.path() / "comm");
        std::string c;
        if (!std::getline(comm, c) || c.rfind("napi/" + dev + "-", 0) != 0) continue;
        std::ifstream status(e.path() / "status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("Cpus_allowed_list:", 0) == 0) out[std::stoi(pid)] = line.substr(line.find_first_not_of(" \t", 18));
    }
    return out;
}

bool pinnedTo(const std::string& dev, const std::string& cpus) {
    auto t = napiThreads(dev);
    return !t.empty() && std::all_of(t.begin(), t.end(), [&](const auto& kv) { return kv.second == cpus; });
}

TEST_CASE("mode napi in the daemon: a kthread that comes back is pinned again, one moved away is put back", "[integration][daemon][napi]") {
    REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2);
    NetNs ns;
    ns.ip({"link", "add", "nd0", "type", "veth", "peer", "name", "nd1"});
    ns.ip({"link", "set", "nd0", "up"});
    ns.ip({"link", "set", "nd1", "up"});
    mustRun({"ip", "netns", "exec", ns.name(), "ethtool", "-K", "nd0", "gro", "on"});
    Daemon d(ns, "drift_interval: 300ms\nmetrics_interval: 500ms\non_stop: revert\n", 19878, {},
             "match:\n  interfaces: [nd0]\n  virtual: include\nsteering:\n  mode: napi\n  cpus: '1'\n  xps: false\n");
    REQUIRE(eventually([&] { return d.ready(); }));
    INFO(d.log());
    CHECK(eventually([&] { return pinnedTo("nd0", "1"); }));
    // The kthread's CPU time, beside its CPU's NET_RX time, by its role, threaded and CPUs.
    CHECK(eventually([&] {
        std::istringstream m(d.metrics());
        for (std::string line; std::getline(m, line);)
            if (line.starts_with("rxtune_napi_kthread_cpu_seconds{") && line.find("interface=\"nd0\"") != std::string::npos &&
                line.find("cpus=\"1\"") != std::string::npos && line.find("napi=\"napi-0\"") != std::string::npos)
                return true;
        return false;
    }));
    // threaded toggled by hand: the new kthread starts on every CPU, the daemon pins it.
    ns.sysfsWrite("class/net/nd0/threaded", "0");
    ns.sysfsWrite("class/net/nd0/threaded", "1");
    CHECK(eventually([&] { return pinnedTo("nd0", "1"); }));
    // Someone moves it: drift, put back and counted under the kthreads' own label.
    for (const auto& [pid, cpus] : napiThreads("nd0")) mustRun({"taskset", "-pc", "0", std::to_string(pid)});
    CHECK(eventually([&] { return pinnedTo("nd0", "1"); }));
    CHECK(eventually([&] {
        return sample(d.metrics(), "rxtune_drift_corrections_total{interface=\"nd0\",setting=\"napi_kthreads\"}") >= 1;
    }));
    d.signal(SIGTERM);
    CHECK(d.wait() == 0);
    CHECK(ns.sysfsRead("class/net/nd0/threaded") == "0\n");  // on_stop: revert
    CHECK(napiThreads("nd0").empty());
}

TEST_CASE("an event touches only the device it names; what no event reports, the drift timer finds", "[integration][daemon]") {
    NetNs ns;
    ns.ip({"link", "add", "v0", "type", "veth", "peer", "name", "v1"});
    Daemon d(ns, "drift_interval: 2s\nmetrics_interval: 60s\n", 19876);
    REQUIRE(eventually([&] { return d.ready(); }));
    REQUIRE(steered(ns, "v0", 0));
    auto applies = [&] {
        const std::string m = d.metrics();
        double n = 0;
        for (const char* r : {"changed", "unchanged", "failed"})
            n += std::max(0.0, sample(m, std::string("rxtune_applies_total{result=\"") + r + "\"}"));
        return n;
    };
    auto flowCnt = [&](const std::string& dev) {
        try {
            return std::stoi(ns.sysfsRead("class/net/" + dev + "/queues/rx-0/rps_flow_cnt"));
        } catch (const std::exception&) {
            return -1;
        }
    };
    // Churn of devices the profile does not match (pods coming and going): nothing is read for
    // them, so nothing is planned or applied.
    const double before = applies();
    for (int i = 0; i < 10; ++i) {
        const std::string z = "z" + std::to_string(i), y = "y" + std::to_string(i);
        ns.ip({"link", "add", z, "type", "veth", "peer", "name", y});
        ns.ip({"link", "set", z, "up"});
        ns.ip({"link", "del", z});
    }
    std::this_thread::sleep_for(300ms);
    CHECK(applies() == before);
    // Someone clears v0's mask (no event says so); then an event about a new device, v2: v2 is
    // steered, and v0 is not the event's business.
    const size_t mark = d.log().size();
    ns.sysfsWrite("class/net/v0/queues/rx-0/rps_cpus", "0");
    ns.ip({"link", "add", "v2", "type", "veth", "peer", "name", "v3"});
    REQUIRE(eventually([&] { return flowCnt("v2") > 0 && flowCnt("v3") > 0; }));
    std::string since = d.log().substr(mark);
    INFO(since);
    CHECK(since.find("set: v2 rx-0 rps_flow_cnt") != std::string::npos);
    CHECK(since.find("set: v0") == std::string::npos);
    // The drift timer looks at everything, and puts v0 right.
    CHECK(eventually([&] { return steered(ns, "v0", 0); }, 10s));
    // The daemon logs the correction after its write: the log is waited for too (a busy machine
    // showed the value put right a moment before the line).
    CHECK(eventually([&] { return d.log().find("corrected drift: v0 rx-0 rps_cpus", mark) != std::string::npos; }, 5s));
}

TEST_CASE("re-apply latency is measured and exported", "[integration][daemon]") {
    NetNs ns;
    Daemon d(ns, "drift_interval: 60s\nmetrics_interval: 200ms\n", 19872);
    REQUIRE(eventually([&] { return d.ready(); }));
    for (int i = 0; i < 5; ++i) {
        ns.ip({"link", "add", "v" + std::to_string(10 + i), "type", "veth", "peer", "name", "w" + std::to_string(i)});
        REQUIRE(eventually([&] { return steered(ns, "v" + std::to_string(10 + i), 0); }));
    }
    const std::string m = d.metrics();
    CHECK(sample(m, "rxtune_reapply_latency_seconds_count") >= 1);
    CHECK(sample(m, "rxtune_reapply_latency_seconds_bucket{le=\"1\"}") >= 1);
}

TEST_CASE("a real Prometheus scrapes the daemon; promtool accepts its output", "[integration][daemon][prometheus]") {
    NetNs ns;
    ns.ip({"link", "add", "v0", "type", "veth", "peer", "name", "v1"});
    Daemon d(ns, "metrics_interval: 500ms\n", 19873);
    REQUIRE(eventually([&] { return d.ready(); }));

    Run check = ns.exec({"sh", "-c", "curl -s http://127.0.0.1:19873/metrics | promtool check metrics"});
    INFO(check.out << check.err);
    CHECK(check.status == 0);

    Prometheus prom(ns, d.dir() / "prom", "127.0.0.1:19873", 19090);
    auto query = [&](const std::string& q) { return prom.query(q); };
    bool up = eventually(
        [&] {
            auto j = query("up{job=\"rxtune\"}");
            return j.is_object() && j["status"] == "success" && !j["data"]["result"].empty() &&
                   j["data"]["result"][0]["value"][1] == "1";
        },
        40s);
    CHECK(up);
    auto info = query("rxtune_interface_info{interface=\"v0\"}");
    REQUIRE(info.is_object());
    REQUIRE_FALSE(info["data"]["result"].empty());
    CHECK(info["data"]["result"][0]["metric"]["driver"] == "veth");
    auto share = query("rxtune_rx_busiest_cpu_share");
    CHECK_FALSE(share["data"]["result"].empty());
}

TEST_CASE("config errors: at start a located exit, on SIGHUP the old config keeps running", "[integration][daemon]") {
    NetNs ns;
    {
        Daemon bad(ns, "drift_interval: soon\n", 19874);
        CHECK(bad.wait() == 1);
        CHECK(bad.log().find("rxtune.yaml:5:17: drift_interval: expected a duration") != std::string::npos);
    }
    {
        Daemon bad(ns, "listn: 1\n", 19874);
        CHECK(bad.wait() == 1);
        CHECK(bad.log().find("listn: unknown key") != std::string::npos);
    }
    Daemon d(ns, "", 19874);
    REQUIRE(eventually([&] { return d.ready(); }));
    d.writeRawConfig("profile: [broken\n");
    d.signal(SIGHUP);
    CHECK(eventually([&] { return d.log().find("reload rejected") != std::string::npos; }));
    CHECK(d.alive());
    CHECK(d.ready());
}

TEST_CASE("scrapes answer while 1000 idle and 100 slow clients hold the endpoint; a real Prometheus keeps scraping",
          "[integration][daemon][prometheus]") {
    NetNs ns;
    Daemon d(ns, "metrics_interval: 500ms\n", 19875);
    REQUIRE(eventually([&] { return d.ready(); }));
    Prometheus prom(ns, d.dir() / "prom", "127.0.0.1:19875", 19091);
    REQUIRE(eventually([&] { return prom.value("up{job=\"rxtune\"}") == 1; }, 40s));
    const long rssBefore = rssKb(d.pid());
    // 1000 connections that send nothing and 100 that send a request one byte a second, held
    // open for 30 s: reconnected as soon as the daemon drops one.
    Background abuse(ns, {env("SCRAPE_ABUSE"), "hold", "127.0.0.1", "19875", "1000", "100", "30"}, d.dir() / "abuse.log");
    std::this_thread::sleep_for(3s);
    std::vector<double> times;
    for (int i = 0; i < 50; ++i) {
        Run r = ns.exec({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "--max-time", "5",
                         "http://127.0.0.1:19875/metrics"});
        INFO(r.out);
        CHECK(r.out.starts_with("200 "));
        times.push_back(r.out.size() > 4 ? std::stod(r.out.substr(4)) : 5);
    }
    std::sort(times.begin(), times.end());
    INFO("scrape seconds: p50 " << times[25] << ", p99 " << times[49]);
    CHECK(times[49] < 1.0);  // p99 of 50 is the slowest but one: the slowest must pass too
    // Reconciles are the event loop's, not the HTTP thread's: a new device is steered as before.
    ns.ip({"link", "add", "v0", "type", "veth", "peer", "name", "w0"});
    CHECK(eventually([&] { return steered(ns, "v0", 0); }, 5s));
    // Prometheus's own view over the abuse: every scrape up, none near its 1 s timeout.
    std::this_thread::sleep_for(5s);
    CHECK(prom.value("min_over_time(up{job=\"rxtune\"}[10s])") == 1);
    const double worst = prom.value("max_over_time(scrape_duration_seconds{job=\"rxtune\"}[10s])");
    INFO("Prometheus's slowest scrape in the last 10 s: " << worst << " s");
    CHECK(worst > 0);
    CHECK(worst < 1.0);
    // Memory stays bounded: a few hundred bytes per connection, not a thread each.
    const long rssDuring = rssKb(d.pid());
    INFO("daemon RSS " << rssBefore << " KiB before, " << rssDuring << " KiB during the abuse");
    // ASan's quarantine keeps freed buffers resident for a while. The daemon is an ASan build
    // where this test is one, or where tests/run_all.sh runs it with the ASan+UBSan rxtune.
#if defined(__SANITIZE_ADDRESS__)
    const bool asanDaemon = true;
#else
    const bool asanDaemon = std::getenv("RXTUNE_BIN_ASAN") != nullptr;
#endif
    const long bound = asanDaemon ? 64 * 1024 : 16 * 1024;
    CHECK(rssDuring - rssBefore < bound);
    CHECK(d.alive());
}

TEST_CASE("the shipped alerting and recording rules pass promtool, and their rule tests pass", "[integration][prometheus]") {
    const char* src = std::getenv("RXTUNE_SOURCE");
    REQUIRE(src != nullptr);
    const std::string dir = std::string(src) + "/packaging/prometheus/";
    Run r = run({"promtool", "check", "rules", dir + "rxtune-alerts.yml", dir + "rxtune-recording.yml"});
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.out.find("SUCCESS: 9 rules found") != std::string::npos);
    CHECK(r.out.find("SUCCESS: 3 rules found") != std::string::npos);
    // Every alert is shown firing on one instance and quiet on another (rxtune-alerts.test.yml).
    Run t = run({"promtool", "test", "rules", dir + "rxtune-alerts.test.yml"});
    INFO(t.out << t.err);
    CHECK(t.status == 0);
    CHECK(t.out.find("SUCCESS") != std::string::npos);
    // ...and the test file names every alert the rules define.
    std::ifstream rules(dir + "rxtune-alerts.yml"), tests(dir + "rxtune-alerts.test.yml");
    std::stringstream rs, ts;
    rs << rules.rdbuf();
    ts << tests.rdbuf();
    std::string line;
    size_t alerts = 0;
    while (std::getline(rs, line))
        if (auto at = line.find("- alert: "); at != std::string::npos) {
            ++alerts;
            const std::string name = line.substr(at + 9);
            INFO(name);
            CHECK(ts.str().find("alertname: " + name + "\n") != std::string::npos);
        }
    CHECK(alerts == 9);
}

TEST_CASE("BPF accounting in the daemon, and a clear message without BPF permissions", "[integration][daemon][bpf]") {
    NetNs ns;
    {
        Daemon d(ns, "metrics_interval: 200ms\n", 19876);
        REQUIRE(eventually([&] { return d.ready(); }));
        REQUIRE(eventually([&] { return d.metrics().find("rxtune_softirq_net_rx_seconds_total{cpu=\"0\"}") != std::string::npos; }));
        CHECK(sample(d.metrics(), "rxtune_bpf_info{program=\"softirq\",state=\"available\"}") == 1);
    }
    // CAP_NET_ADMIN only: steering works, BPF is refused; said once, everything else keeps working.
    Daemon d(ns, "metrics_interval: 200ms\n", 19877,
             {"setpriv", "--inh-caps=-all,+net_admin", "--ambient-caps=-all,+net_admin", "--bounding-set=-all,+net_admin"});
    REQUIRE(eventually([&] { return d.ready(); }));
    const std::string log = d.log();
    INFO(log);
    CHECK(log.find("BPF softirq accounting unavailable, other metrics unaffected") != std::string::npos);
    CHECK(log.find("CAP_BPF") != std::string::npos);
    const std::string m = d.metrics();
    CHECK(sample(m, "rxtune_bpf_info{program=\"softirq\",state=\"error\"}") == 1);
    CHECK(m.find("rxtune_softirq_net_rx_seconds_total{") == std::string::npos);
    CHECK(eventually([&] { return d.metrics().find("rxtune_softnet_processed_packets_total{cpu=\"0\"}") != std::string::npos; }));
    CHECK(d.alive());
}

TEST_CASE("metrics_interfaces: series for managed devices only by default, unmanaged ones never read", "[integration][daemon]") {
    NetNs ns;
    ns.ip({"link", "add", "v0", "type", "veth", "peer", "name", "v1"});
    for (int i = 0; i < 6; i += 2)
        ns.ip({"link", "add", "u" + std::to_string(i), "type", "veth", "peer", "name", "u" + std::to_string(i + 1)});
    Daemon d(ns, "drift_interval: 60s\nmetrics_interval: 200ms\non_stop: revert\n", 19879);
    REQUIRE(eventually([&] { return d.ready(); }));
    INFO(d.log());
    auto has = [](const std::string& m, const std::string& ifname) {
        return m.find("rxtune_interface_info{driver=\"veth\",interface=\"" + ifname + "\"") != std::string::npos;
    };
    std::string m = d.metrics();
    CHECK(has(m, "v0"));
    CHECK(has(m, "v1"));
    CHECK(sample(m, "rxtune_interface_packets_total{direction=\"rx\",interface=\"v0\"}") >= 0);
    for (const char* u : {"u0", "u1", "u5"}) CHECK_FALSE(has(m, u));
    CHECK(m.find("interface=\"u") == std::string::npos);

    // Watched for a few metrics intervals: the daemon opens nothing of the unmanaged devices.
    // (Device directories are opened by name relative to sys/class/net: `openat(5, "v0", ...)`.)
    Run trace = run({"timeout", "-s", "INT", "1.5", "strace", "-f", "-qq", "-e", "trace=openat,open,stat,newfstatat,statx",
                     "-p", std::to_string(d.pid())});
    const std::string t = trace.out + trace.err;
    INFO(t.substr(0, 4000));
    CHECK(t.find("\"v0\"") != std::string::npos);  // the steered one is read each interval
    for (const char* u : {"u0", "u3", "u5"}) {
        CHECK(t.find(std::string("\"") + u) == std::string::npos);
        CHECK(t.find(std::string("/") + u) == std::string::npos);
    }

    SECTION("all: every device, as before") {
        d.writeConfig("drift_interval: 60s\nmetrics_interval: 200ms\non_stop: revert\nmetrics_interfaces: all\n");
        d.signal(SIGHUP);
        CHECK(eventually([&] { return has(d.metrics(), "u3") && has(d.metrics(), "v0"); }));
    }
    SECTION("globs: exactly the devices they match, managed ones too") {
        d.writeConfig("drift_interval: 60s\nmetrics_interval: 200ms\non_stop: revert\nmetrics_interfaces: ['u[01]']\n");
        d.signal(SIGHUP);
        CHECK(eventually([&] {
            const auto now = d.metrics();
            return has(now, "u0") && has(now, "u1") && !has(now, "u2") && !has(now, "v0");
        }));
        CHECK(steered(ns, "v0", 0));  // still steered; only not exported
    }
    d.signal(SIGTERM);
    CHECK(d.wait() == 0);
}
