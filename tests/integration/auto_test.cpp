// steering: mode: auto against the real kernel: a simulated single-queue device (a veth whose
// receive work lands on the sender's CPU), a UDP flood from another netns pinned to CPU 0, and
// the daemon deciding from what it measures.
#include <catch2/catch.hpp>

#include <sched.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "inventory/softnet.hpp"
#include "support.hpp"

using namespace rxtune::itest;
using rxtune::parseProcStat;
using namespace std::chrono_literals;

namespace {

struct AutoLab {
    NetNs sender, receiver;
    TempDir tmp;
    AutoLab() {
        mustRun({"ip", "-n", sender.name(), "link", "add", "fa", "type", "veth", "peer", "name", "fb", "netns", receiver.name()});
        sender.ip({"addr", "add", "10.88.0.1/24", "dev", "fa"});
        receiver.ip({"addr", "add", "10.88.0.2/24", "dev", "fb"});
        sender.ip({"link", "set", "fa", "up"});
        receiver.ip({"link", "set", "fb", "up"});
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
    // worse_margin 50 %: what RPS gains on this flood is up to the VM (measured from -21 % to +23 %
    // on the 2-core CI machine), so the test checks the mechanics (enable, judge, keep or undo,
    // state, metrics) and leaves the judgement of small differences to the unit tests; a change
    // that halves what gets through (the busy loop below) is still undone.
    void writeProfile(const std::string& share) const {
        std::ofstream(tmp.path / "auto.yaml") << "match:\n  interfaces: [fb]\n  virtual: include\n"
                                                 "steering:\n  mode: auto\n  xps: false\n  default_mask: false\n"
                                                 "  auto: {" << share << ", busy: 0.8, min_spare: 0.2, worse_margin: 50%, sustain: 2, window: 2s, backoff: 10m}\n";
    }
    ~AutoLab() { run({"umount", (tmp.path / "bpffs").string()}); }
    std::string metrics() const { return receiver.exec({"curl", "-s", "--max-time", "2", "http://127.0.0.1:19875/metrics"}).out; }
    std::string rps() const { return receiver.sysfsRead("class/net/fb/queues/rx-0/rps_cpus"); }
    // A flood from CPU 0 for `seconds`. Nothing listens: the receive path runs to the UDP lookup and
    // drops, all of it on CPU 0, leaving CPU 1 idle to steer to.
    std::unique_ptr<Background> flood(int seconds, const std::string& tag) {
        return std::make_unique<Background>(sender, std::vector<std::string>{"taskset", "-c", "0", env("UDP_FLOOD"), "send", "10.88.0.2", "9000",
                                                        std::to_string(seconds), "64"},
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

}  // namespace

TEST_CASE("mode auto turns steering on under load, keeps it when the load goes, undoes a change onto busy CPUs",
          "[integration][auto]") {
    if (std::thread::hardware_concurrency() < 2) {
        WARN("mode auto needs a second CPU to steer to");
        return;
    }
    AutoLab lab;
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

        auto flood = lab.flood(60, "a");
        const bool on = eventually([&] { return steered(lab.rps()); }, 30s, 500ms);
        INFO(daemon.log());
        INFO((on ? std::string() : cpuPicture()));
        REQUIRE(on);
        CHECK(lab.rps().find("2") != std::string::npos);  // CPU 1: the receive CPU 0 is left out
        CHECK(hasSeries(lab.metrics(), "rxtune_steering_decisions_total{decision=\"enable\",interface=\"fb\",reason=\"saturated\"}"));
        REQUIRE(eventually([&] { return daemon.log().find("auto fb: keep") != std::string::npos ||
                                        daemon.log().find("auto fb: undo") != std::string::npos; }, 30s, 500ms));
        INFO(daemon.log());
        REQUIRE(daemon.log().find("auto fb: keep") != std::string::npos);
        // The load goes: the decision stands (no flapping back and forth).
        flood->signal(SIGKILL);
        std::this_thread::sleep_for(3s);
        CHECK(steered(lab.rps()));
        CHECK(daemon.log().find("auto fb: undo") == std::string::npos);
        CHECK(hasSeries(lab.metrics(), "rxtune_steering_auto_state{interface=\"fb\",state=\"on\"}"));
        // A reload with other thresholds keeps the decision that was kept.
        lab.writeProfile("rx_share: 30%");
        daemon.signal(SIGHUP);
        REQUIRE(eventually([&] { return daemon.log().find("reloaded") != std::string::npos; }));
        std::this_thread::sleep_for(1500ms);
        CHECK(steered(lab.rps()));
        CHECK(hasSeries(lab.metrics(), "rxtune_steering_auto_state{interface=\"fb\",state=\"on\"}"));
        daemon.signal(SIGTERM);
        CHECK(daemon.wait() == 0);
    }
    CHECK_FALSE(steered(lab.rps()));  // on_stop: revert

    // A forced bad outcome: as soon as steering goes on, a real-time busy loop takes the target CPU,
    // so less gets through than before: the daemon undoes it and says why.
    lab.writeProfile("rx_share: 25%");
    Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "rxtune.yaml").string()},
                      lab.tmp.path / "daemon2.log");
    REQUIRE(eventually([&] { return lab.metrics().find("rxtune_applies_total") != std::string::npos; }));
    auto flood = lab.flood(60, "b");
    const bool on = eventually([&] { return steered(lab.rps()); }, 30s, 500ms);
    INFO(daemon.log());
    INFO((on ? std::string() : cpuPicture()));
    REQUIRE(on);
    // One process (chrt and taskset exec), so killing it ends it; it also ends by itself (~10-30 s).
    Background hog(lab.receiver, {"chrt", "-f", "10", "taskset", "-c", "1", "sh", "-c",
                                  "i=0; while [ $i -lt 150000000 ]; do i=$((i+1)); done"},
                   lab.tmp.path / "hog.log");
    const bool undone = eventually([&] { return daemon.log().find("auto fb: undo") != std::string::npos; }, 30s, 500ms);
    INFO(daemon.log());
    REQUIRE(undone);
    hog.signal(SIGKILL);
    const std::string m = lab.metrics();
    CHECK((hasSeries(m, "rxtune_steering_decisions_total{decision=\"undo\",interface=\"fb\",reason=\"worse\"}") ||
           hasSeries(m, "rxtune_steering_decisions_total{decision=\"undo\",interface=\"fb\",reason=\"targets_busy\"}")));
    CHECK(eventually([&] { return !steered(lab.rps()); }));
    CHECK(hasSeries(lab.metrics(), "rxtune_steering_auto_state{interface=\"fb\",state=\"backoff\"}"));
    daemon.signal(SIGTERM);
    CHECK(daemon.wait() == 0);
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
