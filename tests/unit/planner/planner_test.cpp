#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include <algorithm>
#include <map>
#include <random>

#include "../support/fixture.hpp"
#include "apply/prepare.hpp"
#include "bpf/xdp_spec.hpp"
#include "planner/planner.hpp"

using namespace rxtune;

namespace {


// A shipped profile with its steering pinned to mode rps: the static shape the golden tests check
// (the shipped gateway and balanced profiles are mode auto and steer only when measured saturated).
Profile rpsProfile(const std::string& name) {
    auto p = loadProfile(name, test::shippedProfiles()).value();
    p.steering.mode = SteeringMode::kRps;
    return p;
}


// One line per setting: the golden form the tests pin.
std::vector<std::string> plannerLines(const Plan& p) {
    std::vector<std::string> out;
    for (const auto& s : p.settings) out.push_back(s.id + " " + s.current + " -> " + s.desired);
    for (const auto& s : p.skipped) out.push_back("skip " + s.id);
    return out;
}

}  // namespace

TEST_CASE("single-queue-gateway on the story's host", "[planner]") {
    auto profile = rpsProfile("single-queue-gateway");
    auto p = plan(profile, test::snapshotOf("story-20cpu-single-queue"), {}).value();
    CHECK(p.interfaces == std::vector<std::string>{"enp2s0"});
    std::vector<std::string> want = {
        "sysctl net.core.netdev_max_backlog 1000 -> 300000",
        "sysctl net.core.rmem_max 212992 -> 268435456",
        "sysctl net.core.rps_sock_flow_entries 0 -> 32768",
        "sysctl net.core.wmem_max 212992 -> 268435456",
        "sysctl net.ipv4.tcp_rmem 4096 131072 6291456 -> 4096 131072 268435456",
        "sysctl net.ipv4.tcp_wmem 4096 16384 4194304 -> 4096 16384 268435456",
        "sysctl net.core.rps_default_mask 0 -> fffff",
        "enp2s0 rx-0 rps_cpus 0 -> fffff",
        "enp2s0 rx-0 rps_flow_cnt 0 -> 32768",
    };
    for (unsigned c = 0; c < 20; ++c) want.push_back("cpu" + std::to_string(c) + " governor powersave -> performance");
    want.push_back("skip enp2s0 xps");
    CHECK(plannerLines(p) == want);
    CHECK(p.pendingCount() == 29);
}

TEST_CASE("balanced leaves out the IRQ CPU and isolated CPUs", "[planner]") {
    auto profile = rpsProfile("balanced");
    auto p = plan(profile, test::snapshotOf("story-20cpu-single-queue"), {}).value();
    // IRQ 45 is served by CPU 3 (effective affinity): every CPU but 3.
    CHECK(p.settings[3].id == "enp2s0 rx-0 rps_cpus");
    CHECK(p.settings[3].desired == CpuSet::parseList("0-2,4-19").value().toMask());
}

TEST_CASE("explicit interfaces, virtual devices, XPS over several TX queues", "[planner]") {
    auto profile = loadProfileText("include: balanced\nsteering:\n  mode: rps\n  exclude_irq_cpus: false\n", "t.yaml", test::shippedProfiles()).value();
    PlanOptions opts;
    opts.interfaces = {"veth0"};
    auto p = plan(profile, test::snapshotOf("isolated-cpus-netns"), opts).value();
    CHECK(p.interfaces == std::vector<std::string>{"veth0"});
    // Non-initial netns: the host-global sysctls are skipped, not silently dropped.
    bool skippedBacklog = false, skippedFlows = false;
    for (const auto& s : p.skipped) {
        skippedBacklog = skippedBacklog || s.id == "sysctl net.core.netdev_max_backlog";
        skippedFlows = skippedFlows || s.id == "sysctl net.core.rps_sock_flow_entries";
    }
    CHECK(skippedBacklog);
    CHECK(skippedFlows);
    // CPUs 2-3 are isolated: 0-1,4-7 remain; 4 TX queues share them round-robin.
    std::map<std::string, std::string> desired;
    for (const auto& s : p.settings) desired[s.id] = s.desired;
    CHECK(desired["veth0 rx-0 rps_cpus"] == "f3");
    CHECK(desired["veth0 rx-0 rps_flow_cnt"] == "8192");
    CHECK(desired["veth0 tx-0 xps_cpus"] == "41");  // CPUs 0,6
    CHECK(desired["veth0 tx-1 xps_cpus"] == "82");  // CPUs 1,7
    CHECK(desired["veth0 tx-2 xps_cpus"] == "10");  // CPU 4
    CHECK(desired["veth0 tx-3 xps_cpus"] == "20");  // CPU 5
    // Without explicit interfaces the profile's match excludes virtual devices.
    CHECK(plan(profile, test::snapshotOf("isolated-cpus-netns"), {}).value().interfaces.empty());
}

TEST_CASE("numa-local steering and a cgroup's cpuset", "[planner]") {
    auto numa = loadProfileText("steering:\n  cpus: numa-local\nmatch:\n  verdict: any\n", "n.yaml", test::shippedProfiles()).value();
    auto p = plan(numa, test::snapshotOf("numa2-multi-queue"), {}).value();
    CHECK(p.settings[1].id == "sysctl net.core.rps_default_mask");
    size_t masks = 0;
    for (const auto& s : p.settings)
        if (s.id.ends_with("rps_cpus")) {
            ++masks;
            CHECK(s.desired == "ff00");
        }
    CHECK(masks == 8);  // ens1f0's eight RX queues
    auto cg = loadProfileText("steering:\n  cpus: cgroup:/docker/abc123\nmatch:\n  verdict: any\n", "c.yaml", test::shippedProfiles()).value();
    PlanOptions opts;
    opts.cgroupCpus["/docker/abc123"] = CpuSet::range(8, 11);
    auto q = plan(cg, test::snapshotOf("numa2-multi-queue"), opts).value();
    masks = 0;
    for (const auto& s : q.settings)
        if (s.id.ends_with("rps_cpus")) {
            ++masks;
            CHECK(s.desired == "f00");
        }
    CHECK(masks == 8);
    auto missing = plan(cg, test::snapshotOf("numa2-multi-queue"), {});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message() == "c.yaml:2:9: steering.cpus: cgroup /docker/abc123 does not exist");
    // The cgroup's CPU quota, read from the tree, is said where it is far below its cpuset.
    auto root = test::fixtureRoot("numa2-multi-queue");
    FileTree fs(root.string());
    const HostSnapshot host = test::snapshotOf("numa2-multi-queue");
    PlanOptions real;
    real.explain = true;
    REQUIRE(addCgroupCpus(cg, fs, host.host, real));
    CHECK(real.cgroupQuota.at("/docker/abc123").cpus == Approx(2.0));
    auto e = plan(cg, host, real).value();
    bool said = false;
    for (const auto& line : e.explanation)
        said = said || (line.find("cgroup /docker/abc123 CPU quota: 2.00 CPUs' worth of time") != std::string::npos &&
                        line.find("far below its cpuset's 8 CPUs") != std::string::npos);
    CHECK(said);
}

TEST_CASE("a CPU that does not exist and an unknown sysctl are located errors", "[planner]") {
    auto cpus = loadProfileText("steering:\n  cpus: 0-63\n", "x.yaml", test::shippedProfiles()).value();
    auto e = plan(cpus, test::snapshotOf("vm-no-cpufreq"), {});
    REQUIRE_FALSE(e);
    CHECK(e.error().message() == "x.yaml:2:9: steering.cpus: CPU 4-63 does not exist or is offline (online: 0-3)");
    auto sys = loadProfileText("sysctl:\n  net.core.rmem_maxx: 5\n", "y.yaml", test::shippedProfiles()).value();
    auto e2 = plan(sys, test::snapshotOf("vm-no-cpufreq"), {});
    REQUIRE_FALSE(e2);
    CHECK(e2.error().message() == "y.yaml:2:23: sysctl.net.core.rmem_maxx: no such sysctl on this host");
}

TEST_CASE("guards only raise or only lower; absent cpufreq is said, not hidden", "[planner]") {
    auto prof = loadProfileText(
                    "sysctl:\n  net.core.rmem_max: '>= 1000'\n  net.core.wmem_max: '<= 1000'\n"
                    "  net.core.somaxconn: 128\ncpu:\n  governor: [performance]\n",
                    "g.yaml", test::shippedProfiles())
                    .value();
    auto p = plan(prof, test::snapshotOf("vm-no-cpufreq"), {}).value();
    std::map<std::string, const Setting*> byId;
    for (const auto& s : p.settings) byId[s.id] = &s;
    CHECK_FALSE(byId["sysctl net.core.rmem_max"]->pending());  // 212992 >= 1000 already
    CHECK(byId["sysctl net.core.wmem_max"]->desired == "1000");
    CHECK(byId["sysctl net.core.somaxconn"]->desired == "128");
    bool govSkipped = false;
    for (const auto& s : p.skipped) govSkipped = govSkipped || (s.id == "cpu governor" && s.reason.find("cpufreq is absent") != std::string::npos);
    CHECK(govSkipped);
}

TEST_CASE("the plan does not depend on the order the snapshot lists devices, queues and IRQs in", "[planner]") {
    // Every device of each fixture host, virtual ones too, so that there is an order to get wrong
    // (isolated-cpus-netns has two: veth0 and tap0; every host has queues to reorder).
    auto profile = loadProfileText("include: throughput\nmatch:\n  verdict: any\n  virtual: include\nsteering:\n  mode: rps\n",
                                   "all.yaml", test::shippedProfiles())
                       .value();
    for (const char* scenario : {"story-20cpu-single-queue", "numa2-multi-queue", "isolated-cpus-netns"}) {
        INFO(scenario);
        const HostSnapshot s = test::snapshotOf(scenario);
        const auto golden = plannerLines(plan(profile, s, {}).value());
        REQUIRE(golden.size() >= 8);
        std::mt19937 rng(20261201);
        for (int round = 0; round < 8; ++round) {
            HostSnapshot t = s;
            std::shuffle(t.nics.begin(), t.nics.end(), rng);
            for (auto& n : t.nics) {
                std::shuffle(n.rx.begin(), n.rx.end(), rng);
                std::shuffle(n.tx.begin(), n.tx.end(), rng);
                std::shuffle(n.irqs.begin(), n.irqs.end(), rng);
            }
            std::shuffle(t.host.sysctls.begin(), t.host.sysctls.end(), rng);
            std::shuffle(t.host.availableGovernors.begin(), t.host.availableGovernors.end(), rng);
            CHECK(plannerLines(plan(profile, t, {}).value()) == golden);
        }
    }
    CHECK(plan(profile, test::snapshotOf("isolated-cpus-netns"), {}).value().interfaces.size() == 2);
}

TEST_CASE("steering mode xdp plans one XDP setting per interface and turns RPS off there", "[planner]") {
    auto prof = loadProfileText("steering:\n  mode: xdp\n  xdp:\n    mode: native\n    qsize: 512\n", "x.yaml", test::shippedProfiles()).value();
    auto s = test::snapshotOf("story-20cpu-single-queue");
    auto p = plan(prof, s, {}).value();
    std::map<std::string, const Setting*> byId;
    for (const auto& st : p.settings) byId[st.id] = &st;
    REQUIRE(byId.count("enp2s0 xdp steering"));
    CHECK(byId["enp2s0 xdp steering"]->kind == ValueKind::kXdp);
    CHECK(byId["enp2s0 xdp steering"]->desired == "cpus=0-19 mode=native qsize=512");
    CHECK(byId["enp2s0 xdp steering"]->current.empty());
    CHECK(byId["enp2s0 rx-0 rps_cpus"]->desired == "0");
    CHECK_FALSE(byId.count("enp2s0 rx-0 rps_flow_cnt"));
    CHECK_FALSE(byId.count("sysctl net.core.rps_sock_flow_entries"));
    // Already installed as wanted: nothing pending for it.
    s.nics[1].facts.set(kXdpInstalled, std::string("cpus=0-19 mode=native qsize=512"));
    auto again = plan(prof, s, {}).value();
    size_t found = 0;
    for (const auto& st : again.settings)
        if (st.id == "enp2s0 xdp steering") {
            ++found;
            CHECK_FALSE(st.pending());
        }
    CHECK(found == 1);
}

TEST_CASE("kernel-bypass advises rxtune-dp for a NIC stuck at one queue, without counting it as pending", "[planner]") {
    auto gateway = plan(rpsProfile("single-queue-gateway"), test::snapshotOf("story-20cpu-single-queue"), {}).value();
    CHECK(gateway.advice.empty());
    auto p = plan(rpsProfile("kernel-bypass"), test::snapshotOf("story-20cpu-single-queue"), {}).value();
    REQUIRE(p.advice.size() == 1);
    CHECK(p.advice[0].interface == "enp2s0");
    // RX core on the CPU its IRQ uses now (3), workers on every other steering target.
    INFO(p.advice[0].text);
    CHECK(p.advice[0].text.find("rxtune-dp --nic net_af_xdp0,iface=enp2s0 --rx-cpu 3 --worker-cpus 0-2,4-19 --tap enp2s0dp") !=
          std::string::npos);
    CHECK(p.pendingCount() == gateway.pendingCount());
    CHECK(plannerLines(p) == plannerLines(gateway));
    SECTION("workers where they share the RX CPU's last-level cache") {
        auto two = test::snapshotOf("story-20cpu-single-queue");
        for (unsigned c = 0; c < 20; ++c) two.host.llc[c] = c < 10 ? CpuSet::range(0, 9) : CpuSet::range(10, 19);
        auto a = plan(rpsProfile("kernel-bypass"), two, {}).value();
        REQUIRE(a.advice.size() == 1);
        INFO(a.advice[0].text);
        CHECK(a.advice[0].text.find("--rx-cpu 3 --worker-cpus 0-2,4-9 --tap enp2s0dp") != std::string::npos);
        CHECK(a.advice[0].text.find("share CPU 3's last-level cache (0-9): a worker on 10-19") != std::string::npos);
        // None of the targets shares it: the advice keeps them and says so.
        for (unsigned c = 0; c < 20; ++c) two.host.llc[c] = CpuSet::of({c});
        auto b = plan(rpsProfile("kernel-bypass"), two, {}).value();
        REQUIRE(b.advice.size() == 1);
        CHECK(b.advice[0].text.find("--worker-cpus 0-2,4-19") != std::string::npos);
        CHECK(b.advice[0].text.find("no steering target shares CPU 3's last-level cache") != std::string::npos);
    }
    auto bad = loadProfileText("datapath:\n  recommend: maybe\n", "t.yaml", test::shippedProfiles());
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message().find("t.yaml:2:14") != std::string::npos);
    CHECK(bad.error().message().find("datapath.recommend") != std::string::npos);
}

TEST_CASE("mode auto steers where the measurement said, and explains; unmeasured means off", "[planner][auto]") {
    auto profile = loadProfile("single-queue-gateway", test::shippedProfiles()).value();
    REQUIRE(profile.steering.mode == SteeringMode::kAuto);
    auto s = test::snapshotOf("story-20cpu-single-queue");
    auto off = plan(profile, s, {}).value();
    for (const auto& st : off.settings) CHECK(st.id.find("rps_cpus") == std::string::npos);
    bool said = false;
    for (const auto& k : off.skipped) said = said || (k.id == "enp2s0 steering" && k.reason.find("mode auto: off") == 0);
    CHECK(said);
    PlanOptions opts;
    opts.autoTargets["enp2s0"] = CpuSet::of({4, 5, 6});
    opts.autoExplain["enp2s0"] = {"cpu 4 chosen: 80% idle"};
    opts.explain = true;
    auto on = plan(profile, s, opts).value();
    bool rps = false;
    for (const auto& st : on.settings)
        if (st.id == "enp2s0 rx-0 rps_cpus") {
            rps = true;
            CHECK(st.desired == CpuSet::of({4, 5, 6}).toMask());
        }
    CHECK(rps);
    CHECK(std::find(on.explanation.begin(), on.explanation.end(), "enp2s0: cpu 4 chosen: 80% idle") != on.explanation.end());
    // No rps_default_mask in auto: devices created later are measured, not steered blindly.
    for (const auto& st : on.settings) CHECK(st.id != "sysctl net.core.rps_default_mask");
}

TEST_CASE("plan --explain names the rule that left each CPU out", "[planner]") {
    CHECK(plan(rpsProfile("balanced"), test::snapshotOf("story-20cpu-single-queue"), {}).value().explanation.empty());  // only when asked
    PlanOptions opts;
    opts.explain = true;
    auto p = plan(rpsProfile("balanced"), test::snapshotOf("story-20cpu-single-queue"), opts).value();
    auto has = [&](const std::string& line) { return std::find(p.explanation.begin(), p.explanation.end(), line) != p.explanation.end(); };
    CHECK(has("enp2s0: cpu 3 left out: serves the RX IRQ (steering.exclude_irq_cpus)"));
    CHECK(has("enp2s0: cpu 0 chosen"));
}

TEST_CASE("an event's name and link kind reject only devices the profile's match rejects", "[planner]") {
    Match gateway;  // physical, any name
    Match pods;
    pods.interfaces = {"veth*", "sq?"};
    pods.includeVirtual = true;
    Match named;
    named.interfaces = {"enp*"};
    // Never a false no: every fixture NIC that matches passes the cheap test (and each match is met).
    std::map<const Match*, size_t> matched;
    for (const char* scenario : {"story-20cpu-single-queue", "numa2-multi-queue", "isolated-cpus-netns", "vm-no-cpufreq"}) {
        for (const auto& nic : test::snapshotOf(scenario).nics) {
            const std::string kind = nic.kind == "physical" || nic.kind == "loopback" || nic.kind == "virtual" ? "" : nic.kind;
            for (const Match* m : {&gateway, &pods, &named}) {
                INFO(scenario << " " << nic.name);
                if (matches(*m, nic)) {
                    ++matched[m];
                    CHECK(mayMatch(*m, nic.name, kind));
                }
            }
        }
    }
    CHECK(matched[&gateway] > 0);
    CHECK(matched[&pods] > 0);
    CHECK(matched[&named] > 0);
    // The cheap noes: what a node's pod churn is made of.
    CHECK_FALSE(mayMatch(gateway, "veth1234", "veth"));
    CHECK_FALSE(mayMatch(named, "veth1234", ""));
    CHECK_FALSE(mayMatch(pods, "cali0", "veth"));
    CHECK_FALSE(mayMatch(pods, "lo", ""));
    CHECK(mayMatch(pods, "veth1234", "veth"));
    CHECK(mayMatch(pods, "sq0", "veth"));
    CHECK(mayMatch(gateway, "eth0", ""));
}
