#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/fixture.hpp"
#include "../support/kernel_irq_tree.hpp"
#include "../support/pin_rig.hpp"
#include "apply/apply.hpp"
#include "apply/lifecycle.hpp"
#include "apply/prepare.hpp"
#include "cli/detect_output.hpp"
#include "core/irqbalance.hpp"
#include "core/text.hpp"
#include "inventory/irqbalance_reader.hpp"
#include "knobs/irq_state.hpp"
#include "knobs/registry.hpp"

using namespace rxtune;

namespace {


Prepared prepare(const test::TempTree& tree, const Profile& p, bool explain = false, const InterruptCounts* before = nullptr,
                 double seconds = 0) {
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    PlanRequest req;
    req.explain = explain;
    if (before) req.memory.families.set(kInterruptsBefore, InterruptsBefore{before, seconds});
    return preparePlan(p, fs, nl, req).value();
}


const char* kIrqOnly = "steering:\n  mode: none\n";

}  // namespace

TEST_CASE("irqbalance's configuration: environment file, arguments, and which ban wins", "[knobs][irq]") {
    auto env = parseEnvironmentFile("# comment\nIRQBALANCE_ONESHOT=\nexport IRQBALANCE_BANNED_CPULIST='2-3'\n"
                                    "IRQBALANCE_ARGS=\"--banirq=45 -i 46 --policyscript=/p x\"  \nBAD KEY=1\nX=1 # trailing\n");
    CHECK(env["IRQBALANCE_BANNED_CPULIST"] == "2-3");
    CHECK(env["IRQBALANCE_ARGS"] == "--banirq=45 -i 46 --policyscript=/p x");
    CHECK(env["X"] == "1");
    CHECK(env.count("BAD KEY") == 0);
    CHECK(splitArguments("--banirq 47 '-l' \"/a b\"") == std::vector<std::string>{"--banirq", "47", "-l", "/a b"});
    const char cmdline[] = "irqbalance\0--foreground\0\0-i\0009\0";
    CHECK(splitArguments(std::string(cmdline, sizeof cmdline - 1), '\0') ==
          std::vector<std::string>{"irqbalance", "--foreground", "", "-i", "9"});

    IrqbalanceFacts f;
    applyIrqbalanceConfig(env, splitArguments(env["IRQBALANCE_ARGS"]), CpuSet::parseList("6-7").value(), f);
    CHECK(f.bannedIrqs == std::vector<unsigned>{45, 46});
    CHECK(f.policyScript == "/p");
    CHECK(f.bannedCpus.toList() == "2-3");
    CHECK(f.bannedCpusFrom == "IRQBALANCE_BANNED_CPULIST");
    // Either variable switches off irqbalance's own banning of isolated and nohz_full CPUs: said.
    REQUIRE(f.notes.size() == 1);
    CHECK(f.notes[0].find("isolated/nohz_full CPUs 6-7 are not banned") == 0);

    IrqbalanceFacts g;
    applyIrqbalanceConfig({{"IRQBALANCE_BANNED_CPUS", "3"}, {"IRQBALANCE_BANNED_CPULIST", "5"}}, {}, {}, g);
    CHECK(g.bannedCpus.toList() == "0-1");  // the mask wins over the list
    CHECK(g.bannedCpusFrom == "IRQBALANCE_BANNED_CPUS");
    CHECK(g.notes.at(0).find("IRQBALANCE_BANNED_CPULIST is ignored") == 0);

    IrqbalanceFacts h;
    applyIrqbalanceConfig({{"IRQBALANCE_BANNED_CPUS", ""}}, {"--banirq=x"}, CpuSet::parseList("6-7").value(), h);
    CHECK(h.bannedCpus.toList() == "6-7");  // empty: irqbalance bans isolated/nohz_full itself
    CHECK(h.bannedCpusFrom == "isolated/nohz_full");
    CHECK(h.notes.at(0).find("--banirq 'x'") == 0);
}

TEST_CASE("irqbalance on the fixture hosts: the running process's arguments are what is in force", "[knobs][irq]") {
    test::TempTree igb{"igb-one-queue"};
    FileTree fs(igb.path().string());
    auto topo = readTopology(fs).value();
    auto b = readIrqbalance(fs, topo).value();
    CHECK(b.running);
    CHECK(b.pid == 1204);
    CHECK(b.version == "1.9.2-1");
    CHECK(b.configFile == "/etc/default/irqbalance");
    CHECK(b.argsFrom == "process");
    CHECK(b.bannedIrqs == std::vector<unsigned>{77});
    CHECK(b.bannedCpus.toList() == "0");
    bool optsNote = false, isolatedNote = false;
    for (const auto& n : b.notes) {
        optsNote = optsNote || n.find("IRQBALANCE_OPTS, which irqbalance's service does not read") != std::string::npos;
        isolatedNote = isolatedNote || n.find("isolated/nohz_full CPUs 6-7 are not banned") != std::string::npos;
    }
    CHECK(optsNote);
    CHECK(isolatedNote);

    test::TempTree mlx{"mlx5-one-channel"};
    FileTree m(mlx.path().string());
    auto none = readIrqbalance(m, readTopology(m).value()).value();
    CHECK_FALSE(none.running);
    CHECK(none.configFile.empty());
    CHECK(none.version.empty());
}

TEST_CASE("irq.cpus auto: the NIC's node, not isolated, not the application's, least other work; explained", "[knobs][irq]") {
    test::TempTree igb{"igb-one-queue"};
    auto prep = prepare(igb, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: auto\n"), true);
    // Node 1 is CPUs 4-7, 6-7 are isolated; CPU 5 serves the RX IRQ's 9.9M interrupts (its own, not
    // other work) and CPU 4 nothing else either: the IRQ stays where it is.
    CHECK(test::planLines(prep.plan) == std::vector<std::string>{"enp1s0 irq 77 enp1s0-TxRx-0 0-7 -> 5"});
    std::string explained;
    for (const auto& e : prep.plan.explanation) explained += e + "\n";
    CHECK(explained.find("enp1s0: irq cpu 0 left out: not on the NIC's NUMA node 1") != std::string::npos);
    CHECK(explained.find("enp1s0: irq cpu 6 left out: isolated/nohz_full") != std::string::npos);
    CHECK(explained.find("enp1s0: irq cpu 5 eligible: 0 other interrupts since boot") != std::string::npos);
    CHECK(explained.find("enp1s0: irq cpu 5 kept: the IRQ is there now, within 10% of the least other interrupt work (cpu 4)") !=
          std::string::npos);
    // irqbalance runs and bans IRQ 77 already: said as advice.
    REQUIRE(prep.plan.advice.size() == 1);
    CHECK(prep.plan.advice[0].text.find("bans IRQ 77 already") != std::string::npos);

    auto app = prepare(igb, test::profileOf("steering:\n  mode: none\n  cpus: cgroup:/system.slice/app.service\nirq:\n  cpus: auto\n"));
    CHECK(test::planLines(app.plan) == std::vector<std::string>{
                                 "skip enp1s0 irq: irq.cpus auto: no CPU on the NIC's NUMA node that is neither isolated, nohz_full nor the application's"});
    auto list = prepare(igb, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: 2-3\n"));
    CHECK(test::planLines(list.plan) == std::vector<std::string>{"enp1s0 irq 77 enp1s0-TxRx-0 0-7 -> 2-3"});
    auto keep = prepare(igb, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: keep\n"));
    CHECK(keep.plan.settings.empty());
    // A device without IRQs of its own.
    test::TempTree iso{"isolated-cpus-netns"};
    auto veth = prepare(iso, test::profileOf("match:\n  interfaces: [veth0]\n  virtual: include\nsteering:\n  mode: none\nirq:\n  cpus: auto\n"));
    CHECK(test::planLines(veth.plan).at(0).find("skip veth0 irq: no IRQ of its own") == 0);
}

TEST_CASE("RPS targets leave out the CPU the plan puts the RX IRQ on, not the one it found", "[knobs][irq]") {
    test::TempTree igb{"igb-one-queue"};
    const std::string rps = "steering:\n  mode: rps\n  exclude_irq_cpus: true\n  xps: false\n  default_mask: false\n  rfs:\n    flow_entries: 0\n";
    auto now = prepare(igb, test::profileOf(rps));
    auto moved = prepare(igb, test::profileOf(rps + "irq:\n  cpus: '2'\n"));
    auto mask = [](const Plan& p) {
        for (const auto& s : p.settings)
            if (s.key.name == "rps_cpus") return CpuSet::parseMask(s.desired).value().toList();
        return std::string();
    };
    CHECK(mask(now.plan) == "0-4");         // the IRQ is on CPU 5 now (6-7 isolated)
    CHECK(mask(moved.plan) == "0-1,3-5");   // the plan puts it on CPU 2
}

TEST_CASE("IRQ affinity applies, reads back, verifies, reverts only to the same owner", "[knobs][irq][apply]") {
    test::TempTree tree{"r8125-irqbalance"};
    test::TempTree state{"vm-no-cpufreq"};
    test::KernelIrqTree fs(tree.path().string());
    const Knobs knobs(fs);
    JournalStore store((state.path() / "state").string());
    const auto profile = test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: auto\n");
    auto plan = prepare(tree, profile).plan;
    // CPUs 3, 6 and 7 have served no device interrupt: the first of them.
    REQUIRE(test::planLines(plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 0-7 -> 3"});
    REQUIRE(applyPlan(plan, knobs, store, "t1"));
    CHECK(trimmed(fs.read("proc/irq/130/smp_affinity_list").value()) == "3");
    CHECK(trimmed(fs.read("proc/irq/130/effective_affinity_list").value()) == "3");
    CHECK(applyPlan(prepare(tree, profile).plan, knobs, store, "t2").value().written.empty());
    auto j = store.load().value().value();
    CHECK(verifyApplied(j, knobs).value().empty());
    // The run dir's list for irqbalance's policy script names it.
    CHECK(pinnedIrqsText(&j) == "130\n");
    REQUIRE(fs.write("proc/irq/130/smp_affinity_list", "0-1"));
    auto drift = verifyApplied(j, knobs).value();
    REQUIRE(drift.size() == 1);
    CHECK(drift[0].id == "enp3s0 irq 130 enp3s0");
    SECTION("revert puts the original back") {
        auto r = revertAll(knobs, store).value();
        CHECK(r.restored.size() == 1);
        CHECK(trimmed(fs.read("proc/irq/130/smp_affinity_list").value()) == "0-7");
    }
    SECTION("the number went to another device (a driver reload): not touched, said") {
        std::filesystem::remove_all(tree.path() / "proc/irq/130/enp3s0");
        tree.put("proc/irq/130/nvme1q0/.action", "");
        auto r = revertAll(knobs, store).value();
        CHECK(r.restored.empty());
        REQUIRE(r.gone.size() == 1);
        CHECK(trimmed(fs.read("proc/irq/130/smp_affinity_list").value()) == "0-1");
    }
}

TEST_CASE("an IRQ that moves at its next interrupt: applied, pending until then, in effect after; revert exact", "[knobs][irq][apply]") {
    // Debian 12 on an e1000e: an MSI-X vector without interrupt remapping keeps its old effective
    // CPU until it fires. The apply must not fail (nor leave it changed with no journal).
    test::TempTree tree{"r8125-irqbalance"};
    test::TempTree state{"vm-no-cpufreq"};
    test::KernelIrqTree fs(tree.path().string(), {}, true);
    const Knobs knobs(fs);
    JournalStore store((state.path() / "state").string());
    const auto profile = test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: '5'\n");
    auto plan = prepare(tree, profile).plan;
    REQUIRE(test::planLines(plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 0-7 -> 5"});
    auto r = applyPlan(plan, knobs, store, "t1");
    REQUIRE(r);
    CHECK(r->written.size() == 1);
    CHECK(trimmed(fs.read("proc/irq/130/smp_affinity_list").value()) == "5");
    CHECK(trimmed(fs.read("proc/irq/130/effective_affinity_list").value()) == "4");
    REQUIRE(r->pending.size() == 1);
    CHECK(r->pending[0].id == "enp3s0 irq 130 enp3s0");
    CHECK(r->pending[0].what == "the kernel serves it on CPU 4 until its next interrupt, then on 5");
    auto j = store.load().value().value();
    CHECK(j.state == "applied");
    CHECK(verifyApplied(j, knobs).value().empty());  // not drift: writing it again changes nothing
    REQUIRE(pendingApplied(j, knobs).size() == 1);
    // The plan already counts the IRQ where it goes (RPS targets must not flip when it lands).
    CHECK(prepare(tree, profile).plan.pendingCount() == 0);
    fs.fire(130);
    CHECK(trimmed(fs.read("proc/irq/130/effective_affinity_list").value()) == "5");
    CHECK(pendingApplied(j, knobs).empty());
    CHECK(applyPlan(prepare(tree, profile).plan, knobs, store, "t2").value().written.empty());
    REQUIRE(revertAll(knobs, store));
    CHECK(trimmed(fs.read("proc/irq/130/smp_affinity_list").value()) == "0-7");
}

TEST_CASE("a managed IRQ refuses affinity writes: skipped with the reason, the apply goes on", "[knobs][irq][apply]") {
    test::TempTree tree{"mlx5-one-channel"};
    test::TempTree state{"vm-no-cpufreq"};
    test::KernelIrqTree fs(tree.path().string(), {99});
    const Knobs knobs(fs);
    JournalStore store((state.path() / "state").string());
    auto plan = prepare(tree, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: '9'\nsysctl:\n  net.core.somaxconn: 8192\n")).plan;
    REQUIRE(plan.settings.size() == 2);
    auto r = applyPlan(plan, knobs, store, "t1");
    REQUIRE(r);
    REQUIRE(r->refused.size() == 1);
    CHECK(r->refused[0].id == "ens2f0np0 irq 99 mlx5_comp0@pci:0000:3b:00.0");
    CHECK(r->refused[0].reason.find("the kernel refuses it") == 0);
    CHECK(trimmed(fs.read("proc/sys/net/core/somaxconn").value()) == "8192");
    auto j = store.load().value().value();
    CHECK(verifyApplied(j, knobs).value().empty());  // not drift at every check
    CHECK(pinnedIrqsText(&j).empty());
    REQUIRE(revertAll(knobs, store));
    CHECK(trimmed(fs.read("proc/sys/net/core/somaxconn").value()) == "4096");
}

TEST_CASE("rings: planned to max or N, set and read back through ethtool, advised where drops show", "[knobs][rings]") {
    test::TempTree tree{"mlx5-one-channel"};
    auto p = prepare(tree, test::profileOf(std::string(kIrqOnly) + "nic:\n  rings: {rx: max, tx: 4096}\n")).plan;
    CHECK(test::planLines(p) == std::vector<std::string>{"ens2f0np0 ring rx 1024 -> 8192", "ens2f0np0 ring tx 1024 -> 4096"});
    auto over = prepare(tree, test::profileOf(std::string(kIrqOnly) + "nic:\n  rings: {rx: 9000}\n")).plan;
    CHECK(test::planLines(over) == std::vector<std::string>{"skip ens2f0np0 ring rx: 9000 is above the driver's maximum 8192"});
    test::TempTree iso{"isolated-cpus-netns"};
    auto veth = prepare(iso, test::profileOf("match:\n  interfaces: [veth0]\n  virtual: include\nsteering:\n  mode: none\nnic:\n  rings: {rx: max}\n")).plan;
    CHECK(test::planLines(veth) == std::vector<std::string>{"skip veth0 ring rx: the driver has no rings to set (Operation not supported)"});
    // The r8125 counts drops with its ring at a quarter of its maximum: advised, not pending.
    test::TempTree r8{"r8125-irqbalance"};
    auto advised = prepare(r8, test::profileOf(kIrqOnly)).plan;
    REQUIRE(advised.advice.size() == 1);
    CHECK(advised.advice[0].text.find("RX ring 256 of at most 1024 while the device counts 1234 dropped packets") == 0);
    CHECK(advised.pendingCount() == 0);
    // Softnet's squeezes and drops count where they are on the CPU that takes the RX IRQ (4), and
    // missed frames (a full ring) beside the drops; drops on other CPUs are not the ring's.
    {
        std::string softnet;
        for (unsigned cpu = 0; cpu < 8; ++cpu) {
            char row[160];
            std::snprintf(row, sizeof row, "000f4240 %08x %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %08x\n",
                          cpu == 4 ? 7u : cpu == 1 ? 900u : 0u, cpu == 4 ? 321u : 0u, cpu);
            softnet += row;
        }
        r8.put("proc/net/softnet_stat", softnet);
        auto doc = nlohmann::json::parse(std::ifstream(r8.path() / "netlink.json"));
        for (auto& l : doc["links"])
            if (l["name"] == "enp3s0") l["rx_missed"] = 55;
        r8.put("netlink.json", doc.dump());
        auto more = prepare(r8, test::profileOf(kIrqOnly)).plan;
        REQUIRE(more.advice.size() == 1);
        CHECK(more.advice[0].text == "RX ring 256 of at most 1024 while the device counts 1234 dropped and 55 missed packets and softnet "
                                     "counts 321 squeezes and 7 drops on CPU(s) 4, which take its RX IRQ: a larger ring absorbs "
                                     "bursts (nic.rings.rx: max)");
        // Only softnet shows it (a driver that counts neither): still advised.
        for (auto& l : doc["links"])
            if (l["name"] == "enp3s0") l["rx_missed"] = 0, l["rx_dropped"] = 0;
        r8.put("netlink.json", doc.dump());
        auto only = prepare(r8, test::profileOf(kIrqOnly)).plan;
        REQUIRE(only.advice.size() == 1);
        CHECK(only.advice[0].text.find("RX ring 256 of at most 1024 while softnet counts 321 squeezes and 7 drops on CPU(s) 4") == 0);
    }
    auto err = [](const std::string& text) { return loadProfileText(text, "bad.yaml", {}).error().message(); };
    CHECK(err("nic:\n  rings: {rx: big}\n").find("bad.yaml:2:15: nic.rings.rx: expected max or a number of descriptors, got 'big'") == 0);
    CHECK(err("nic:\n  rings: {rx: 0}\n").find("nic.rings.rx") != std::string::npos);
    CHECK(err("irq:\n  cpus: some\n").find("bad.yaml:2:9: irq.cpus: expected auto, keep or a cpulist, got 'some'") == 0);

    // Apply through the (fake) ethtool netlink; again: nothing; revert: the sizes as they were.
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    const Knobs knobs(fs, Services().with<NetlinkSource>(&nl));
    JournalStore store((state.path() / "state").string());
    const auto profile = test::profileOf(std::string(kIrqOnly) + "nic:\n  rings: {rx: max}\n");
    auto plan = preparePlan(profile, fs, nl).value().plan;
    REQUIRE(applyPlan(plan, knobs, store, "t1"));
    CHECK(nl.ethtoolValue("rings", "ens2f0np0", "rx") == 8192);
    CHECK(preparePlan(profile, fs, nl).value().plan.pendingCount() == 0);
    CHECK(verifyApplied(store.load().value().value(), knobs).value().empty());
    REQUIRE(revertAll(knobs, store));
    CHECK(nl.ethtoolValue("rings", "ens2f0np0", "rx") == 1024);
    CHECK(nl.ethtoolSets == 2);
}

TEST_CASE("detect shows rings, coalescing and irqbalance from the families", "[knobs][detect]") {
    test::TempTree tree{"igb-one-queue"};
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    auto snap = takeSnapshot(fs, nl, {}).value();
    const SnapshotIo io{fs, nl, {}};
    for (const KnobFamily* f : knobFamilies()) REQUIRE(f->readDetect(io, snap));
    auto j = toJson(snap);
    const auto& b = j["host"]["irqbalance"];
    CHECK(b["running"] == true);
    CHECK(b["pid"] == 1204);
    CHECK(b["config_file"] == "/etc/default/irqbalance");
    CHECK(b["banned_irqs"] == nlohmann::ordered_json::array({77}));
    CHECK(b["banned_cpus"] == "0");
    nlohmann::ordered_json nic;
    for (const auto& n : j["interfaces"])
        if (n["name"] == "enp1s0") nic = n;
    CHECK(nic["rings"]["rx"] == 256);
    CHECK(nic["rings"]["rx_max"] == 4096);
    CHECK(nic["coalesce"]["rx_usecs"] == 3);
    CHECK(nic["coalesce"]["adaptive_rx"].is_null());
    std::ostringstream text;
    printTable(snap, text);
    CHECK(text.str().find("irqbalance runs (pid 1204), package 1.9.2-1") != std::string::npos);
    CHECK(text.str().find("rings rx 256/4096 tx 256/4096") != std::string::npos);
}

namespace {

using namespace std::string_literals;

std::string fileText(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A fixture host with irqbalance, its /proc/irq acting as the kernel's, a state and a run dir.
using test::PinRig;

// Records the rescans asked for instead of signalling anything.
class RecordingSignals final : public ProcessSignals {
public:
    Result<void> hangUp(int pid, const std::string& comm) override {
        told.emplace_back(pid, comm);
        return {};
    }
    std::vector<std::pair<int, std::string>> told;
};

}  // namespace

TEST_CASE("pinned-irqs is written when it changes, and irqbalance asking rxtune's policy script is told to rescan", "[knobs][irq]") {
    PinRig rig;
    auto& [tree, state, fs, knobs, store, runDir] = rig;
    RecordingSignals signals;
    // irqbalance 941 runs with the drop-in's command line; 950 with a policy directory holding the
    // script; 960 with somebody else's script.
    tree.put("proc/941/cmdline", "/usr/sbin/irqbalance\0--foreground\0--policyscript=/usr/share/rxtune/irqbalance/rxtune-policy\0"s);
    tree.put("proc/950/comm", "irqbalance\n");
    tree.put("proc/950/cmdline", "irqbalance\0-l\0/etc/irqbalance.d/\0"s);
    tree.put("etc/irqbalance.d/rxtune-policy", "#!/bin/sh\n");
    tree.put("proc/960/comm", "irqbalance\n");
    tree.put("proc/960/cmdline", "irqbalance\0--policyscript=/usr/local/bin/mine\0"s);
    std::vector<int> asking;
    for (const auto& ib : irqbalanceAskingRxtune(fs)) asking.push_back(ib.pid);
    CHECK(asking == std::vector<int>{941, 950});

    // Nothing pinned yet: the file is made, nobody is told.
    auto first = publishPinnedIrqs(runDir, store, fs, signals).value();
    CHECK_FALSE(first.changed);
    CHECK(signals.told.empty());
    CHECK(std::filesystem::exists(runDir + "/pinned-irqs"));

    REQUIRE(applyPlan(prepare(tree, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: '3'\n")).plan, knobs, store, "t1"));
    auto pinned = publishPinnedIrqs(runDir, store, fs, signals).value();
    CHECK(pinned.changed);
    CHECK(pinned.told == std::vector<int>{941, 950});
    CHECK(signals.told == std::vector<std::pair<int, std::string>>{{941, "irqbalance"}, {950, "irqbalance"}});
    CHECK(fileText(runDir + "/pinned-irqs") == "130\n");

    // The same list again (every daemon run): not rewritten, nobody told again.
    CHECK_FALSE(publishPinnedIrqs(runDir, store, fs, signals).value().changed);
    CHECK(signals.told.size() == 2);

    REQUIRE(revertAll(knobs, store));
    auto reverted = publishPinnedIrqs(runDir, store, fs, signals).value();
    CHECK(reverted.changed);
    CHECK(signals.told.size() == 4);
    CHECK(fileText(runDir + "/pinned-irqs").empty());
}

TEST_CASE("irqbalance's interval and age: its first pass is awaited, since a rescan request before it is dropped", "[knobs][irq]") {
    auto interval = [](std::vector<std::string> args) {
        IrqbalanceFacts f;
        applyIrqbalanceConfig({}, args, {}, f);
        return std::make_pair(f.interval, f.notes);
    };
    CHECK(interval({}).first == 10);  // irqbalance's default
    CHECK(interval({"--interval=3"}).first == 3);
    CHECK(interval({"--interval", "4"}).first == 4);
    CHECK(interval({"-t", "5"}).first == 5);
    CHECK(interval({"-t7"}).first == 7);
    CHECK(interval({"-t", "0"}).first == 10);  // irqbalance refuses it
    CHECK(interval({"--interval=x"}).second.at(0).find("--interval 'x'") == 0);

    PinRig rig;
    auto& [tree, state, fs, knobs, store, runDir] = rig;
    // 941 asks rxtune's script with a 1 s interval; it started 250 ticks (2.5 s at 100 Hz) after
    // boot, 0.5 s ago: its first pass, and a rescan request it takes, 2.5 s away. Its command name
    // holds a space and a parenthesis, as a comm may.
    tree.put("proc/941/cmdline", "/usr/sbin/irqbalance\0--foreground\0--policyscript=/usr/share/rxtune/irqbalance/rxtune-policy\0-t\0001\0"s);
    tree.put("proc/941/stat", "941 (irq) (balance) S 1 941 941 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 250 0 0\n");
    tree.put("proc/uptime", "3.00 5.00\n");
    REQUIRE(sysconf(_SC_CLK_TCK) == 100);
    auto asking = irqbalanceAskingRxtune(fs);
    REQUIRE(asking.size() == 1);
    CHECK(asking[0].interval == 1);
    CHECK(asking[0].age == Approx(0.5));
    CHECK(asking[0].rescanIgnoredFor() == Approx(2.5));
    IrqbalanceAsking unknown{941, 10, -1};
    CHECK(unknown.rescanIgnoredFor() == 0);  // no age: taken as running long since
    // Its control socket, made once it has read its IRQs, 0.5 s ago: the first pass 1 s (its
    // interval) after that, up to 1 s later.
    const auto socket = tree.path() / "run/irqbalance/irqbalance941.sock";
    tree.put("run/irqbalance/irqbalance941.sock", "");
    auto madeAgo = [&](double seconds) {
        std::filesystem::last_write_time(socket, std::filesystem::file_time_type::clock::now() -
                                                     std::chrono::duration_cast<std::filesystem::file_time_type::duration>(
                                                         std::chrono::duration<double>(seconds)));
    };
    madeAgo(0.5);
    asking = irqbalanceAskingRxtune(fs);
    REQUIRE(asking.size() == 1);
    CHECK(asking[0].loopAge == Approx(0.5).margin(0.25));
    CHECK(asking[0].rescanIgnoredFor() == Approx(2.0).margin(0.25));
    // A socket file older than the process: an earlier irqbalance's under a reused pid.
    madeAgo(60);
    CHECK(irqbalanceAskingRxtune(fs).at(0).loopAge < 0);
    CHECK(irqbalanceAskingRxtune(fs).at(0).rescanIgnoredFor() == Approx(2.5));
    madeAgo(0.5);

    // Who is told, and when: a recorder that also notes the IRQ's affinity at that moment, and
    // answers for irqbalance's control socket as told.
    struct Recorder final : ProcessSignals {
        explicit Recorder(const FileTree& f) : fs(f) {}
        Result<void> hangUp(int pid, const std::string&) override {
            told.emplace_back(pid, trimmed(fs.read("proc/irq/130/smp_affinity_list").value()));
            return {};
        }
        std::optional<std::set<int>> irqbalancePlaced(int) override {
            ++asked;
            if (!placed) return std::nullopt;
            return *placed ? std::set<int>{16, 130} : std::set<int>{};
        }
        const FileTree& fs;
        std::vector<std::pair<int, std::string>> told;
        std::optional<bool> placed;
        int asked = 0;
    } signals(fs);

    // Young (its socket 0.5 s old), so asked; where it cannot be asked its age decides: its
    // first pass 0.5-1.5 s away. Where it says it has placed IRQs, only a pass does that: ready.
    CHECK(irqbalanceNotReady(fs, signals).at(0).second == Approx(2.0).margin(0.25));
    CHECK(signals.asked == 1);
    signals.placed = true;
    CHECK(irqbalanceNotReady(fs, signals).empty());
    // Past by its age (3 s) but nothing placed yet (a slow first pass): not ready, asked again soon.
    tree.put("proc/uptime", "6.00 5.00\n");
    madeAgo(3.0);
    signals.placed = false;
    CHECK(irqbalanceNotReady(fs, signals) == std::vector<std::pair<int, double>>{{941, 0.5}});
    signals.placed = std::nullopt;
    CHECK(irqbalanceNotReady(fs, signals).empty());
    CHECK(signals.asked == 4);
    // No socket file yet (still reading its IRQs: the policy script once per IRQ, 6 s under TCG
    // on 6.12) and it cannot be asked: not ready while it is young by its age (its interval and
    // 12 s), whatever the age estimate of its first pass says.
    std::filesystem::remove(socket);
    tree.put("proc/uptime", "6.00 5.00\n");  // 3.5 s old
    CHECK(irqbalanceNotReady(fs, signals) == std::vector<std::pair<int, double>>{{941, 0.5}});
    tree.put("proc/uptime", "15.60 5.00\n");  // 13.1 s old: no longer young
    CHECK(irqbalanceNotReady(fs, signals).empty());
    CHECK(signals.asked == 5);
    tree.put("run/irqbalance/irqbalance941.sock", "");
    // Long running: not asked.
    madeAgo(30);
    tree.put("proc/uptime", "32.50 5.00\n");
    signals.placed = false;
    CHECK(irqbalanceNotReady(fs, signals).empty());
    CHECK(signals.asked == 5);
    tree.put("proc/uptime", "3.00 5.00\n");
    madeAgo(0.5);
    signals.placed = std::nullopt;

    const auto plan = prepare(tree, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: '3'\n")).plan;
    CHECK(irqsPinnedBy(plan) == std::set<int>{130});
    // Before the writes: published, told, and said to be dropped.
    auto before = publishPinnedIrqs(runDir, store, fs, signals, {irqsPinnedBy(plan)}).value();
    CHECK(before.changed);
    CHECK(fileText(runDir + "/pinned-irqs") == "130\n");
    CHECK(signals.told == std::vector<std::pair<int, std::string>>{{941, "0-7"}});  // told before the write
    REQUIRE(before.dropped.size() == 1);
    CHECK(before.droppedFor() == Approx(2.0).margin(0.25));
    // After its first pass: told again, though the list is the same.
    tree.put("proc/uptime", "6.00 5.00\n");
    madeAgo(3.0);
    auto again = publishPinnedIrqs(runDir, store, fs, signals, {irqsPinnedBy(plan), PinnedIrqsRequest::Tell::kAlways}).value();
    CHECK_FALSE(again.changed);
    CHECK(again.told == std::vector<int>{941});
    CHECK(again.dropped.empty());
    // The apply, then the publication after it: the same list, nobody told.
    REQUIRE(applyPlan(plan, knobs, store, "t1"));
    CHECK_FALSE(publishPinnedIrqs(runDir, store, fs, signals).value().changed);
    CHECK(signals.told.size() == 2);
    // Applied: the IRQ in place is still one the plan pins (irqbalance's until its rescan bans it).
    CHECK(irqsPinnedBy(prepare(tree, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: '3'\n")).plan) == std::set<int>{130});
    // A failed apply's planned IRQ is taken back by the publication after it.
    REQUIRE(revertAll(knobs, store));
    auto planned = publishPinnedIrqs(runDir, store, fs, signals, {{130}}).value();
    CHECK_FALSE(planned.changed);  // the revert's publication was not made: the list still names 130
    auto undone = publishPinnedIrqs(runDir, store, fs, signals).value();
    CHECK(undone.changed);
    CHECK(fileText(runDir + "/pinned-irqs").empty());
}

TEST_CASE("irq.cpus auto with an earlier reading: other work is the rate since, not the count since boot", "[knobs][irq]") {
    test::TempTree tree{"r8125-irqbalance"};
    const auto profile = test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: auto\n");
    // Since boot CPUs 3, 6 and 7 have served nothing else: 3.
    auto boot = prepare(tree, profile, true);
    REQUIRE(test::planLines(boot.plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 0-7 -> 3"});
    // Ten seconds ago CPU 1's nvme queue had its count already (idle since), while CPU 0's and
    // CPU 4's IRQs kept firing: by rate CPU 1 is as idle as 3 and comes first.
    InterruptCounts before = interruptsOf(boot.snapshot);
    before.perCpu[0] -= 50000;
    before.perCpu[4] -= 20000;
    auto rated = prepare(tree, profile, true, &before, 10);
    CHECK(test::planLines(rated.plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 0-7 -> 1"});
    std::string explained;
    for (const auto& e : rated.plan.explanation) explained += e + "\n";
    CHECK(explained.find("enp3s0: irq cpu 0 eligible: 5000 other interrupts/s over the last 10 s") != std::string::npos);
    CHECK(explained.find("enp3s0: irq cpu 4 eligible: 2000 other interrupts/s over the last 10 s") != std::string::npos);
    // A count that went down since (or a reading that did not know the device's IRQs): since boot.
    InterruptCounts reset = interruptsOf(boot.snapshot);
    reset.perCpu[2] += 1000;
    CHECK(test::planLines(prepare(tree, profile, false, &reset, 10).plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 0-7 -> 3"});
    InterruptCounts unknown = before;
    unknown.nicIrqs.clear();
    CHECK(test::planLines(prepare(tree, profile, false, &unknown, 10).plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 0-7 -> 3"});
    // Within 100/s of the least, the IRQ stays where it is.
    InterruptCounts close = interruptsOf(boot.snapshot);
    close.perCpu[0] -= 50000;
    close.perCpu[4] -= 500;  // CPU 4, where the IRQ is: 50/s
    auto kept = prepare(tree, profile, true, &close, 10);
    CHECK(test::planLines(kept.plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 0-7 -> 4"});
}

TEST_CASE("irq.cpus auto without a reading: an IRQ where rxtune's journal put it stays there", "[knobs][irq]") {
    // A daemon restarted (an upgrade): no rate yet, and the counts since boot of the CPU the IRQ
    // served include the work that placement brought. Since boot CPU 3 is the least busy; the IRQ
    // is on CPU 4.
    test::TempTree tree{"r8125-irqbalance"};
    tree.put("proc/irq/130/smp_affinity_list", "4\n");
    const auto profile = test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: auto\n");
    FileTree fs(tree.path().string());
    auto planWith = [&](const std::map<std::string, std::string>& journaled, const InterruptCounts* counts = nullptr) {
        test::FakeNetlink nl(tree.path());
        PlanRequest req;
        req.explain = true;
        req.memory.families.set(kInterruptsBefore, InterruptsBefore{counts, counts ? 10.0 : 0.0, &journaled});
        return preparePlan(profile, fs, nl, req).value();
    };
    // Not journaled: the least busy since boot.
    CHECK(test::planLines(planWith({}).plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 4 -> 3"});
    // Journaled where it is: kept, and said why.
    auto ours = planWith({{"enp3s0 irq 130 enp3s0", "4"}});
    CHECK(test::planLines(ours.plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 4 -> 4"});
    std::string explained;
    for (const auto& e : ours.plan.explanation) explained += e + "\n";
    CHECK(explained.find("enp3s0: irq cpu 4 kept: rxtune's journal put the IRQ there") != std::string::npos);
    // The journal says another CPU (someone moved it since), another owner, or a reading to rate
    // by: the usual choice.
    CHECK(test::planLines(planWith({{"enp3s0 irq 130 enp3s0", "5"}}).plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 4 -> 3"});
    CHECK(test::planLines(planWith({{"enp3s0 irq 130 other", "4"}}).plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 4 -> 3"});
    InterruptCounts before = interruptsOf(ours.snapshot);
    before.perCpu[4] -= 50000;  // CPU 4 served 5000 other interrupts/s since, the others none: CPU 0 first
    CHECK(test::planLines(planWith({{"enp3s0 irq 130 enp3s0", "4"}}, &before).plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 4 -> 0"});
}

TEST_CASE("a command plans through the same hooks as the daemon: irq.cpus auto keeps where rxtune's journal put the IRQ", "[knobs][irq][apply]") {
    // rxtune plan/apply after a daemon (or an apply) placed the IRQ on CPU 4: the command's
    // lifecycle runs the families' hooks before its plan (the CLI once did not), so the IRQ stays.
    test::TempTree tree{"r8125-irqbalance"};
    tree.put("proc/irq/130/smp_affinity_list", "4\n");
    FileTree fs(tree.path().string());
    test::TempTree state{"vm-no-cpufreq"};
    JournalStore store((state.path() / "state").string());
    {
        test::FakeNetlink nl(tree.path());
        Journal j;
        j.state = "applied";
        j.profile = "t";
        j.applied = preparePlan(test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: '4'\n"), fs, nl).value().plan.settings;
        REQUIRE(j.applied.size() == 1);
        REQUIRE(store.save(j));
    }
    const auto profile = test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: auto\n");
    SystemProcessSignals signals;
    SystemClock clock;
    const std::string runDir;
    Lifecycle command(fs, store, runDir, signals, clock, [](const char*, const std::string&) {}, false);
    test::FakeNetlink nl(tree.path());
    CHECK(test::planLines(command.plan(profile, nl, {}, true).value().plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 4 -> 4"});
    // Without the hooks (the plan alone) the counts since boot choose CPU 3.
    CHECK(test::planLines(preparePlan(profile, fs, nl).value().plan) == std::vector<std::string>{"enp3s0 irq 130 enp3s0 4 -> 3"});
}

TEST_CASE("apply tells irqbalance before its writes: after its first pass, then waits for the rescan", "[knobs][irq]") {
    PinRig rig;
    auto& [tree, state, fs, knobs, store, runDir] = rig;
    // A clock that moves when slept on; irqbalance 941 (1 s interval) started 0.5 s ago, as
    // Debian 12's irqbalance on 6.12 under TCG did: no control socket until 6 s after its start
    // (the policy script for each IRQ), its first pass 1.3 s after that, and a rescan 1.2 s after a
    // SIGHUP it takes.
    struct TestClock final : Clock {
        std::uint64_t wallNanoseconds() const override { return 0; }
        double monotonicSeconds() const override { return t; }
        void sleepFor(double s) const override { t += std::max(s, 0.0); }
        mutable double t = 100;
    } clock;
    const double started = clock.t - 0.5;
    tree.put("proc/941/comm", "irqbalance\n");
    tree.put("proc/941/cmdline", "/usr/sbin/irqbalance\0--foreground\0--policyscript=/usr/share/rxtune/irqbalance/rxtune-policy\0--interval=1\0"s);
    tree.put("proc/941/stat", "941 (irqbalance) S 1 941 941 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 250 0 0\n");
    struct Irqbalance final : ProcessSignals {
        Irqbalance(test::TempTree& tr, const TestClock& c, double s) : tree(tr), clock(c), started(s) {}
        double age() const { return clock.t - started; }
        // The process's state follows the clock: /proc/uptime (started 2.5 s after boot), its socket.
        void sync() {
            tree.put("proc/uptime", std::to_string(2.5 + age()) + " 1.00\n");
            if (age() >= 6 && !std::filesystem::exists(tree.path() / "run/irqbalance/irqbalance941.sock")) tree.put("run/irqbalance/irqbalance941.sock", "");
        }
        Result<void> hangUp(int pid, const std::string&) override {
            told.emplace_back(pid, age());
            if (age() >= 7.3) rescanAt = clock.t + 1.2;  // before its first pass: dropped
            return {};
        }
        std::optional<std::set<int>> irqbalancePlaced(int) override {
            ++asked;
            if (age() < 6) return std::nullopt;  // no socket yet
            if (age() < 7.3) return std::set<int>{};
            if (rescanAt > 0 && clock.t >= rescanAt) return std::set<int>{16};  // the rescan pass places the others again
            return std::set<int>{16, 130};
        }
        test::TempTree& tree;
        const TestClock& clock;
        double started;
        double rescanAt = 0;
        std::vector<std::pair<int, double>> told;
        int asked = 0;
    } ib(tree, clock, started);
    // The tree follows the clock at every look: a FileTree reads it, the test clock drives it.
    struct SyncingClock final : Clock {
        SyncingClock(TestClock& c, Irqbalance& i) : inner(c), ib(i) {}
        std::uint64_t wallNanoseconds() const override { return 0; }
        double monotonicSeconds() const override { return inner.t; }
        void sleepFor(double s) const override {
            inner.sleepFor(s);
            ib.sync();
        }
        TestClock& inner;
        Irqbalance& ib;
    } syncing(clock, ib);
    ib.sync();

    const auto plan = prepare(tree, test::profileOf(std::string(kIrqOnly) + "irq:\n  cpus: '3'\n")).plan;
    // What the user is told, each line with the clock when it was said.
    std::vector<std::pair<std::string, double>> said;
    auto say = [&](const std::string& l) { said.emplace_back(l, clock.t); };
    auto lines = [&] {
        std::vector<std::string> out;
        for (const auto& [l, at] : said) out.push_back(l);
        return out;
    };
    REQUIRE(tellIrqbalanceBeforeWrites(runDir, store, fs, ib, syncing, irqsPinnedBy(plan), say));
    CHECK(fileText(runDir + "/pinned-irqs") == "130\n");
    REQUIRE(said.size() == 2);
    CHECK(said[0].second == 100);  // said at once (the clock started at 100), before the wait
    CHECK(said[0].first == "irqbalance (pid 941) has not made its first pass and drops a rescan request until then: waiting for it "
                      "before pinning IRQs (it has not opened its control socket yet: still reading its IRQs)");
    CHECK(said[1].first == "irqbalance (pid 941) told to rescan: the IRQs rxtune pins changed");
    // The file first, the request once its first pass has come; the apply goes on once the rescan
    // shows, not before.
    REQUIRE(ib.told.size() == 1);
    CHECK(ib.told[0].second >= 7.3);
    CHECK(ib.told[0].second < 8.0);
    CHECK(clock.t >= ib.rescanAt);
    CHECK(clock.t < ib.rescanAt + 0.2);

    // Long running and answering: told once, then the rescan awaited; nothing said but that.
    ib.rescanAt = 0;
    ib.told.clear();
    clock.t += 60;
    ib.sync();
    std::filesystem::last_write_time(tree.path() / "run/irqbalance/irqbalance941.sock",
                                     std::filesystem::file_time_type::clock::now() - std::chrono::seconds(60));
    said.clear();
    REQUIRE(tellIrqbalanceBeforeWrites(runDir, store, fs, ib, syncing, {130, 131}, say));
    CHECK(lines() == std::vector<std::string>{"irqbalance (pid 941) told to rescan: the IRQs rxtune pins changed"});
    CHECK(ib.told.size() == 1);
    CHECK(clock.t >= ib.rescanAt);
    // Not listed (banned already, as by the rescan above), the list as it was: nobody told, nothing
    // waited for.
    const double at = clock.t;
    said.clear();
    REQUIRE(tellIrqbalanceBeforeWrites(runDir, store, fs, ib, syncing, {130, 131}, say));
    CHECK(said.empty());
    CHECK(ib.told.size() == 1);
    CHECK(clock.t == at);
    // A list that changes: told, and (not listed before) nothing to wait for.
    REQUIRE(tellIrqbalanceBeforeWrites(runDir, store, fs, ib, syncing, {130}, say));
    CHECK(said.size() == 1);
    CHECK(ib.told.size() == 2);
    CHECK(clock.t == at);
    // Nothing about to be pinned, or nobody asking the script: nothing done.
    said.clear();
    REQUIRE(tellIrqbalanceBeforeWrites(runDir, store, fs, ib, syncing, {}, say));
    CHECK(said.empty());
    CHECK(ib.told.size() == 2);
}
