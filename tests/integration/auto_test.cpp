// steering: mode: auto against the real kernel: a simulated single-queue device (a veth whose
// receive work lands on the sender's CPU), a UDP flood from another netns pinned to CPU 0, an
// expensive receive path (u32 classifiers on the device's ingress, as a gateway's firewall and
// classifiers are), and the daemon deciding from what it measures.
#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/utsname.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "inventory/softnet.hpp"
#include "inventory/stack_counters.hpp"
#include "planner/auto_steer.hpp"
#include "../support/skips.hpp"
#include "support.hpp"

using namespace rxtune::itest;
using rxtune::parseProcStat;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct AutoLab : VethPair {
    TempDir tmp;
    AutoLab() : VethPair("10.88.0") {
        std::filesystem::create_directories(tmp.path / "bpffs");
        mustRun({"mount", "-t", "bpf", "bpf", (tmp.path / "bpffs").string()});
        writeProfile("rx_share: 25%");
        writeConfig("rxtune.yaml", "metrics_interval: 500ms\n");
    }
    void writeConfig(const std::string& file, const std::string& extra) const {
        std::ofstream(tmp.path / file) << "profile: " << (tmp.path / "auto.yaml").string() << "\nlisten: 127.0.0.1:19875\n"
                                       << "state_dir: " << (tmp.path / "state").string() << "\nrun_dir: "
                                       << (tmp.path / "run").string() << "\nbpf_dir: " << (tmp.path / "bpffs" / "rxtune").string()
                                       << "\ndatapaths: []\non_stop: revert\n" << extra;
    }
    // Both candidates (or those given), short windows; the shipped margins (gain 5 %, worse 5 %).
    void writeProfile(const std::string& share, const std::string& candidates = "[rps, xdp]") const {
        std::ofstream(tmp.path / "auto.yaml") << "match:\n  interfaces: [fb]\n  virtual: include\n"
                                                 "steering:\n  mode: auto\n  xps: false\n  default_mask: false\n"
                                                 "  auto: {" << share << ", busy: 0.8, min_spare: 0.2, sustain: 2s, window: 3s, backoff: 10m, "
                                                 "candidates: " << candidates << "}\n";
    }
    // The receive path of a gateway costs: `filters` u32 classifiers that every packet walks on
    // fb's ingress (none matches), so receive work is about half of CPU 0's flood.
    void expensiveReceive(int filters) const {
        receiver.exec({"tc", "qdisc", "add", "dev", "fb", "clsact"});
        std::ofstream batch(tmp.path / "filters.tc");
        for (int i = 1; i <= filters; ++i)
            batch << "filter add dev fb ingress prio " << i << " protocol ip u32 match ip dport " << 20000 + i << " 0xffff flowid 1:1\n";
        batch.close();
        REQUIRE(receiver.exec({"tc", "-batch", (tmp.path / "filters.tc").string()}).status == 0);
    }
    ~AutoLab() { run({"umount", (tmp.path / "bpffs").string()}); }
    // A scrape, as Prometheus would retry it: with both CPUs in softirq (the flood and its steered
    // target) and the daemon under ASan, one scrape can miss its deadline; the next one answers.
    std::string metrics() const {
        for (int i = 0;; ++i) {
            std::string out = receiver.exec({"curl", "-s", "--max-time", "5", "http://127.0.0.1:19875/metrics"}).out;
            if (out.find("rxtune_") != std::string::npos || i == 4) return out;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
    std::string rps() const { return receiver.sysfsRead("class/net/fb/queues/rx-0/rps_cpus"); }
    bool xdp() const { return receiver.ip({"-d", "link", "show", "fb"}).find("xdpgeneric") != std::string::npos; }
    // A flood from CPU 0 for `seconds` to `port`. Nothing listens on 9000: the receive path runs to
    // the UDP lookup and drops, all of it on CPU 0, leaving CPU 1 idle to steer to.
    std::unique_ptr<Background> flood(int seconds, const std::string& tag, int port = 9000) {
        return std::make_unique<Background>(sender, std::vector<std::string>{"taskset", "-c", "0", env("UDP_FLOOD"), "send", "10.88.0.2",
                                                        std::to_string(port), std::to_string(seconds), "64"},
                                            tmp.path / ("flood-" + tag + ".log"));
    }
};

bool hasSeries(const std::string& metrics, const std::string& series) { return sample(metrics, series) >= 1; }

bool steered(const std::string& mask) { return mask.find_first_not_of("0,\n") != std::string::npos; }

// What the CPUs did over one second and who ran there: printed when a decision is not the expected
// one, so a failure says whether the host (not the daemon) left no spare CPU.
std::string cpuPicture() {
    auto jiffies = [] { return parseProcStat(slurp("/proc/stat")).value(); };
    const auto a = jiffies();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto b = jiffies();
    std::ostringstream os;
    os << "busy over 1 s:";
    for (const auto& [cpu, j] : b) {
        if (!a.count(cpu)) continue;
        const double dt = static_cast<double>(j.total - a.at(cpu).total);
        os << " cpu" << cpu << " " << (dt > 0 ? 100 * static_cast<double>(j.busy - a.at(cpu).busy) / dt : 0) << "%";
    }
    os << "\n" << run({"ps", "-eo", "psr,pcpu,pid,comm", "--sort=-pcpu"}).out.substr(0, 600);
    return os.str();
}

std::string trial(const std::string& candidate) {
    return "rxtune_steering_trial_delivered_pps{candidate=\"" + candidate + "\",interface=\"fb\"}";
}

// The namespace's stack counters, read where the daemon reads them, through the same parser.
rxtune::StackCounters stackOf(const NetNs& ns) {
    auto cat = [&](const char* f) { return ns.exec({"cat", f}).out; };
    return rxtune::stackCounters(cat("/proc/net/snmp"), cat("/proc/net/snmp6"), cat("/proc/net/netstat")).value();
}

std::uint64_t counter(const NetNs& ns, const std::string& dev, const char* name) {
    return std::stoull(ns.sysfsRead("class/net/" + dev + "/statistics/" + name));
}

}  // namespace

TEST_CASE("what the stack delivered: veth and tap count rx after the backlog; a starved reader delivers nothing",
          "[integration][auto]") {
    AutoLab lab;
    // veth, an application reading everything: delivered is what it read.
    {
        const auto s0 = stackOf(lab.receiver);
        const auto rx0 = counter(lab.receiver, "fb", "rx_packets");
        Background sink(lab.receiver, {"taskset", "-c", "1", env("UDP_FLOOD"), "sink", "10.88.0.2", "9000", "4"}, lab.tmp.path / "sink.log");
        std::this_thread::sleep_for(300ms);
        auto f = lab.flood(2, "veth");
        REQUIRE(f->wait() == 0);
        REQUIRE(sink.wait() == 0);
        const double got = std::stod(sink.log());
        const auto s1 = stackOf(lab.receiver);
        const double rx = static_cast<double>(counter(lab.receiver, "fb", "rx_packets") - rx0);
        const double delivered = static_cast<double>(s1.delivered - s0.delivered), lost = static_cast<double>(s1.lost - s0.lost);
        INFO("veth: rx " << rx << ", read by the sink " << got << ", delivered " << delivered << ", lost " << lost);
        REQUIRE(got > 10000);
        CHECK(delivered == Approx(got).margin(got * 0.01 + 100));
        // veth counts only what the backlog took: all of it reached the socket layer, read or lost.
        CHECK(delivered + lost == Approx(rx).margin(rx * 0.01 + 100));
    }
    // tap, frames written as a wire would: the device counts each, the stack delivers them.
    {
        lab.receiver.ip({"tuntap", "add", "dev", "t0", "mode", "tap"});
        lab.receiver.ip({"addr", "add", "10.89.0.1/24", "dev", "t0"});
        lab.receiver.ip({"link", "set", "t0", "up"});
        const auto s0 = stackOf(lab.receiver);
        Background sink(lab.receiver, {env("UDP_FLOOD"), "sink", "10.89.0.1", "9001", "3"}, lab.tmp.path / "tapsink.log");
        std::this_thread::sleep_for(300ms);
        auto w = lab.receiver.exec({env("UDP_FLOOD"), "tap", "t0", "10.89.0.2", "10.89.0.1", "9001", "20000"});
        REQUIRE(w.status == 0);
        REQUIRE(sink.wait() == 0);
        const double got = std::stod(sink.log());
        const auto s1 = stackOf(lab.receiver);
        const double delivered = static_cast<double>(s1.delivered - s0.delivered), lost = static_cast<double>(s1.lost - s0.lost);
        INFO("tap: written 20000, rx_packets " << counter(lab.receiver, "t0", "rx_packets") << ", read " << got << ", delivered "
                                               << delivered << ", lost " << lost);
        CHECK(counter(lab.receiver, "t0", "rx_packets") == 20000);
        CHECK(got + lost == Approx(20000).margin(50));
        CHECK(delivered == Approx(got).margin(100));
    }
    // An application that never reads (a receive livelock looks the same from the stack): frames
    // come in and are lost at its full socket buffer; nothing is delivered, and auto's sample says so.
    {
        rxtune::AutoRaw a, b;
        a.at = 0;
        a.stack = stackOf(lab.receiver);
        a.rxPackets["fb"] = counter(lab.receiver, "fb", "rx_packets");
        Background hold(lab.receiver, {env("UDP_FLOOD"), "hold", "10.88.0.2", "9002", "4"}, lab.tmp.path / "hold.log");
        std::this_thread::sleep_for(300ms);
        auto f = lab.flood(2, "hold", 9002);
        REQUIRE(f->wait() == 0);
        b.at = 2;
        b.stack = stackOf(lab.receiver);
        b.rxPackets["fb"] = counter(lab.receiver, "fb", "rx_packets");
        b.rxAfterBacklog.insert("fb");
        const auto s = rxtune::autoSample(a, b, "fb");
        const double rx = static_cast<double>(b.rxPackets["fb"] - a.rxPackets["fb"]) / 2;
        INFO("starved reader: rx " << rx << "/s, delivered " << s.deliveredPps << "/s, lost " << s.lossPps << "/s");
        REQUIRE(rx > 10000);
        CHECK(s.deliveredPps < rx * 0.05);
        CHECK(s.lossPps > rx * 0.5);
        CHECK(std::string(s.source) == "stack");
        // The device counter alone would have read a busy, healthy receiver.
        CHECK(rxtune::deviceDeliveredPps(rx, s.drops, true) > rx * 0.9);
    }
}

TEST_CASE("mode auto tries RPS and XDP on an expensive receive path and keeps the one that delivered most",
          "[integration][auto]") {
    if (std::thread::hardware_concurrency() < 2) {
        return rxtune::test::skipBecause("mode auto needs a second CPU to steer to");
    }
    AutoLab lab;
    lab.expensiveReceive(100);
    REQUIRE_FALSE(steered(lab.rps()));
    {
        Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "rxtune.yaml").string()},
                          lab.tmp.path / "daemon.log");
        REQUIRE(eventually([&] { return lab.metrics().find("rxtune_applies_total") != std::string::npos; }));
        // Idle: nothing to steer.
        std::this_thread::sleep_for(1500ms);
        INFO(daemon.log());
        CHECK_FALSE(steered(lab.rps()));
        CHECK(hasSeries(lab.metrics(), "rxtune_steering_auto_state{interface=\"fb\",state=\"off\"}"));
        CHECK(lab.metrics().find("rxtune_stack_delivered_packets_total ") != std::string::npos);

        auto flood = lab.flood(90, "a");
        const bool judged = eventually([&] { return daemon.log().find("auto fb: keep") != std::string::npos ||
                                                    daemon.log().find("auto fb: undo") != std::string::npos; }, 45s, 500ms);
        INFO(daemon.log());
        INFO((judged ? std::string() : cpuPicture()));
        REQUIRE(judged);
        CHECK(hasSeries(lab.metrics(), "rxtune_steering_decisions_total{decision=\"enable\",interface=\"fb\",reason=\"saturated\"}"));
        // Both were tried, in the order of their predictions (the first by enable, the other by try),
        // each prediction made before its trial and logged beside what the trial measured.
        CHECK((hasSeries(lab.metrics(), "rxtune_steering_decisions_total{decision=\"try\",interface=\"fb\",reason=\"xdp\"}") ||
               hasSeries(lab.metrics(), "rxtune_steering_decisions_total{decision=\"try\",interface=\"fb\",reason=\"rps\"}")));
        {
            const std::string log = daemon.log();
            const size_t at = log.find("auto fb: enable");
            REQUIRE(at != std::string::npos);
            const std::string line = log.substr(at, log.find('\n', at) - at);
            INFO(line);
            CHECK(line.find(" predicted ") != std::string::npos);  // "trying rps (CPUs 1) predicted 1.90x none (...), then xdp ..."
            CHECK(line.find(", then ") != std::string::npos);
        }
        {
            const std::string pm = lab.metrics();
            CHECK(sample(pm, "rxtune_steering_trial_predicted_pps{candidate=\"rps\",interface=\"fb\"}") > 0);
            CHECK(sample(pm, "rxtune_steering_trial_predicted_pps{candidate=\"xdp\",interface=\"fb\"}") > 0);
            const std::string log = daemon.log();
            size_t versus = 0;
            for (size_t at = log.find(", measured "); at != std::string::npos; at = log.find(", measured ", at + 1)) ++versus;
            CHECK(versus >= 2);  // "rps ...; predicted 1.90x, measured 1.49x (off by 28%)", and xdp's
        }
        // Which mode wins is the bench's business (bench/steer_bench.sh); under ASan, or on a busy
        // machine, neither may beat no steering, and auto rightly undoes. What holds either way:
        // the decision follows the numbers it measured (keep: the best trial delivered at least
        // gain_margin, 5 %, more than none, and was the best), and the kernel holds what it says.
        const std::string m = lab.metrics();
        const double none = sample(m, trial("none")), rps = sample(m, trial("rps")), xdp = sample(m, trial("xdp"));
        INFO("none " << none << " packets/s, rps " << rps << ", xdp " << xdp);
        CHECK(none > 0);
        if (daemon.log().find("auto fb: undo") != std::string::npos) {
            CHECK(std::max(rps, xdp) < 1.05 * none);
            CHECK_FALSE(steered(lab.rps()));
            CHECK_FALSE(lab.xdp());
        } else {
            const bool xdpKept = hasSeries(m, "rxtune_steering_auto_mode{interface=\"fb\",mode=\"xdp\"}");
            const double kept = xdpKept ? xdp : rps;
            CHECK(kept >= 1.05 * none);
            CHECK(kept >= (xdpKept ? rps : xdp));  // the one that delivered most
            // The kernel holds what the metric says: RPS to CPU 1 (the receive CPU 0 left out), or XDP.
            if (xdpKept) {
                CHECK(lab.xdp());
                CHECK_FALSE(steered(lab.rps()));
            } else {
                CHECK(lab.rps().find("2") != std::string::npos);
                CHECK_FALSE(lab.xdp());
            }
            // The load goes: the decision stands (no flapping back and forth).
            flood->signal(SIGKILL);
            std::this_thread::sleep_for(3s);
            CHECK(hasSeries(lab.metrics(), "rxtune_steering_auto_state{interface=\"fb\",state=\"on\"}"));
            CHECK(daemon.log().find("auto fb: undo") == std::string::npos);
            CHECK((xdpKept ? lab.xdp() : steered(lab.rps())));
            // A reload with other thresholds keeps the decision that was kept.
            lab.writeProfile("rx_share: 30%");
            daemon.signal(SIGHUP);
            REQUIRE(eventually([&] { return daemon.log().find("reloaded") != std::string::npos; }));
            std::this_thread::sleep_for(1500ms);
            CHECK((xdpKept ? lab.xdp() : steered(lab.rps())));
            CHECK(hasSeries(lab.metrics(), "rxtune_steering_auto_state{interface=\"fb\",state=\"on\"}"));
        }
        daemon.signal(SIGTERM);
        CHECK(daemon.wait() == 0);
    }
    CHECK_FALSE(steered(lab.rps()));  // on_stop: revert, whichever it was
    CHECK_FALSE(lab.xdp());
}

TEST_CASE("mode auto tries threaded NAPI as a candidate, judges it like the others, and reverts it", "[integration][auto][napi]") {
    if (std::thread::hardware_concurrency() < 2) {
        return rxtune::test::skipBecause("mode auto needs a second CPU to steer to");
    }
    AutoLab lab;
    // veth has a NAPI instance (and so a kthread to pin) only with GRO on.
    REQUIRE(lab.receiver.exec({"ethtool", "-K", "fb", "gro", "on"}).status == 0);
    lab.writeProfile("rx_share: 25%", "[rps, napi]");
    lab.expensiveReceive(100);
    auto threaded = [&] { return lab.receiver.sysfsRead("class/net/fb/threaded") == "1\n"; };
    {
        Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "rxtune.yaml").string()},
                          lab.tmp.path / "daemon.log");
        REQUIRE(eventually([&] { return lab.metrics().find("rxtune_applies_total") != std::string::npos; }));
        auto flood = lab.flood(90, "napi");
        bool sawThreaded = false;
        const bool judged = eventually([&] {
            sawThreaded = sawThreaded || threaded();
            return daemon.log().find("auto fb: keep") != std::string::npos || daemon.log().find("auto fb: undo") != std::string::npos;
        }, 60s, 200ms);
        INFO(daemon.log());
        INFO((judged ? std::string() : cpuPicture()));
        REQUIRE(judged);
        CHECK(sawThreaded);  // the napi trial had threaded NAPI on
        const std::string m = lab.metrics();
        // napi was tried: as the trial after RPS, or alone where no CPU had the room RPS needs (a
        // busy machine: then auto enables napi straight away, with no "try" decision).
        CHECK((hasSeries(m, "rxtune_steering_decisions_total{decision=\"try\",interface=\"fb\",reason=\"napi\"}") ||
               daemon.log().find("no other CPU has 20% idle for RPS or XDP") != std::string::npos));
        CHECK(sample(m, trial("napi")) >= 0);
        CHECK(daemon.log().find("napi: delivered") != std::string::npos);  // its trial, logged with its numbers
        if (hasSeries(m, "rxtune_steering_auto_mode{interface=\"fb\",mode=\"napi\"}")) {
            CHECK(threaded());
            CHECK(sample(m, trial("napi")) >= sample(m, trial("rps")));
        } else {
            CHECK_FALSE(threaded());  // undone, or RPS kept: threaded NAPI is off again
        }
        flood->signal(SIGKILL);
        daemon.signal(SIGTERM);
        CHECK(daemon.wait() == 0);
    }
    CHECK_FALSE(threaded());  // on_stop: revert
    CHECK_FALSE(steered(lab.rps()));
}

TEST_CASE("mode auto leaves busypoll out of its candidates where napi-set has no busy-poll, and says why", "[integration][auto][napi]") {
    AutoLab lab;
    lab.writeProfile("rx_share: 25%", "[busypoll, rps]");
    const json d = json::parse(lab.receiver.exec({rxtuneBin(), "detect", "--json", "-i", "fb"}).out)["interfaces"][0];
    const bool busyPoll = d["napi"]["napi_set"]["busy_poll"] == true;
    struct utsname u {};
    REQUIRE(uname(&u) == 0);
    Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "rxtune.yaml").string()}, lab.tmp.path / "daemon.log");
    REQUIRE(eventually([&] { return lab.metrics().find("rxtune_applies_total") != std::string::npos; }));
    const std::string left = std::string("mode auto: busypoll left out of the candidates: busy-poll needs Linux 6.19 (this kernel: ") + u.release + ")";
    INFO(daemon.log());
    if (busyPoll)
        CHECK(daemon.log().find("busypoll left out") == std::string::npos);
    else
        CHECK(daemon.log().find(left) != std::string::npos);
    daemon.signal(SIGTERM);
    CHECK(daemon.wait() == 0);
    CHECK(lab.receiver.sysfsRead("class/net/fb/threaded") == "0\n");
    // plan leaves it out the same way: a note on stderr, and its one look's trials without it.
    Run plan = lab.receiver.exec({rxtuneBin(), "plan", "--explain", "--profile", (lab.tmp.path / "auto.yaml").string(), "--state-dir",
                                  (lab.tmp.path / "state").string(), "--run-dir", (lab.tmp.path / "run").string()});
    INFO(plan.out << plan.err);
    CHECK((plan.status == 0 || plan.status == 2));
    if (busyPoll) {
        CHECK(plan.err.find("busypoll left out") == std::string::npos);
    } else {
        CHECK(plan.err.find("rxtune: note: " + left) != std::string::npos);
        CHECK(plan.out.find("trials (steering.auto.candidates)") != std::string::npos);
        CHECK(plan.out.find("busypoll (") == std::string::npos);
        CHECK(plan.out.find("rps (") != std::string::npos);
    }
    CHECK(lab.receiver.sysfsRead("class/net/fb/threaded") == "0\n");
}

TEST_CASE("mode auto skips XDP when someone else's XDP program holds the device, and says so", "[integration][auto]") {
    if (std::thread::hardware_concurrency() < 2) {
        return rxtune::test::skipBecause("mode auto needs a second CPU to steer to");
    }
    AutoLab lab;
    lab.expensiveReceive(100);
    // A pass-through XDP program of someone else's (bpf/xdp_pass.bpf.c, loaded by iproute2).
    const auto obj = std::filesystem::path(rxtuneBin()).parent_path().parent_path() / "bpf" / "xdp_pass.bpf.o";
    REQUIRE(std::filesystem::exists(obj));
    lab.receiver.ip({"link", "set", "dev", "fb", "xdpgeneric", "obj", obj.string(), "sec", "xdp"});
    const std::string before = lab.receiver.ip({"-d", "link", "show", "fb"});
    REQUIRE(before.find("xdpgeneric") != std::string::npos);
    Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "rxtune.yaml").string()},
                      lab.tmp.path / "daemon3.log");
    REQUIRE(eventually([&] { return lab.metrics().find("rxtune_applies_total") != std::string::npos; }));
    auto flood = lab.flood(60, "c");
    const bool judged = eventually([&] { return daemon.log().find("auto fb: keep") != std::string::npos ||
                                                daemon.log().find("auto fb: undo") != std::string::npos; }, 45s, 500ms);
    INFO(daemon.log());
    INFO((judged ? std::string() : cpuPicture()));
    REQUIRE(judged);
    CHECK(daemon.log().find("xdp: could not be put in place") != std::string::npos);
    CHECK(daemon.log().find("another XDP program is attached to the device") != std::string::npos);
    CHECK(daemon.log().find("xdp unavailable") != std::string::npos);
    // The other program is untouched, whatever auto decided about RPS.
    CHECK(lab.receiver.ip({"-d", "link", "show", "fb"}).find("xdpgeneric") != std::string::npos);
    if (daemon.log().find("auto fb: keep") != std::string::npos) {
        CHECK(hasSeries(lab.metrics(), "rxtune_steering_auto_mode{interface=\"fb\",mode=\"rps\"}"));
        CHECK(steered(lab.rps()));
    } else {
        // Undone: RPS is off again, and the log says what none and rps delivered.
        CHECK(daemon.log().find("auto fb: undo") != std::string::npos);
        CHECK_FALSE(steered(lab.rps()));
    }
    daemon.signal(SIGTERM);
    CHECK(daemon.wait() == 0);
    CHECK_FALSE(steered(lab.rps()));
    CHECK(lab.receiver.ip({"-d", "link", "show", "fb"}).find("xdpgeneric") != std::string::npos);
    lab.receiver.ip({"link", "set", "dev", "fb", "xdpgeneric", "off"});
}

TEST_CASE("mode auto with a SCHED_FIFO hog on the target ends off; with the hog gone it steers", "[integration][auto]") {
    if (std::thread::hardware_concurrency() < 2) {
        return rxtune::test::skipBecause("mode auto needs a second CPU to steer to");
    }
    // A real-time busy loop owns CPU 1, the only other CPU: it has no spare capacity, so steering
    // would only move the bottleneck onto a CPU an application needs. (Receive work put there by
    // RPS runs in softirq context ahead of the hog and would even deliver more by the stack's count:
    // the hog's share is what min_spare protects; isolated CPUs are left out altogether.)
    AutoLab lab;
    lab.expensiveReceive(100);
    // One process (chrt and taskset exec), so killing it ends it; it ends by itself after 240 s, a
    // bound far past this test's waits before the hold (up to 50 s): a hog that ended by itself
    // must not read as a wrong enable, and the test requires it still running after the hold.
    auto hog = std::make_unique<Background>(lab.receiver,
                                            std::vector<std::string>{"chrt", "-f", "10", "taskset", "-c", "1", "bash", "-c",
                                                                     "while [ $SECONDS -lt 240 ]; do :; done"},
                                            lab.tmp.path / "hog.log");
    // The hog is what the test is about: a SCHED_FIFO bash on CPU 1 before the daemon looks.
    const std::string hogProc = "/proc/" + std::to_string(hog->pid());
    const bool hogging = eventually([&] {
        const std::string stat = slurp(hogProc + "/stat"), status = slurp(hogProc + "/status");
        const auto close = stat.rfind(')');
        if (close == std::string::npos || close + 2 > stat.size()) return false;
        std::istringstream rest(stat.substr(close + 2));
        std::vector<std::string> f{std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
        // Fields from the state on (the 3rd): policy is the 41st.
        return stat.find("(bash)") != std::string::npos && f.size() > 38 && f[38] == "1" &&
               status.find("Cpus_allowed_list:\t1\n") != std::string::npos;
    });
    INFO(hog->log());
    REQUIRE(hogging);
    Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "rxtune.yaml").string()},
                      lab.tmp.path / "daemon2.log");
    REQUIRE(eventually([&] { return lab.metrics().find("rxtune_applies_total") != std::string::npos; }));
    auto flood = lab.flood(60, "b");
    const bool held = eventually([&] { return daemon.log().find("auto fb: hold") != std::string::npos; }, 30s, 500ms);
    INFO(daemon.log());
    INFO((held ? std::string() : cpuPicture()));
    REQUIRE(held);
    CHECK(daemon.log().find("no other CPU has 20% idle") != std::string::npos);
    std::this_thread::sleep_for(2s);
    REQUIRE_FALSE(hog->exited());
    {
        const bool enabled = daemon.log().find("auto fb: enable") != std::string::npos;
        INFO("after the hold: " << daemon.log());
        INFO((enabled ? cpuPicture() : std::string()));
        CHECK_FALSE(enabled);
    }
    CHECK_FALSE(steered(lab.rps()));
    CHECK_FALSE(lab.xdp());
    const std::string m = lab.metrics();
    CHECK(hasSeries(m, "rxtune_steering_decisions_total{decision=\"hold\",interface=\"fb\",reason=\"no_spare_cpu\"}"));
    CHECK(hasSeries(m, "rxtune_steering_auto_state{interface=\"fb\",state=\"off\"}"));
    CHECK(hasSeries(m, "rxtune_steering_auto_mode{interface=\"fb\",mode=\"none\"}"));
    // The hog goes: CPU 1 has room again and auto tries the candidates.
    hog->signal(SIGKILL);
    hog.reset();
    CHECK(eventually([&] { return daemon.log().find("auto fb: enable") != std::string::npos; }, 20s, 500ms));
    daemon.signal(SIGTERM);
    CHECK(daemon.wait() == 0);
    CHECK_FALSE(steered(lab.rps()));
    CHECK_FALSE(lab.xdp());
}

TEST_CASE("BPF accounting pauses while a CPU runs more NET_RX softirqs than bpf_max_softirq_rate, then resumes",
          "[integration][auto][bpf]") {
    AutoLab lab;
    // A share auto never reaches: steering would move the softirqs (RPS enqueues from the sender's
    // context and the target polls its backlog in batches), and the rate the governor sees with them.
    lab.writeProfile("rx_share: 100%");
    lab.writeConfig("bpf.yaml", "metrics_interval: 300ms\nbpf_max_softirq_rate: 20000\n");
    const std::string available = "rxtune_bpf_info{program=\"softirq\",state=\"available\"}";
    const std::string paused = "rxtune_bpf_info{program=\"softirq\",state=\"paused\"}";
    {
        Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "bpf.yaml").string()},
                          lab.tmp.path / "daemon-bpf.log");
        REQUIRE(eventually([&] { return hasSeries(lab.metrics(), available); }));
        // The flood is one softirq per datagram on CPU 0: hundreds of thousands a second.
        auto flood = lab.flood(30, "c");
        const bool wasPaused = eventually([&] { return daemon.log().find("paused") != std::string::npos; }, 15s, 200ms);
        INFO(daemon.log());
        REQUIRE(wasPaused);
        CHECK(daemon.log().find("above bpf_max_softirq_rate 20000") != std::string::npos);
        CHECK(hasSeries(lab.metrics(), paused));
        // While paused the BPF totals stand still.
        const std::string before = lab.metrics();
        std::this_thread::sleep_for(1s);
        const std::string netRx0 = "rxtune_softirq_net_rx_seconds_total{cpu=\"0\"}";
        REQUIRE(sample(before, netRx0) > 0);  // the flood's first interval, counted before the pause
        CHECK(sample(lab.metrics(), netRx0) == sample(before, netRx0));
        flood->signal(SIGKILL);
        const bool resumed = eventually([&] { return daemon.log().find("resumed") != std::string::npos; }, 15s, 200ms);
        INFO(daemon.log());
        CHECK(resumed);
        CHECK(eventually([&] { return hasSeries(lab.metrics(), available); }));
        daemon.signal(SIGTERM);
        CHECK(daemon.wait() == 0);
    }
    // bpf_accounting: off: nothing loaded, said once, the state says so.
    lab.writeConfig("off.yaml", "metrics_interval: 300ms\nbpf_accounting: off\n");
    Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "off.yaml").string()},
                      lab.tmp.path / "daemon-off.log");
    REQUIRE(eventually([&] { return hasSeries(lab.metrics(), "rxtune_bpf_info{program=\"softirq\",state=\"disabled\"}"); }));
    CHECK(daemon.log().find("BPF softirq accounting off (bpf_accounting: off)") != std::string::npos);
    CHECK(lab.metrics().find("rxtune_softirq_net_rx_seconds_total{") == std::string::npos);
    daemon.signal(SIGTERM);
    CHECK(daemon.wait() == 0);
}
