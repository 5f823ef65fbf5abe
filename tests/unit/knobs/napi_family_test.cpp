#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include "../support/families.hpp"

#include <fstream>

#include "../support/fake_threads.hpp"
#include "../support/fixture.hpp"
#include "apply/apply.hpp"
#include "core/text.hpp"
#include "apply/prepare.hpp"
#include "cli/status.hpp"
#include "knobs/registry.hpp"
#include "sys/napi_threads.hpp"

using namespace rxtune;

namespace {


Plan planOn(const test::TempTree& tree, const Profile& p) {
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    return preparePlan(p, fs, nl).value().plan;
}


}  // namespace

TEST_CASE("mode napi: threaded on, the kthreads pinned to the targets; napi-get or /proc finds them", "[knobs][napi]") {
    SECTION("a NIC that napi-get shows one NAPI for, threaded off") {
        test::TempTree tree{"story-20cpu-single-queue"};
        auto p = planOn(tree, test::profileOf("steering:\n  mode: napi\n  cpus: 0-3\n  xps: false\n"));
        CHECK(test::planLines(p) == std::vector<std::string>{"enp2s0 threaded 0 -> 1", "enp2s0 napi kthreads  -> f"});
        CHECK(p.settings[1].path == "sys/class/net/enp2s0/napi-kthreads");
        CHECK(p.settings[0].why.find("threaded NAPI: the poll runs in its kthread(s), pinned to CPUs 0-3") == 0);
    }
    SECTION("a veth whose kthreads run already, found by name in /proc (no napi-get)") {
        test::TempTree tree{"isolated-cpus-netns"};
        auto p = planOn(tree, test::profileOf("match:\n  interfaces: [veth0]\n  virtual: include\nsteering:\n  mode: napi\n  cpus: 0-1\n  xps: false\n"));
        CHECK(test::planLines(p) == std::vector<std::string>{"veth0 threaded 1 -> 1", "veth0 napi kthreads ff -> 3"});
        CHECK(p.pendingCount() == 1);
    }
    SECTION("no NAPI instance (a veth without GRO): skipped with the way to get one") {
        test::TempTree tree{"story-20cpu-single-queue"};
        auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
        for (auto& l : doc["links"]) l["napis"] = nlohmann::json::array();
        tree.put("netlink.json", doc.dump());
        auto p = planOn(tree, test::profileOf("steering:\n  mode: napi\n  xps: false\n"));
        REQUIRE(p.skipped.size() == 1);
        CHECK(p.skipped[0].reason.find("has no NAPI instance now") != std::string::npos);
        CHECK(p.settings.empty());
    }
    SECTION("a TAP: IFF_NAPI in tun_flags says it has a NAPI napi-get does not list; without it, skipped") {
        test::TempTree tree{"story-20cpu-single-queue"};
        auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
        for (auto& l : doc["links"]) {
            l["napis"] = nlohmann::json::array();
            if (l["name"] == "enp2s0") l["kind"] = "tun";
        }
        tree.put("netlink.json", doc.dump());
        const auto prof = test::profileOf("match:\n  virtual: include\nsteering:\n  mode: napi\n  xps: false\n  cpus: 0-3\n");
        tree.put("sys/class/net/enp2s0/tun_flags", "0x1012\n");
        auto p = planOn(tree, prof);
        CHECK(test::planLines(p) == std::vector<std::string>{"enp2s0 threaded 0 -> 1", "enp2s0 napi kthreads  -> f"});
        tree.put("sys/class/net/enp2s0/tun_flags", "0x1002\n");
        p = planOn(tree, prof);
        REQUIRE(p.skipped.size() == 1);
        CHECK(p.skipped[0].reason.find("asks for IFF_NAPI") != std::string::npos);
        CHECK(p.settings.empty());
    }
    SECTION("a kernel without threaded NAPI") {
        test::TempTree tree{"vm-no-cpufreq"};
        auto p = planOn(tree, test::profileOf("steering:\n  mode: napi\n  xps: false\n"));
        REQUIRE(p.skipped.size() == 1);
        CHECK(p.skipped[0].reason.find("needs Linux 5.12+") != std::string::npos);
    }
}

// The story's host as a kernel without napi-get shows it: its kthreads are found by name.
static void withoutNapiGet(const test::TempTree& tree) {
    auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
    for (auto& l : doc["links"]) l.erase("napis");
    tree.put("netlink.json", doc.dump());
}

TEST_CASE("mode napi applies, reads back, verifies, shows drift, and reverts to threaded off", "[knobs][napi][apply]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    withoutNapiGet(tree);
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fs(tree.path().string());
    test::FakeThreads threads(tree);
    const Knobs knobs(fs, Services().with<NapiThreads>(&threads));
    JournalStore store((state.path() / "state").string());
    const auto profile = test::profileOf("steering:\n  mode: napi\n  cpus: 2-3\n  xps: false\nnic:\n  gro_flush_timeout: 20000\n  napi_defer_hard_irqs: 10\n");
    auto r = applyPlan(planOn(tree, profile), knobs, store, "t1");
    REQUIRE(r);
    CHECK(r->written.size() == 4);
    CHECK(trimmed(fs.read("sys/class/net/enp2s0/threaded").value()) == "1");
    CHECK(trimmed(fs.read("sys/class/net/enp2s0/gro_flush_timeout").value()) == "20000");
    CHECK(readTaskAffinity(fs, 900).value().toList() == "2-3");
    // Again: nothing to write.
    auto again = applyPlan(planOn(tree, profile), knobs, store, "t2");
    REQUIRE(again);
    CHECK(again->written.empty());
    auto j = store.load().value().value();
    CHECK(verifyApplied(j, knobs).value().empty());
    // Someone pins the kthread elsewhere: drift, named by its family's words.
    REQUIRE(threads.setAffinity(900, CpuSet::of({0})));
    auto drift = verifyApplied(j, knobs).value();
    REQUIRE(drift.size() == 1);
    CHECK(drift[0].id == "enp2s0 napi kthreads");
    CHECK(drift[0].where == "NAPI kthreads of enp2s0");
    // The kthread comes back after threaded was toggled: the next apply pins it again.
    REQUIRE(fs.write("sys/class/net/enp2s0/threaded", "0"));
    threads.of("enp2s0").value();
    auto redo = applyPlan(planOn(tree, profile), knobs, store, "t3");
    REQUIRE(redo);
    CHECK(redo->written.size() == 2);
    CHECK(readTaskAffinity(fs, 900).value().toList() == "2-3");
    // The journal keeps the families' identity through the file.
    j = store.load().value().value();
    REQUIRE(recoverKeys(j));
    for (const auto& o : j.originals) CHECK(o.key.family == (o.id.find("threaded") != std::string::npos || o.id.find("kthreads") != std::string::npos
                                                                ? "napi" : "napi_defer"));
    auto back = revertAll(knobs, store);
    REQUIRE(back);
    CHECK(back->restored.size() == 4);
    CHECK(trimmed(fs.read("sys/class/net/enp2s0/threaded").value()) == "0");
    CHECK(trimmed(fs.read("sys/class/net/enp2s0/napi_defer_hard_irqs").value()) == "0");
    CHECK(threads.of("enp2s0").value().empty());
}

TEST_CASE("a kthread the kernel will not move fails the apply, which undoes threaded", "[knobs][napi][apply]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fs(tree.path().string());
    test::FakeThreads threads(tree);
    threads.failWith_ = true;
    const Knobs knobs(fs, Services().with<NapiThreads>(&threads));
    JournalStore store((state.path() / "state").string());
    auto r = applyPlan(planOn(tree, test::profileOf("steering:\n  mode: napi\n")), knobs, store, "t1");
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("enp2s0 napi kthreads") != std::string::npos);
    CHECK(trimmed(fs.read("sys/class/net/enp2s0/threaded").value()) == "0");
    CHECK_FALSE(store.load().value());
}

TEST_CASE("nic: deferral keys are planned per device, skipped where the kernel lacks them, and validated", "[knobs][napi]") {
    test::TempTree story{"story-20cpu-single-queue"};
    auto p = planOn(story, test::profileOf("steering:\n  mode: none\nnic:\n  gro_flush_timeout: 20000\n"));
    CHECK(test::planLines(p) == std::vector<std::string>{"enp2s0 gro_flush_timeout 0 -> 20000"});
    test::TempTree vm{"vm-no-cpufreq"};
    auto q = planOn(vm, test::profileOf("steering:\n  mode: none\nnic:\n  napi_defer_hard_irqs: 2\n"));
    CHECK(test::planLines(q) == std::vector<std::string>{"skip eth0 napi_defer_hard_irqs: the kernel shows no napi_defer_hard_irqs for eth0"});
    auto err = [](const std::string& text) { return loadProfileText(text, "bad.yaml", {}).error().message(); };
    CHECK(err("nic:\n  gro_flush_timeot: 1\n").find("bad.yaml:2:3: nic.gro_flush_timeot: unknown key") == 0);
    CHECK(err("nic:\n  napi_defer_hard_irqs: -1\n").find("bad.yaml:2:25: nic.napi_defer_hard_irqs") == 0);
    CHECK(err("nic:\n  napi_defer_hard_irqs: 2147483648\n").find("nic.napi_defer_hard_irqs") != std::string::npos);
    CHECK(err("nic:\n  gro_flush_timeout: fast\n").find("bad.yaml:2:22: nic.gro_flush_timeout") == 0);
    CHECK(err("steering:\n  auto:\n    candidates: [napi, napi]\n").find("'napi' is listed twice") != std::string::npos);
    CHECK(test::profileOf("steering:\n  mode: auto\n  auto:\n    candidates: [napi, rps]\n").steering.autoThresholds.candidates ==
          std::vector<SteeringMode>{SteeringMode::kNapi, SteeringMode::kRps});
}

TEST_CASE("status names a napi-steered device's mode and CPUs from its settings", "[knobs][napi]") {
    auto s = makeSetting(test::family("napi"), {"napi", "va", "napi-kthreads"}, ValueKind::kCpuMask, "", "6", "");
    auto v = test::family("napi").steeringOf(s);
    REQUIRE(v);
    CHECK(v->mode == "napi");
    CHECK(v->cpus.toList() == "1-2");
    CHECK_FALSE(test::family("napi").steeringOf(makeSetting(test::family("napi"), {"napi", "va", "threaded"}, ValueKind::kInteger, "0", "1", "")));
}

TEST_CASE("kthreads by name: cut names count only as a prefix of napi/<dev>-, and only kthreadd's children", "[knobs][napi]") {
    test::TempTree tree{"vm-no-cpufreq"};
    auto task = [&](int pid, const std::string& comm, int ppid) {
        tree.put("proc/" + std::to_string(pid) + "/comm", comm + "\n");
        tree.put("proc/" + std::to_string(pid) + "/status", "Name:\t" + comm + "\nPPid:\t" + std::to_string(ppid) + "\nCpus_allowed:\t3\n");
    };
    task(10, "napi/eth0-8193", 2);
    task(11, "napi/eth0-8194", 1);       // not a kthread
    task(12, "napi/eth00-8195", 2);      // another device
    task(13, "napi/longname0-", 2);      // cut at 15 bytes: "napi/longname0-8196"
    task(14, "napi/eth0-x", 2);
    FileTree fs(tree.path().string());
    auto eth0 = scanNapiThreads(fs, "eth0").value();
    REQUIRE(eth0.size() == 1);
    CHECK(eth0[0].pid == 10);
    CHECK(eth0[0].id == 8193);
    CHECK(scanNapiThreads(fs, "longname0").value().size() == 1);
    CHECK(readTaskAffinity(fs, 10).value().toList() == "0-1");
}

TEST_CASE("a TX NAPI's kthread, which napi-get does not list, is found by name and pinned with the rest", "[knobs][napi]") {
    // virtio-net on 6.12: napi-get lists its RX NAPI (id 8193, kthread 900); its TX NAPI has no id
    // and so is not listed, yet once threaded it has a kthread, napi/<dev>-0.
    test::TempTree tree{"story-20cpu-single-queue"};
    auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
    for (auto& l : doc["links"])
        if (l["name"] == "enp2s0") l["napis"] = nlohmann::json::array({{{"id", 8193}, {"irq", 45}, {"pid", 900}}});
    tree.put("netlink.json", doc.dump());
    for (const auto& [pid, name] : {std::pair{900, "napi/enp2s0-8193"}, std::pair{901, "napi/enp2s0-0"}}) {
        tree.put("proc/" + std::to_string(pid) + "/comm", std::string(name) + "\n");
        tree.put("proc/" + std::to_string(pid) + "/status", std::string("Name:\t") + name + "\nPPid:\t2\nCpus_allowed:\tfffff\n");
    }
    tree.put("sys/class/net/enp2s0/threaded", "1\n");
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    std::string source;
    auto found = napiInstances(fs, nl, "enp2s0", 2, &source).value();
    REQUIRE(found.size() == 2);
    CHECK(source == "netdev-genl+proc");
    CHECK(found[0].id == 8193);
    CHECK(found[0].pid == 900);
    CHECK(found[1].pid == 901);
    // Where threaded is known to be off, no scan: napi-get's answer is the whole one.
    CHECK(napiInstances(fs, nl, "enp2s0", 2, &source, false).value().size() == 1);
    CHECK(source == "netdev-genl");
    // Their CPUs are one value: the plan sees both (one differs: both listed, in NAPI id order).
    tree.put("proc/901/status", "Name:\tnapi/enp2s0-0\nPPid:\t2\nCpus_allowed:\t1\n");
    auto p = planOn(tree, test::profileOf("steering:\n  mode: napi\n  cpus: 2-3\n  xps: false\n"));
    const auto k = std::find_if(p.settings.begin(), p.settings.end(), [](const Setting& s) { return s.key.name == "napi-kthreads"; });
    REQUIRE(k != p.settings.end());
    CHECK(k->current == "fffff 1");
    CHECK(k->desired == "c");
}
