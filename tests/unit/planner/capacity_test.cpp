// Big and little cores: what the kernel says about each CPU (cpu_capacity on arm64/riscv, the core
// and atom PMUs on x86 hybrid), and the choices that weigh it: the RX IRQ's CPU (irq.cpus auto),
// the NAPI kthreads' CPUs, steering.cpus: big; detect, status and the metrics show it.
#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include <prometheus/text_serializer.h>

#include <sstream>

#include "../support/fixture.hpp"
#include "apply/prepare.hpp"
#include "cli/detect_output.hpp"
#include "cli/status.hpp"
#include "metrics/metrics.hpp"
#include "planner/auto_steer.hpp"
#include "planner/planner.hpp"

using namespace rxtune;

namespace {



// The plan as apply makes it: the snapshot read for the profile (interrupt counts for irq.cpus auto).
Plan prepared(const std::string& scenario, const std::string& profile) {
    auto root = test::fixtureRoot(scenario);
    FileTree fs(root.string());
    test::FakeNetlink nl(root);
    PlanRequest req;
    req.explain = true;
    return preparePlan(test::profileOf(profile), fs, nl, req).value().plan;
}

std::string desiredOf(const Plan& p, const std::string& idPart) {
    for (const auto& s : p.settings) UNSCOPED_INFO("setting " << s.id << " -> " << s.desired);
    for (const auto& s : p.skipped) UNSCOPED_INFO("skipped " << s.id << ": " << s.reason);
    for (const auto& l : p.explanation) UNSCOPED_INFO("explain " << l);
    for (const auto& s : p.settings)
        if (s.id.find(idPart) != std::string::npos) return s.desired;
    return "<none>";
}

bool explains(const Plan& p, const std::string& text) {
    return std::any_of(p.explanation.begin(), p.explanation.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("cpu_capacity and x86 core types are read; CPUs group into classes, biggest first", "[capacity]") {
    const auto gb10 = test::snapshotOf("gb10-big-little").host;
    REQUIRE(gb10.capacity.size() == 20);
    CHECK(gb10.capacity.at(0) == 1024);
    CHECK(gb10.capacity.at(5) == 410);
    auto classes = cpuClasses(gb10);
    REQUIRE(classes.size() == 2);
    CHECK(classes[0].name == "big");
    CHECK(classes[0].cpus.toList() == "0-4,10-14");
    CHECK(classes[0].capacity == 1024);
    CHECK(classes[1].name == "little");
    CHECK(classes[1].cpus.toList() == "5-9,15-19");
    CHECK(biggestOf(gb10, CpuSet::range(5, 12)).toList() == "10-12");
    CHECK(biggestOf(gb10, CpuSet::range(5, 9)).toList() == "5-9");  // only little ones: those
    CHECK(describeCapacity(gb10, 7) == "capacity 410");

    const auto intel = test::snapshotOf("intel-hybrid").host;
    CHECK(intel.capacity.empty());
    CHECK(intel.coreType.at(3) == "core");
    CHECK(intel.coreType.at(17) == "atom");
    classes = cpuClasses(intel);
    REQUIRE(classes.size() == 2);
    CHECK(classes[0].cpus.toList() == "0-15");
    CHECK(classes[0].coreType == "core");
    CHECK(classes[1].cpus.toList() == "16-19");
    CHECK(describeCapacity(intel, 17) == "core type atom");

    // One capacity (a SoC of like cores), or nothing said (x86 without hybrid, a VM): one class.
    for (const char* host : {"soc-4core-one-capacity", "story-20cpu-single-queue"}) {
        INFO(host);
        const auto h = test::snapshotOf(host).host;
        classes = cpuClasses(h);
        REQUIRE(classes.size() == 1);
        CHECK(classes[0].cpus == h.online);
        CHECK(biggestOf(h, CpuSet::range(1, 2)) == CpuSet::range(1, 2));
    }
    CHECK(cpuClasses(test::snapshotOf("soc-4core-one-capacity").host)[0].capacity == 1024);

    // A CPU the kernel gives no capacity falls in with the smallest; three capacities: a middle.
    Topology t;
    t.online = CpuSet::range(0, 5);
    t.capacity = {{0, 1024}, {1, 1024}, {2, 700}, {3, 300}, {4, 300}};
    classes = cpuClasses(t);
    REQUIRE(classes.size() == 3);
    CHECK(classes[1].name == "middle");
    CHECK(classes[2].cpus.toList() == "3-5");
}

TEST_CASE("a bad cpu_capacity names its file", "[capacity]") {
    test::TempTree tree("soc-4core-one-capacity");
    tree.put("sys/devices/system/cpu/cpu2/cpu_capacity", "big\n");
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    auto s = takeSnapshot(fs, nl, {});
    REQUIRE_FALSE(s);
    CHECK(s.error().message().find("cpu2/cpu_capacity") != std::string::npos);
    CHECK(s.error().message().find("'big' is not a capacity") != std::string::npos);
}

TEST_CASE("irq.cpus auto says why beside steering onto the big cores (the arm64 lab's plan)", "[capacity][planner]") {
    auto p = prepared("gb10-big-little", "steering:\n  mode: rps\n  cpus: big\nirq:\n  cpus: auto\n");
    CHECK(desiredOf(p, "irq 150") == "2");
    CHECK(explains(p, "cpu 2 chosen: the eligible CPU with the least other interrupt work among the biggest cores"));
    CHECK(explains(p, "a smaller core (capacity 410"));
}

TEST_CASE("irq.cpus auto puts the RX IRQ on a big core, the least busy one, and says why", "[capacity][planner]") {
    const std::string irqAuto = "steering:\n  mode: none\nirq:\n  cpus: auto\n";
    // GB10-like: the IRQ is on little CPU 7 now; big CPU 0 has the NVMe queue's interrupts.
    auto p = prepared("gb10-big-little", irqAuto);
    CHECK(desiredOf(p, "irq 150") == "2");
    CHECK(explains(p, "cpu 7 left out: a smaller core (capacity 410; eligible CPUs 0-4,10-14 have capacity 1024)"));
    CHECK(explains(p, "cpu 2 chosen: the eligible CPU with the least other interrupt work among the biggest cores"));
    // Intel hybrid: from E-core 17 to a P-core.
    p = prepared("intel-hybrid", irqAuto);
    CHECK(desiredOf(p, "irq 141") == "1");
    CHECK(explains(p, "cpu 17 left out: a smaller core (core type atom; eligible CPUs 0-15 have core type core)"));
    // Where the IRQ already sits on a big core within 10 % of the least work, it stays; on a
    // little one with less work, it moves all the same.
    test::TempTree tree("gb10-big-little");
    tree.put("proc/irq/150/smp_affinity_list", "12\n");
    tree.put("proc/irq/150/effective_affinity_list", "12\n");
    {
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        PlanRequest req;
        auto kept = preparePlan(test::profileOf(irqAuto), fs, nl, req).value().plan;
        CHECK(std::none_of(kept.settings.begin(), kept.settings.end(), [](const Setting& s) { return s.id.find("irq 150") != std::string::npos && s.pending(); }));
    }
    // Like cores: no capacity talk.
    p = prepared("soc-4core-one-capacity", irqAuto);
    CHECK_FALSE(explains(p, "smaller core"));
    CHECK_FALSE(explains(p, "biggest cores"));
}

TEST_CASE("steering.cpus big: RPS/XPS on the big cores; NAPI kthreads on the biggest of their targets", "[capacity][planner]") {
    PlanOptions opts;
    opts.explain = true;
    auto p = plan(test::profileOf("steering:\n  mode: rps\n  cpus: big\n"), test::snapshotOf("gb10-big-little"), opts).value();
    CHECK(desiredOf(p, "rx-0 rps_cpus") == CpuSet::parseList("0-4,10-14")->toMask());
    CHECK(explains(p, "big: CPUs 0-4,10-14 (capacity 1024); left out 5-9,15-19 (capacity 410)"));
    CHECK(explains(p, "cpu 7 left out: a smaller core (capacity 410; steering.cpus big)"));
    // all: every core (the default: RPS spreads the stack's work, and the application's threads
    // run everywhere anyway).
    p = plan(test::profileOf("steering:\n  mode: rps\n  cpus: all\n"), test::snapshotOf("gb10-big-little"), opts).value();
    CHECK(desiredOf(p, "rx-0 rps_cpus") == CpuSet::range(0, 19).toMask());
    // Threaded NAPI over all CPUs: its kthread on the big ones.
    p = prepared("gb10-big-little", "steering:\n  mode: napi\n  cpus: all\n");
    CHECK(desiredOf(p, "kthreads") == CpuSet::parseList("0-4,10-14")->toMask());
    CHECK(std::any_of(p.settings.begin(), p.settings.end(), [](const Setting& s) {
        return s.why.find("the biggest cores of 0-19 (capacity 1024): a kthread polls a whole queue") != std::string::npos;
    }));
    // Like cores: big is all of them, said so.
    p = plan(test::profileOf("steering:\n  mode: rps\n  cpus: big\n"), test::snapshotOf("soc-4core-one-capacity"), opts).value();
    CHECK(desiredOf(p, "rx-0 rps_cpus") == CpuSet::range(0, 3).toMask());
    CHECK(explains(p, "big: the CPUs are alike"));
    // The profile's word is checked: big is a value, bigs is not.
    auto bad = loadProfileText("steering:\n  cpus: bigs\n", "t.yaml", {});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message().find("expected all, big, numa-local") != std::string::npos);
}

TEST_CASE("detect, status and the metrics show each CPU's capacity and class", "[capacity][detect]") {
    const auto s = test::snapshotOf("gb10-big-little");
    const auto j = toJson(s);
    CHECK(j["host"]["cpu_capacity"]["0"]["capacity"] == 1024);
    CHECK(j["host"]["cpu_capacity"]["7"]["capacity"] == 410);
    CHECK(j["host"]["cpu_capacity"]["7"]["core_type"].is_null());
    CHECK(j["host"]["cpu_classes"][1]["class"] == "little");
    CHECK(j["host"]["cpu_classes"][1]["cpus"] == "5-9,15-19");
    std::ostringstream table;
    printTable(s, table);
    CHECK(table.str().find("  cores  big 0-4,10-14 (capacity 1024)  little 5-9,15-19 (capacity 410)\n") != std::string::npos);
    std::ostringstream intel;
    printTable(test::snapshotOf("intel-hybrid"), intel);
    CHECK(intel.str().find("  cores  big 0-15 (core type core)  little 16-19 (core type atom)\n") != std::string::npos);
    std::ostringstream soc;
    printTable(test::snapshotOf("soc-4core-one-capacity"), soc);
    CHECK(soc.str().find("  cores alike: capacity 1024 on 0-3\n") != std::string::npos);
    std::ostringstream vm;
    printTable(test::snapshotOf("vm-no-cpufreq"), vm);
    CHECK(vm.str().find("  cores alike (the kernel gives no capacity or core type)\n") != std::string::npos);

    // status: the class column, and a hot little core said to be one.
    StatusRaw a, b;
    a.at = 10;
    b.at = 11;
    a.cpu[5] = {1000, 2000, 100};
    b.cpu[5] = {1100, 2100, 190};
    a.cpu[0] = {1000, 2000, 0};
    b.cpu[0] = {1002, 2100, 0};
    StatusInputs in;
    in.classes[0] = {"big", "capacity 1024"};
    in.classes[5] = {"little", "capacity 410"};
    const auto st = makeStatus(a, b, in);
    const std::string out = renderStatus(st, 120);
    CHECK(out.find("CPU  class  busy") != std::string::npos);
    CHECK(out.find("<- hot (a little core: capacity 410)") != std::string::npos);
    CHECK(statusJson(st)["cpus"][1]["class"] == "little");

    // metrics: rxtune_cpu_capacity and rxtune_cpu_class_info per CPU.
    Metrics m("test");
    m.updateSnapshot(s);
    std::ostringstream text;
    prometheus::TextSerializer().Serialize(text, m.registry()->Collect());
    CHECK(text.str().find("rxtune_cpu_capacity{cpu=\"7\"} 410") != std::string::npos);
    CHECK(text.str().find("rxtune_cpu_class_info{class=\"big\",core_type=\"\",cpu=\"12\"} 1") != std::string::npos);
}

TEST_CASE("mode auto's scope names the biggest cores where the targets differ in size, none where alike", "[capacity][auto]") {
    const Profile auto_ = test::profileOf("steering:\n  mode: auto\n  cpus: all\n");
    const HostSnapshot gb10 = test::snapshotOf("gb10-big-little");
    const Nic& nic = gb10.nics.front();
    auto scope = autoScope(auto_, gb10.host, nic, {}, AutoSample{});
    REQUIRE(scope);
    CHECK(scope->candidates == CpuSet::range(0, 19));
    CHECK(scope->biggest == *CpuSet::parseList("0-4,10-14"));
    // Already the big cores only: nothing to trial against.
    scope = autoScope(test::profileOf("steering:\n  mode: auto\n  cpus: big\n"), gb10.host, nic, {}, AutoSample{});
    REQUIRE(scope);
    CHECK(scope->biggest.empty());
    const HostSnapshot soc = test::snapshotOf("soc-4core-one-capacity");
    scope = autoScope(auto_, soc.host, soc.nics.front(), {}, AutoSample{});
    REQUIRE(scope);
    CHECK(scope->biggest.empty());
}
