#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../support/fixture.hpp"
#include "../support/kernel_irq_tree.hpp"
#include <prometheus/text_serializer.h>

#include "core/text.hpp"
#include "daemon/reconciler.hpp"

using namespace rxtune;

namespace {


struct ReconcilerRig {
    test::TempTree tree{"story-20cpu-single-queue"};
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fs{tree.path().string()};
    test::FakeNetlink nl{tree.path()};
    Metrics metrics{"test"};
    Profile profile;
    std::vector<std::string> interfaces;
    Reconciler r{fs, nl, {}, (state.path() / "state").string(), metrics};

    ReconcilerRig() {
        profile = loadProfile("single-queue-gateway", {std::getenv("RXTUNE_PROFILES")}).value();
        profile.steering.mode = SteeringMode::kRps;
        r.configure(&profile, &interfaces);
    }
};

}  // namespace

TEST_CASE("the reconciler applies the whole host, then answers events for their devices only", "[daemon]") {
    ReconcilerRig rig;
    const auto before = test::contents(rig.tree.path());
    REQUIRE(rig.r.run(Reconciler::Why::kStart));
    CHECK(rig.r.steered() == std::vector<std::string>{"enp2s0"});
    const auto steered = test::contents(rig.tree.path());
    CHECK(steered != before);
    // Someone clears a mask; an event about another device does not put it right (that is the
    // drift timer's job), and reads nothing of enp2s0's.
    rig.tree.put("sys/class/net/enp2s0/queues/rx-0/rps_cpus", "00000\n");
    const std::set<std::string> other{"veth7"};
    REQUIRE(rig.r.run(Reconciler::Why::kEvent, &other));
    CHECK(rig.fs.read("sys/class/net/enp2s0/queues/rx-0/rps_cpus").value() == "00000\n");
    CHECK(rig.r.steered() == std::vector<std::string>{"enp2s0"});
    // An event about enp2s0 (a reset) puts its knobs back.
    const std::set<std::string> nic{"enp2s0"};
    REQUIRE(rig.r.run(Reconciler::Why::kEvent, &nic));
    CHECK(test::contents(rig.tree.path()) == steered);
    // Revert gives back the host as it was.
    REQUIRE(rig.r.revert());
    CHECK(test::contents(rig.tree.path()) == before);
}

TEST_CASE("an event concerns the devices rxtune steers, names or may match", "[daemon]") {
    ReconcilerRig rig;
    REQUIRE(rig.r.run(Reconciler::Why::kStart));
    int kindAsked = 0;
    auto kind = [&](const char* k) {
        return [&kindAsked, k] {
            ++kindAsked;
            return std::string(k);
        };
    };
    CHECK(rig.r.concerns("enp2s0", kind("")));      // steered
    CHECK_FALSE(rig.r.concerns("lo", kind("")));
    CHECK_FALSE(rig.r.concerns("veth1", kind("veth")));  // the gateway profile leaves virtual devices out
    CHECK(rig.r.concerns("eth9", kind("")));        // may be a physical NIC: read it
    CHECK(kindAsked == 2);                          // the steered one and lo needed no kind
    rig.interfaces = {"eth9"};                      // an explicit list: only its names (and ours)
    CHECK(rig.r.concerns("eth9", kind("")));
    CHECK_FALSE(rig.r.concerns("eth8", kind("")));
    CHECK(rig.r.concerns("enp2s0", kind("")));
}

namespace {

// A reconciler over a fixture host whose /proc/irq acts as the kernel's, keeping `profileText`.
struct IrqRig {
    test::TempTree tree;
    test::TempTree state{"vm-no-cpufreq"};
    test::KernelIrqTree fs;
    test::FakeNetlink nl{tree.path()};
    Metrics metrics{"test"};
    Profile profile;
    std::vector<std::string> interfaces;
    Reconciler r{fs, nl, {}, (state.path() / "state").string(), metrics};
    IrqRig(const char* host, const std::string& profileText, std::set<unsigned> managed = {}, bool lazy = false)
        : tree(host), fs(tree.path().string(), std::move(managed), lazy) {
        profile = loadProfileText(profileText, "p.yaml", {}).value();
        r.configure(&profile, &interfaces);
    }
};

}  // namespace

TEST_CASE("a pinned IRQ someone moved is put back at the drift check, counted, and published for irqbalance", "[daemon][irq]") {
    IrqRig rig("r8125-irqbalance", "steering:\n  mode: none\nirq:\n  cpus: auto\n");
    auto& [tree, state, fs, nl, metrics, profile, interfaces, r] = rig;
    const std::filesystem::path run = state.path() / "run";
    r.setRunDir(run.string());
    auto slurp = [](const std::filesystem::path& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    REQUIRE(r.run(Reconciler::Why::kStart));
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "3");
    CHECK(slurp(run / "pinned-irqs") == "130\n");
    // irqbalance (or a person) moves it.
    REQUIRE(fs.write("proc/irq/130/smp_affinity_list", "0-1"));
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "3");
    const std::string text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
    // irqbalance runs (pid 941), without rxtune's policy script: its move, and drift.
    CHECK(text.find("rxtune_irq_moves_total{by=\"irqbalance\",interface=\"enp3s0\",irq=\"130\"} 1") != std::string::npos);
    CHECK(text.find("rxtune_drift_corrections_total{interface=\"enp3s0\",setting=\"irq_affinity\"} 1") != std::string::npos);
    REQUIRE(r.revert());
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "0-7");  // the original, as the plan read it
    CHECK(slurp(run / "pinned-irqs").empty());
}

namespace {

// A driver whose ring change resets the device (igb, r8169 take the link down and up): each
// RINGS_SET (an ethtool SET) queues the link event that follows, and clears the queue's RPS mask, as a driver that
// reallocates its queues does.
class ResettingNetlink final : public test::FakeNetlink {
public:
    ResettingNetlink(const std::filesystem::path& root, FileTree& fs) : FakeNetlink(root), fs_(fs) {}
    Result<void> ethtoolSet(const EthtoolMessage& m, const std::string& ifname, const std::map<std::string, std::uint32_t>& values) override {
        if (auto r = FakeNetlink::ethtoolSet(m, ifname, values); !r) return r;
        if (auto r = fs_.write("sys/class/net/" + ifname + "/queues/rx-0/rps_cpus", "00"); !r) return r;
        events.push_back(ifname);
        return {};
    }
    std::vector<std::string> events;

private:
    FileTree& fs_;
};

}  // namespace

TEST_CASE("a ring change that resets the link does not make the daemon loop on its own events", "[daemon][rings]") {
    test::TempTree tree{"r8125-irqbalance"};
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fs(tree.path().string());
    ResettingNetlink nl(tree.path(), fs);
    Metrics metrics("test");
    Profile profile = loadProfileText("steering:\n  mode: rps\n  cpus: 0-3\n  xps: false\nnic:\n  rings: {rx: max}\n", "p.yaml", {}).value();
    std::vector<std::string> interfaces;
    Reconciler r(fs, nl, {}, (state.path() / "state").string(), metrics);
    r.configure(&profile, &interfaces);
    REQUIRE(r.run(Reconciler::Why::kStart));
    CHECK(nl.ethtoolSets == 1);
    CHECK(nl.ethtoolValue("rings", "enp3s0", "rx") == 1024);
    // The daemon answers each event the reset fired; none may set the ring again (and so fire more).
    int handled = 0;
    while (!nl.events.empty() && handled < 10) {
        const std::set<std::string> devices{nl.events.front()};
        nl.events.erase(nl.events.begin());
        REQUIRE(r.run(Reconciler::Why::kEvent, &devices));
        ++handled;
    }
    CHECK(handled == 1);
    CHECK(nl.ethtoolSets == 1);
    // What the reset did cost is put back once: the RPS mask the driver cleared.
    CHECK(trimmed(fs.read("sys/class/net/enp3s0/queues/rx-0/rps_cpus").value()) == "f");
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(nl.ethtoolSets == 1);
    CHECK(nl.events.empty());
}

namespace {

class StepClock final : public Clock {
public:
    std::uint64_t wallNanoseconds() const override { return 0; }
    double monotonicSeconds() const override { return now; }
    double now = 1000;
};

}  // namespace

TEST_CASE("the daemon tells irqbalance before it pins, and again after irqbalance's first pass when it dropped the request", "[daemon][irq]") {
    IrqRig rig("r8125-irqbalance", "steering:\n  mode: none\nirq:\n  cpus: '3'\n");
    auto& [tree, state, fs, nl, metrics, profile, interfaces, r] = rig;
    r.setRunDir((state.path() / "run").string());
    StepClock clock;
    r.useClock(clock);
    struct Recorder final : ProcessSignals {
        explicit Recorder(const FileTree& f) : fs(f) {}
        Result<void> hangUp(int, const std::string&) override {
            affinity.push_back(trimmed(fs.read("proc/irq/130/smp_affinity_list").value()));
            return {};
        }
        const FileTree& fs;
        std::vector<std::string> affinity;  // IRQ 130's, at each SIGHUP
    } signals(fs);
    r.useSignals(signals);
    // irqbalance with rxtune's script and its default 10 s interval, started 1 s ago (at 2.5 s),
    // its socket not made yet (reading its IRQs).
    const char cmdline[] = "/usr/sbin/irqbalance\0--policyscript=/usr/share/rxtune/irqbalance/rxtune-policy\0";
    tree.put("proc/941/cmdline", std::string(cmdline, sizeof cmdline - 1));
    tree.put("proc/941/stat", "941 (irqbalance) S 1 941 941 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 250 0 0\n");
    tree.put("proc/uptime", "3.50 5.00\n");
    REQUIRE(r.run(Reconciler::Why::kStart));
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "3");
    CHECK(signals.affinity == std::vector<std::string>{"0-7"});  // told before the write, once
    // 5 s on, irqbalance has not made its first pass: not told again yet.
    clock.now += 5;
    tree.put("proc/uptime", "8.50 5.00\n");
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(signals.affinity.size() == 1);
    // Its first pass moved the IRQ; the next drift check puts it back and tells irqbalance again.
    // Its socket was made 12 s ago (its interval and 1.5 s: the first pass has come).
    clock.now += 10;
    tree.put("proc/uptime", "18.50 5.00\n");
    tree.put("run/irqbalance/irqbalance941.sock", "");
    std::filesystem::last_write_time(tree.path() / "run/irqbalance/irqbalance941.sock",
                                     std::filesystem::file_time_type::clock::now() - std::chrono::seconds(12));
    REQUIRE(fs.write("proc/irq/130/smp_affinity_list", "5"));
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "3");
    CHECK(signals.affinity == std::vector<std::string>{"0-7", "3"});
    // Then nothing more to say.
    clock.now += 30;
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(signals.affinity.size() == 2);
    // irqbalance asks rxtune's script and moved it before the rescan that bans it: its move, put
    // back, no drift.
    auto text = [&metrics = metrics] { return prometheus::TextSerializer().Serialize(metrics.registry()->Collect()); };
    CHECK(text().find("rxtune_irq_moves_total{by=\"irqbalance\",interface=\"enp3s0\",irq=\"130\"} 1") != std::string::npos);
    CHECK(text().find("setting=\"irq_affinity\"") == std::string::npos);
    // The same irqbalance moving it again: its ban does not hold, and that is drift.
    REQUIRE(fs.write("proc/irq/130/smp_affinity_list", "6"));
    clock.now += 30;
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "3");
    CHECK(text().find("rxtune_irq_moves_total{by=\"irqbalance\",interface=\"enp3s0\",irq=\"130\"} 2") != std::string::npos);
    CHECK(text().find("rxtune_drift_corrections_total{interface=\"enp3s0\",setting=\"irq_affinity\"} 1") != std::string::npos);
}

TEST_CASE("irq.cpus auto in the daemon: the second run judges other work by the rate since the first", "[daemon][irq]") {
    IrqRig rig("r8125-irqbalance", "steering:\n  mode: none\nirq:\n  cpus: auto\n");
    auto& [tree, state, fs, nl, metrics, profile, interfaces, r] = rig;
    StepClock clock;
    r.useClock(clock);
    REQUIRE(r.run(Reconciler::Why::kStart));
    REQUIRE(fs.read("proc/irq/130/smp_affinity_list").value() == "3");  // since boot: nothing else on 3
    // Over the next 30 s the SMBus IRQ (CPU 2's 31 since boot) fires 300000 times on CPU 3: since
    // boot CPU 3 would still look no busier than CPU 0 (892000), by rate it is the busiest.
    std::string text = fs.read("proc/interrupts").value();
    const auto at = text.find("\n  16:");
    REQUIRE(at != std::string::npos);
    const auto end = text.find('\n', at + 1);
    std::string line = text.substr(at + 1, end - at - 1);
    auto words = splitFields(line);
    REQUIRE(words.size() > 9);
    words[4] = "300000";  // CPU 3's column
    std::string rebuilt;
    for (const auto& w : words) rebuilt += (rebuilt.empty() ? "" : " ") + w;
    text.replace(at + 1, end - at - 1, rebuilt);
    tree.put("proc/interrupts", text);
    clock.now += 30;
    REQUIRE(r.run(Reconciler::Why::kDrift));
    // 10000/s on CPU 3 now, while every other CPU took no other interrupt in those 30 s: the IRQ
    // goes to the first of them, CPU 0 (by counts since boot the busiest, 892000).
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "0");
    // A new choice, not somebody's move: neither counted as drift nor as an IRQ move.
    const std::string text2 = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
    CHECK(text2.find("rxtune_irq_moves_total{") == std::string::npos);
    CHECK(text2.find("setting=\"irq_affinity\"") == std::string::npos);
    REQUIRE(r.revert());
}

TEST_CASE("a managed IRQ the kernel refused is not tried again at every run, only after an event about its device", "[daemon][irq]") {
    IrqRig rig("mlx5-one-channel", "steering:\n  mode: none\nirq:\n  cpus: '9'\n", {99});
    auto& fs = rig.fs;
    auto& r = rig.r;
    REQUIRE(r.run(Reconciler::Why::kStart));
    CHECK(fs.refusals == 1);
    REQUIRE(r.run(Reconciler::Why::kDrift));
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(fs.refusals == 1);
    // An event about the device (a driver reload may have made it an ordinary IRQ): tried again.
    const std::set<std::string> dev{"ens2f0np0"};
    REQUIRE(r.run(Reconciler::Why::kEvent, &dev));
    CHECK(fs.refusals == 2);
    REQUIRE(r.revert());
}

TEST_CASE("the daemon says an IRQ move is pending, and warns once when the IRQ goes on firing elsewhere", "[daemon][irq]") {
    IrqRig rig("r8125-irqbalance", "steering:\n  mode: none\nirq:\n  cpus: '5'\n", {}, true);
    auto& [tree, state, fs, nl, metrics, profile, interfaces, r] = rig;
    auto settings = [&metrics = metrics](const char* state) {
        const std::string text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
        const std::string key = std::string("rxtune_settings{state=\"") + state + "\"} ";
        const auto at = text.find(key);
        return at == std::string::npos ? -1.0 : std::stod(text.substr(at + key.size()));
    };
    REQUIRE(r.run(Reconciler::Why::kStart));
    CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "5");
    CHECK(settings("pending") == 1);
    CHECK(settings("in_sync") == 0);
    // A drift check before the IRQ fired: still pending, nothing written again.
    REQUIRE(r.run(Reconciler::Why::kDrift));
    CHECK(settings("pending") == 1);
    CHECK(settings("not_in_effect") == 0);
    SECTION("it fires and moves: in effect") {
        fs.fire(130);
        REQUIRE(r.run(Reconciler::Why::kDrift));
        CHECK(settings("pending") == 0);
        CHECK(settings("in_sync") == 1);
    }
    SECTION("it fires on its old CPU and stays there: not followed, counted, not written again") {
        fs.fire(130, false);
        REQUIRE(r.run(Reconciler::Why::kDrift));
        CHECK(settings("not_in_effect") == 1);
        CHECK(settings("pending") == 0);
        fs.fire(130, false);
        REQUIRE(r.run(Reconciler::Why::kDrift));
        CHECK(settings("not_in_effect") == 1);
        CHECK(fs.read("proc/irq/130/smp_affinity_list").value() == "5");
    }
}
