// A command's apply through the families' hooks, against a model of irqbalance that moves the IRQs
// it balances at each pass, bans what rxtune's policy script names at its start and at a rescan,
// and drops a rescan request before its first pass (irqbalance.c: scan, force_rescan).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <systemd/sd-daemon.h>

#include "../support/fixture.hpp"
#include "../support/kernel_irq_tree.hpp"
#include "../support/pin_rig.hpp"
#include "apply/lifecycle.hpp"
#include "apply/prepare.hpp"
#include "core/text.hpp"
#include "knobs/irq_state.hpp"
#include "knobs/registry.hpp"

using namespace rxtune;
using namespace std::string_literals;

namespace {

// A clock that moves when slept on, and runs what follows it (the model's passes) each time.
struct ModelClock final : Clock {
    std::uint64_t wallNanoseconds() const override { return 0; }
    double monotonicSeconds() const override { return t; }
    void sleepFor(double s) const override {
        t += std::max(s, 0.0);
        if (onSleep) onSleep();
    }
    mutable double t = 100;
    std::function<void()> onSleep;
};

// irqbalance 941 as Debian's runs it with rxtune's drop-in: started `age` seconds before the
// clock's now, its control socket made once it has read its IRQs (`socketAfter`), its first pass
// `firstPassAfter` seconds after its start, then one every `interval`.
struct ModelIrqbalance final : ProcessSignals {
    ModelIrqbalance(test::TempTree& tr, FileTree& f, const ModelClock& c, std::string pinned)
        : tree(tr), fs(f), clock(c), pinnedFile(std::move(pinned)) {}
    test::TempTree& tree;
    FileTree& fs;
    const ModelClock& clock;
    std::string pinnedFile;
    double started = 0, socketAfter = 6, firstPassAfter = 7.3, interval = 1, nextPass = 0;
    std::map<int, std::string> place;  // where its balancing puts each IRQ it balances
    std::set<int> banned;
    bool hostile = false;  // its policy script never bans (it cannot read the list)
    bool passUnderWay = false;  // the next request comes while a pass runs: that pass still writes what it decided
    bool needRescan = false;
    int cycles = 0;        // passes since its start or last rescan (irqbalance's cycle_count)
    int told = 0, moves = 0;

    double age() const { return clock.t - started; }
    std::set<int> readPinned() const {
        std::set<int> out;
        if (hostile) return out;
        std::ifstream in(pinnedFile);
        for (int n = 0; in >> n;) out.insert(n);
        return out;
    }
    void start(double ago) {
        started = clock.t - ago;
        banned = readPinned();  // its scan at start runs the policy script for each IRQ
        nextPass = started + firstPassAfter;
        tree.put("proc/941/cmdline", "/usr/sbin/irqbalance\0--foreground\0--policyscript=/usr/share/rxtune/irqbalance/rxtune-policy\0--interval=1\0"s);
        tree.put("proc/941/stat", "941 (irqbalance) S 1 941 941 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 250 0 0\n");
        sync();
    }
    // The process as the clock has it now: /proc/uptime (it started 2.5 s after boot), its
    // socket, the passes due.
    void sync() {
        tree.put("proc/uptime", std::to_string(2.5 + age()) + " 1.00\n");
        const auto socket = tree.path() / "run/irqbalance/irqbalance941.sock";
        if (age() >= socketAfter && !std::filesystem::exists(socket)) {
            tree.put("run/irqbalance/irqbalance941.sock", "");
            std::filesystem::last_write_time(socket, std::filesystem::file_time_type::clock::now() -
                                                         std::chrono::duration_cast<std::filesystem::file_time_type::duration>(
                                                             std::chrono::duration<double>(age() - socketAfter)));
        }
        while (clock.t >= nextPass) {
            pass();
            nextPass += interval;
        }
    }
    void pass() {
        if (needRescan) {  // the rescan: the list read again, nothing placed in that pass
            needRescan = false;
            banned = readPinned();
            cycles = 0;
            return;
        }
        for (const auto& [irq, cpus] : place) {
            if (banned.count(irq)) continue;
            const std::string file = "proc/irq/" + std::to_string(irq) + "/smp_affinity_list";
            if (trimmed(fs.read(file).value()) == cpus) continue;
            REQUIRE(fs.write(file, cpus));
            ++moves;
        }
        ++cycles;
    }
    Result<void> hangUp(int, const std::string&) override {
        ++told;
        if (passUnderWay) {  // glib runs scan() to its end before it dispatches the signal
            passUnderWay = false;
            pass();
        }
        if (cycles > 0) needRescan = true;  // before its first pass (after a rescan too): dropped
        return {};
    }
    std::optional<std::set<int>> irqbalancePlaced(int) override {
        if (age() < socketAfter) return std::nullopt;
        std::set<int> out;
        if (cycles == 0) return out;  // nothing placed since its start or rescan
        out.insert(16);
        for (const auto& [irq, cpus] : place)
            if (!banned.count(irq)) out.insert(irq);
        return out;
    }
};

struct LifecycleRig : test::PinRig {
    ModelClock clock;
    ModelIrqbalance ib{tree, fs, clock, runDir + "/pinned-irqs"};
    std::vector<std::string> said;
    Lifecycle life{fs, store, runDir, ib, clock, [this](const char* level, const std::string& l) {
                       said.push_back((std::string(level) == SD_WARNING ? "warning: " : "") + l);
                   }, false};
    Profile profile = loadProfileText("steering:\n  mode: none\nirq:\n  cpus: '3'\n", "t.yaml", {}).value();
    LifecycleRig() { clock.onSleep = [this] { ib.sync(); }; }
    Plan plan() {
        FileTree ro(tree.path().string());
        test::FakeNetlink nl(tree.path());
        return preparePlan(profile, ro, nl).value().plan;
    }
    std::string irq130() { return trimmed(fs.read("proc/irq/130/smp_affinity_list").value()); }
    bool saidHas(const std::string& text) const {
        return std::any_of(said.begin(), said.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
    }
};

}  // namespace

TEST_CASE("an IRQ in place that irqbalance moves before its rescan is set again by the apply that pins it", "[apply][irq]") {
    LifecycleRig rig;
    // irqbalance restarted 0.5 s ago, its balancing putting IRQ 130 on CPU 5; the IRQ is on CPU 3
    // (where an earlier irqbalance put it, or a person), which is what the profile asks.
    REQUIRE(rig.fs.write("proc/irq/130/smp_affinity_list", "3"));
    rig.ib.place = {{130, "5"}};
    rig.ib.start(0.5);
    Plan plan = rig.plan();
    REQUIRE(plan.settings.size() == 1);
    CHECK(plan.pendingCount() == 0);  // in place: nothing to write, as the plan sees it
    CHECK(irqsPinnedBy(plan) == std::set<int>{130});

    auto done = rig.life.apply(plan, rig.knobs, rig.profile, "t1");
    REQUIRE(done);
    // Published before its first pass, which moved the IRQ all the same (its start had read an
    // older list); told once that pass had come; its rescan awaited; the IRQ read again and set.
    CHECK(rig.ib.told == 1);
    CHECK(rig.ib.banned == std::set<int>{130});
    REQUIRE(done->movedBefore.size() == 1);
    CHECK(done->movedBefore[0].was == "3");
    CHECK(done->movedBefore[0].found == "5");
    CHECK(done->movedBefore[0].by == "irqbalance (pid 941), before the rescan that bans it");
    REQUIRE(done->report.written.size() == 1);
    CHECK(done->report.written[0].current == "5");
    CHECK(rig.irq130() == "3");
    CHECK(rig.saidHas("enp3s0 irq 130 enp3s0 was moved from 3 to 5 meanwhile, by irqbalance (pid 941), before the rescan that bans it: set again"));
    // Looked at again after the writes (a mover was at work): nothing moved since.
    CHECK(done->movedAfter.empty());
    CHECK_FALSE(done->stillMoving);
    // Its passes go on, and leave the IRQ where rxtune put it.
    const int moves = rig.ib.moves;
    rig.clock.sleepFor(10);
    CHECK(rig.irq130() == "3");
    CHECK(rig.ib.moves == moves);
    // Journaled as written: what it held then is its original, and verify finds it in sync.
    auto j = rig.store.load().value();
    REQUIRE(j);
    REQUIRE(j->originals.size() == 1);
    CHECK(trimmed(j->originals[0].value) == "5");
    CHECK(verifyApplied(*j, rig.knobs).value().empty());

    // Applied again: the list as it was and irqbalance banning the IRQ: nobody told, nothing
    // waited for, nothing written.
    const double before = rig.clock.t;
    rig.said.clear();
    Plan again = rig.plan();
    auto second = rig.life.apply(again, rig.knobs, rig.profile, "t2");
    REQUIRE(second);
    CHECK(second->report.written.empty());
    CHECK(second->movedBefore.empty());
    CHECK(rig.ib.told == 1);
    CHECK(rig.clock.t == before);
    CHECK(rig.said.empty());
}

TEST_CASE("an irqbalance long running: an IRQ in place it still balances is published, awaited and set again", "[apply][irq]") {
    LifecycleRig rig;
    // Running for a minute, its passes keeping IRQ 130 on CPU 5; a person puts it on 3 just before
    // the apply (the booted lab's arrangement), and the request comes while a pass runs.
    rig.ib.place = {{130, "5"}};
    rig.ib.start(60);
    rig.ib.passUnderWay = true;
    CHECK(rig.irq130() == "5");
    REQUIRE(rig.fs.write("proc/irq/130/smp_affinity_list", "3"));
    Plan plan = rig.plan();
    CHECK(plan.pendingCount() == 0);
    auto done = rig.life.apply(plan, rig.knobs, rig.profile, "t1");
    REQUIRE(done);
    CHECK(rig.ib.told == 1);
    CHECK(rig.ib.banned == std::set<int>{130});
    REQUIRE(done->movedBefore.size() == 1);  // the pass under way put it back on 5 before the rescan
    CHECK(done->movedBefore[0].found == "5");
    CHECK(rig.irq130() == "3");
    rig.clock.sleepFor(10);
    CHECK(rig.irq130() == "3");
    REQUIRE(revertAll(rig.knobs, rig.store));
}

TEST_CASE("an irqbalance whose ban never holds: the apply puts the IRQ back a bounded number of times and says so", "[apply][irq]") {
    LifecycleRig rig;
    rig.ib.hostile = true;
    rig.ib.interval = 0.25;  // a pass between any two looks
    rig.ib.place = {{130, "5"}};
    rig.ib.start(60);
    rig.ib.passUnderWay = true;
    REQUIRE(rig.fs.write("proc/irq/130/smp_affinity_list", "3"));
    Plan plan = rig.plan();
    auto done = rig.life.apply(plan, rig.knobs, rig.profile, "t1");
    REQUIRE(done);
    CHECK(done->movedBefore.size() == 1);
    CHECK(done->movedAfter.size() == static_cast<size_t>(kMovedLooks));
    CHECK(done->stillMoving);
    CHECK(rig.irq130() == "3");  // as put back at the last look
    CHECK(rig.saidHas("warning: still being moved at the last of 3 looks after the writes"));
    CHECK(rig.saidHas("enp3s0 irq 130 enp3s0 was moved from 3 to 5 after the write, by irqbalance (pid 941), before the rescan that bans it: put back"));
    REQUIRE(revertAll(rig.knobs, rig.store));
}

TEST_CASE("without irqbalance an apply neither waits nor looks again", "[apply][irq]") {
    LifecycleRig rig;
    std::filesystem::remove_all(rig.tree.path() / "proc/941");
    Plan plan = rig.plan();
    REQUIRE(plan.pendingCount() == 1);
    auto done = rig.life.apply(plan, rig.knobs, rig.profile, "t1");
    REQUIRE(done);
    CHECK(rig.clock.t == 100);
    CHECK(done->report.written.size() == 1);
    CHECK(done->movedBefore.empty());
    CHECK(rig.said.empty());
    CHECK(rig.irq130() == "3");
}
