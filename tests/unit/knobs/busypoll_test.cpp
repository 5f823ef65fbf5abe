// steering mode busypoll: each RX NAPI's threaded to busy-poll through napi-set and its kthread
// pinned to a CPU of its own, keyed by the NAPI's role; refused with the kernel's version where
// napi-set's policy has no busy-poll.
#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include <fstream>

#include <unistd.h>

#include "../support/fake_threads.hpp"
#include "../support/families.hpp"
#include "../support/fixture.hpp"
#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "core/text.hpp"
#include "knobs/busypoll_profile.hpp"
#include "knobs/registry.hpp"
#include "sys/napi_threads.hpp"

using namespace rxtune;

namespace {



// The story's host (20 CPUs, one RX queue served by NAPI 8193) on a kernel whose napi-set takes
// threaded up to `threadedMax` (2: busy-poll, 6.19+), its release `release`.
void onKernel(const test::TempTree& tree, unsigned threadedMax, const std::string& release, unsigned threaded = 0, int pid = 0) {
    auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
    doc["napi_set"] = {{"threaded_max", threadedMax}};
    for (auto& l : doc["links"]) {
        if (l["name"] != "enp2s0") continue;
        l["napis"][0]["threaded"] = threaded;
        if (pid) l["napis"][0]["pid"] = pid;
        l["queues_netdev"] = {{{"id", 0}, {"tx", false}, {"napi_id", 8193}}, {{"id", 0}, {"tx", true}, {"napi_id", 8193}}};
    }
    tree.put("netlink.json", doc.dump());
    tree.put("proc/sys/kernel/osrelease", release + "\n");
}

const char* kBusypollProfile = "steering:\n  mode: busypoll\n";

}  // namespace

TEST_CASE("mode busypoll: refused where napi-set has no busy-poll, with the kernel's version, nothing planned", "[knobs][busypoll]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    SECTION("6.18: threaded goes to 1") { onKernel(tree, 1, "6.18.0-1-amd64"); }
    SECTION("6.1: no napi-set at all") { tree.put("proc/sys/kernel/osrelease", "6.1.0-40-amd64\n"); }
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    auto plan = preparePlan(test::profileOf(kBusypollProfile), fs, nl).value().plan;
    const std::string release = trimmed(fs.read("proc/sys/kernel/osrelease").value());
    std::vector<std::string> mine;
    for (const auto& l : test::planLines(plan))
        if (l.find("enp2s0") != std::string::npos) mine.push_back(l);
    CHECK(mine == std::vector<std::string>{"skip enp2s0 steering: mode busypoll: busy-poll needs Linux 6.19 (this kernel: " + release + ")"});
}

TEST_CASE("mode busypoll: rx-0's threaded to busy-poll, its kthread on the highest big target; journaled and reverted exactly",
          "[knobs][busypoll]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    const bool wasThreaded = GENERATE(false, true);
    // Threaded before (1), its kthread 777 on CPUs 0-3: revert must give both back.
    if (wasThreaded) {
        onKernel(tree, 2, "7.3.4+bpo-amd64", 1, 777);
        tree.put("proc/777/status", "Name:\tnapi/enp2s0-8193\nPPid:\t2\nCpus_allowed:\tf\n");
    } else {
        onKernel(tree, 2, "7.3.4+bpo-amd64");
    }
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    test::FakeThreads threads(tree);
    auto plan = preparePlan(test::profileOf(kBusypollProfile), fs, nl).value().plan;
    std::vector<std::string> mine;
    for (const auto& s : plan.settings)
        if (s.key.family == "napi" || s.key.family == "queue") mine.push_back(s.id + " " + s.current + " -> " + s.desired);
    CHECK(mine == std::vector<std::string>{std::string("enp2s0 napi rx-0 threaded ") + (wasThreaded ? "1" : "0") + " -> 2",
                                           std::string("enp2s0 napi rx-0 kthread ") + (wasThreaded ? "f" : "") + " -> 80000"});
    REQUIRE(plan.settings.size() >= 2);
    const Setting* threadedSetting = nullptr;
    for (const auto& s : plan.settings)
        if (s.id == "enp2s0 napi rx-0 threaded") threadedSetting = &s;
    REQUIRE(threadedSetting);
    CHECK(threadedSetting->path == "sys/class/net/enp2s0/napi/rx-0/threaded");
    CHECK(threadedSetting->why.find("polls the ring on CPU 19 with its interrupt left off") != std::string::npos);
    const KnobFamily& f = test::family("napi");
    for (const auto& s : plan.settings)
        if (s.key.family == "napi") CHECK(f.keyOf(s.path, s.id) == std::optional<KnobKey>(s.key));

    test::TempTree state{"vm-no-cpufreq"};
    JournalStore store((state.path() / "state").string());
    const Knobs knobs(fs, Services().with<NetlinkSource>(&nl).with<NapiThreads>(&threads));
    REQUIRE(applyPlan(plan, knobs, store, "t1"));
    CHECK(nl.napiValue(8193, "threaded") == kNapiThreadedBusyPoll);
    const int pid = static_cast<int>(nl.napiValue(8193, "pid").value());
    CHECK(readTaskAffinity(fs, pid).value() == CpuSet::of({19}));
    auto j = store.load().value().value();
    CHECK(verifyApplied(j, knobs).value().empty());
    auto again = applyPlan(preparePlan(test::profileOf(kBusypollProfile), fs, nl).value().plan, knobs, store, "t2");
    REQUIRE(again);
    CHECK(again->written.empty());

    SECTION("metrics: the kthread's CPU time, by role, threaded and CPUs") {
        tree.put("proc/" + std::to_string(pid) + "/stat", "950 (napi/enp2s0-8193) R 2 0 0 0 -1 2129984 0 0 0 0 " +
                                                              std::to_string(3 * sysconf(_SC_CLK_TCK)) + " " +
                                                              std::to_string(sysconf(_SC_CLK_TCK)) + " 0 0 20 0 1 0\n");
        struct Sink final : GaugeSink {
            std::vector<std::pair<MetricLabels, double>> seen;
            void set(const std::string& name, const MetricLabels& l, double v) override {
                if (name == "rxtune_napi_kthread_cpu_seconds") seen.emplace_back(l, v);
            }
        } sink;
        auto snap = preparePlan(test::profileOf(kBusypollProfile), fs, nl).value().snapshot;
        f.exportSnapshot(snap, sink);
        REQUIRE(sink.seen.size() == 1);
        CHECK(sink.seen[0].first == MetricLabels{{"interface", "enp2s0"}, {"napi", "rx-0"}, {"threaded", "busy-poll"}, {"cpus", "19"}});
        CHECK(sink.seen[0].second == Approx(4.0));
    }
    SECTION("someone moves the kthread: drift, named by the NAPI's role") {
        REQUIRE(threads.setAffinity(pid, CpuSet::of({0})));
        auto drift = verifyApplied(j, knobs).value();
        REQUIRE(drift.size() == 1);
        CHECK(drift[0].id == "enp2s0 napi rx-0 kthread");
    }
    SECTION("revert after a device reset (a new NAPI id) restores threaded and the kthread's CPUs") {
        nl.renumberNapi(8193, 8200);
        CHECK(verifyApplied(j, knobs).value().empty());
        REQUIRE(revertAll(knobs, store));
        CHECK(nl.napiValue(8200, "threaded") == (wasThreaded ? 1u : 0u));
        if (wasThreaded) CHECK(readTaskAffinity(fs, 777).value() == CpuSet::parseList("0-3").value());
        else CHECK_FALSE(nl.napiValue(8200, "pid"));
    }
}

TEST_CASE("mode busypoll: the CPU named, fanout by RPS, and bad input", "[knobs][busypoll]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    onKernel(tree, 2, "7.3.4+bpo-amd64");
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    SECTION("cpus names the poll CPU; fanout rps spreads from it to the other targets") {
        auto plan = preparePlan(test::profileOf("steering:\n  mode: busypoll\n  cpus: 0-3\n  busypoll: {cpus: 2, fanout: rps}\n"), fs, nl)
                        .value()
                        .plan;
        std::vector<std::string> mine;
        for (const auto& s : plan.settings)
            if (s.key.family == "napi" || s.id == "enp2s0 rx-0 rps_cpus") mine.push_back(s.id + " -> " + s.desired);
        CHECK(mine == std::vector<std::string>{"enp2s0 rx-0 rps_cpus -> b", "enp2s0 napi rx-0 threaded -> 2",
                                               "enp2s0 napi rx-0 kthread -> 4"});
    }
    SECTION("a poll CPU that is not online is an error at its line") {
        auto e = preparePlan(test::profileOf("steering:\n  mode: busypoll\n  busypoll:\n    cpus: 25\n"), fs, nl);
        REQUIRE_FALSE(e);
        CHECK(e.error().message().find("t.yaml:4:11: steering.busypoll.cpus") == 0);
        CHECK(e.error().message().find("CPU 25 is not online (online: 0-19)") != std::string::npos);
    }
    SECTION("the profile's keys are checked") {
        auto e = loadProfileText("steering:\n  mode: busypoll\n  busypoll: {fanout: xdp}\n", "bad.yaml", {});
        REQUIRE_FALSE(e);
        CHECK(e.error().message().find("bad.yaml:3:22: steering.busypoll.fanout") == 0);
        CHECK(e.error().message().find("expected rps or none, got 'xdp'") != std::string::npos);
        CHECK_FALSE(loadProfileText("steering:\n  busypoll: {cpu: 3}\n", "bad.yaml", {}));
        CHECK_FALSE(loadProfileText("steering:\n  busypoll: {cpus: x}\n", "bad.yaml", {}));
    }
}

// virtio-net's shape: rx-0 on NAPI 8193, tx-0 on a NAPI of its own (8194, napi_tx), interrupts.
TEST_CASE("mode busypoll: the TX NAPI left as it is unless steering.busypoll.tx asks; then threaded on the poll CPU, reverted",
          "[knobs][busypoll]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    onKernel(tree, 2, "7.3.4+bpo-amd64");
    {
        auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
        for (auto& l : doc["links"]) {
            if (l["name"] != "enp2s0") continue;
            l["napis"].push_back({{"id", 8194}, {"irq", 131}, {"threaded", 0}});
            l["queues_netdev"] = {{{"id", 0}, {"tx", false}, {"napi_id", 8193}}, {{"id", 0}, {"tx", true}, {"napi_id", 8194}}};
        }
        tree.put("netlink.json", doc.dump());
    }
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    test::FakeThreads threads(tree);
    auto napiLines = [](const Plan& plan) {
        std::vector<std::string> out;
        for (const auto& s : plan.settings)
            if (s.key.family == "napi") out.push_back(s.id + " " + s.current + " -> " + s.desired);
        return out;
    };
    SECTION("by default only rx-0 is planned") {
        auto plan = preparePlan(test::profileOf(kBusypollProfile), fs, nl).value().plan;
        CHECK(napiLines(plan) == std::vector<std::string>{"enp2s0 napi rx-0 threaded 0 -> 2", "enp2s0 napi rx-0 kthread  -> 80000"});
        CHECK(test::profileOf("steering:\n  mode: busypoll\n  busypoll: {tx: leave}\n").sectionOr(kBusyPoll).txThreaded == false);
    }
    SECTION("tx threaded: tx-0's kthread joins the poll CPU; status shows no second steering; revert stops it") {
        const char* profile = "steering:\n  mode: busypoll\n  busypoll: {tx: threaded}\n";
        auto plan = preparePlan(test::profileOf(profile), fs, nl).value().plan;
        CHECK(napiLines(plan) == std::vector<std::string>{"enp2s0 napi rx-0 threaded 0 -> 2", "enp2s0 napi rx-0 kthread  -> 80000",
                                                          "enp2s0 napi tx-0 threaded 0 -> 1", "enp2s0 napi tx-0 kthread  -> 80000"});
        const KnobFamily& f = test::family("napi");
        for (const auto& s : plan.settings) {
            if (s.key.family != "napi") continue;
            CHECK(f.keyOf(s.path, s.id) == std::optional<KnobKey>(s.key));
            if (s.id.find("tx-0 kthread") != std::string::npos) CHECK_FALSE(f.steeringOf(s));
        }
        test::TempTree state{"vm-no-cpufreq"};
        JournalStore store((state.path() / "state").string());
        const Knobs knobs(fs, Services().with<NetlinkSource>(&nl).with<NapiThreads>(&threads));
        REQUIRE(applyPlan(plan, knobs, store, "t1"));
        CHECK(nl.napiValue(8193, "threaded") == kNapiThreadedBusyPoll);
        CHECK(nl.napiValue(8194, "threaded") == 1u);
        const int txPid = static_cast<int>(nl.napiValue(8194, "pid").value());
        CHECK(readTaskAffinity(fs, txPid).value() == CpuSet::of({19}));
        auto j = store.load().value().value();
        CHECK(verifyApplied(j, knobs).value().empty());
        REQUIRE(revertAll(knobs, store));
        CHECK(nl.napiValue(8194, "threaded") == 0u);
        CHECK_FALSE(nl.napiValue(8194, "pid"));
        CHECK(nl.napiValue(8193, "threaded") == 0u);
    }
    SECTION("tx threaded where the RX NAPI serves TX too (e1000e): nothing more, and the plan says why") {
        tree.put("netlink.json", [&] {
            auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
            for (auto& l : doc["links"])
                if (l["name"] == "enp2s0")
                    l["queues_netdev"] = {{{"id", 0}, {"tx", false}, {"napi_id", 8193}}, {{"id", 0}, {"tx", true}, {"napi_id", 8193}}};
            return doc.dump();
        }());
        test::FakeNetlink shared(tree.path());
        auto plan = preparePlan(test::profileOf("steering:\n  mode: busypoll\n  busypoll: {tx: threaded}\n"), fs, shared).value().plan;
        CHECK(napiLines(plan).size() == 2);
        bool said = false;
        for (const auto& l : test::planLines(plan))
            said = said || l == "skip enp2s0 napi tx: steering.busypoll.tx threaded: enp2s0 has no TX-only NAPI (its RX NAPIs serve "
                                "its TX queues too)";
        CHECK(said);
    }
    SECTION("tx threaded where the TX queue names no NAPI with an id (virtio-net): the device's threaded first, all kthreads to the "
            "poll CPU, then rx-0 to busy-poll; reverted in the opposite order") {
        tree.put("netlink.json", [&] {
            auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
            for (auto& l : doc["links"])
                if (l["name"] == "enp2s0") {
                    l["napis"].erase(1);
                    l["queues_netdev"] = {{{"id", 0}, {"tx", false}, {"napi_id", 8193}}, {{"id", 0}, {"tx", true}}};
                }
            return doc.dump();
        }());
        test::FakeNetlink idless(tree.path());
        auto plan = preparePlan(test::profileOf("steering:\n  mode: busypoll\n  busypoll: {tx: threaded}\n"), fs, idless).value().plan;
        CHECK(napiLines(plan) == std::vector<std::string>{"enp2s0 threaded 0 -> 1", "enp2s0 napi kthreads  -> 80000",
                                                          "enp2s0 napi rx-0 threaded 0 -> 2", "enp2s0 napi rx-0 kthread  -> 80000"});
        test::TempTree state{"vm-no-cpufreq"};
        JournalStore store((state.path() / "state").string());
        const Knobs knobs(fs, Services().with<NetlinkSource>(&idless).with<NapiThreads>(&threads));
        REQUIRE(applyPlan(plan, knobs, store, "t1"));
        CHECK(trimmed(fs.read("sys/class/net/enp2s0/threaded").value()) == "1");
        CHECK(readTaskAffinity(fs, 900).value() == CpuSet::of({19}));  // the device's kthread (FakeThreads)
        CHECK(idless.napiValue(8193, "threaded") == kNapiThreadedBusyPoll);
        REQUIRE(revertAll(knobs, store));
        CHECK(trimmed(fs.read("sys/class/net/enp2s0/threaded").value()) == "0");
        CHECK(idless.napiValue(8193, "threaded") == 0u);
    }
    SECTION("tx takes threaded or leave") {
        auto e = loadProfileText("steering:\n  mode: busypoll\n  busypoll: {tx: busypoll}\n", "bad.yaml", {});
        REQUIRE_FALSE(e);
        CHECK(e.error().message().find("bad.yaml:3:18: steering.busypoll.tx") == 0);
        CHECK(e.error().message().find("expected threaded or leave, got 'busypoll'") != std::string::npos);
    }
}

// An application's thread pinned to CPU 19 that keeps it busy: the poll goes elsewhere, and says why.
TEST_CASE("mode busypoll: the poll CPU is never one an application's busy pinned thread holds, unless named", "[knobs][busypoll]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    onKernel(tree, 2, "7.3.4+bpo-amd64");
    const long hz = sysconf(_SC_CLK_TCK);
    tree.put("proc/uptime", "1000.00 15000.00\n");
    // pid/tid, comm, flags, utime+stime in seconds, started at second, Cpus_allowed_list.
    auto task = [&](int pid, int tid, const std::string& comm, unsigned flags, int busySeconds, int startedAt, const std::string& cpus) {
        const std::string dir = "proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
        tree.put(dir + "/stat", std::to_string(tid) + " (" + comm + ") R 1 1 1 0 -1 " + std::to_string(flags) + " 0 0 0 0 " +
                                    std::to_string(busySeconds * hz) + " 0 0 0 20 0 1 0 " + std::to_string(startedAt * hz) + " 0 0\n");
        tree.put(dir + "/status", "Name:\t" + comm + "\nCpus_allowed_list:\t" + cpus + "\n");
    };
    task(4000, 4001, "nginx: worker", 0x40, 450, 100, "19");   // 450 s of 900: 50 %, pinned to 19
    task(4000, 4002, "nginx (io) )x", 0x40, 890, 100, "0-19");  // busy, not pinned
    task(4100, 4100, "idle-pinned", 0x40, 10, 100, "18");       // pinned, idle
    task(20, 20, "ksoftirqd/18", 0x00208040, 900, 0, "18");      // a kernel thread: PF_KTHREAD
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());

    auto pinned = readPinnedBusyThreads(fs).value();
    REQUIRE(pinned.size() == 1);
    CHECK(pinned[0].pid == 4000);
    CHECK(pinned[0].tid == 4001);
    CHECK(pinned[0].comm == "nginx: worker");
    CHECK(pinned[0].cpu == 19u);
    CHECK(pinned[0].share == Approx(0.5));

    SECTION("chosen: CPU 18, with the reason in the plan") {
        auto plan = preparePlan(test::profileOf(kBusypollProfile), fs, nl).value().plan;
        const Setting* kthread = nullptr;
        for (const auto& s : plan.settings)
            if (s.id == "enp2s0 napi rx-0 kthread") kthread = &s;
        REQUIRE(kthread);
        CHECK(kthread->desired == CpuSet::of({18}).toMask());
        CHECK(kthread->why.find("not the CPU(s) of the applications' busy pinned threads: CPU 19 (nginx: worker, tid 4001, 50 % of it)") !=
              std::string::npos);
    }
    SECTION("fanout rps: not onto the busy pinned thread's CPU either") {
        auto plan = preparePlan(test::profileOf("steering:\n  mode: busypoll\n  cpus: 16-19\n  busypoll: {fanout: rps}\n"), fs, nl)
                        .value()
                        .plan;
        std::vector<std::string> mine;
        for (const auto& s : plan.settings)
            if (s.id == "enp2s0 rx-0 rps_cpus" || s.id == "enp2s0 napi rx-0 kthread") mine.push_back(s.id + " -> " + s.desired);
        // The poll on 18 (19 held), RPS to 16-17 only.
        CHECK(mine == std::vector<std::string>{"enp2s0 rx-0 rps_cpus -> 30000", "enp2s0 napi rx-0 kthread -> 40000"});
    }
    SECTION("named: steering.busypoll.cpus wins") {
        auto plan = preparePlan(test::profileOf("steering:\n  mode: busypoll\n  busypoll: {cpus: 19}\n"), fs, nl).value().plan;
        bool on19 = false;
        for (const auto& s : plan.settings) on19 = on19 || (s.id == "enp2s0 napi rx-0 kthread" && s.desired == CpuSet::of({19}).toMask());
        CHECK(on19);
    }
    SECTION("every target held: skipped, with the threads named") {
        auto plan = preparePlan(test::profileOf("steering:\n  mode: busypoll\n  cpus: 19\n"), fs, nl).value().plan;
        bool said = false;
        for (const auto& l : test::planLines(plan))
            said = said || (l.find("skip enp2s0 steering: mode busypoll: enp2s0 has 1 RX NAPIs and the targets hold 0 CPU(s)") == 0 &&
                            l.find("CPU 19 (nginx: worker") != std::string::npos);
        CHECK(said);
    }
}
