#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../support/fixture.hpp"
#include "apply/apply.hpp"
#include "planner/planner.hpp"

using namespace rxtune;

namespace {

std::vector<std::string> shipped() { return {std::getenv("RXTUNE_PROFILES")}; }

std::map<std::string, std::string> contents(const std::filesystem::path& root) {
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        if (!e.is_regular_file()) continue;
        std::ifstream in(e.path());
        std::stringstream ss;
        ss << in.rdbuf();
        out[std::filesystem::relative(e.path(), root).string()] = ss.str();
    }
    return out;
}

// A FileTree whose Nth write fails, as a vanished interface or a refusing kernel would.
class FailingTree : public FileTree {
public:
    FailingTree(std::string root, int failAt) : FileTree(std::move(root)), failAt_(failAt) {}
    Result<void> write(const std::string& rel, const std::string& value) override {
        if (++writes_ == failAt_) return fail(ENODEV, "write", full(rel));
        return FileTree::write(rel, value);
    }
    int writes() const { return writes_; }

private:
    int failAt_;
    int writes_ = 0;
};

// File-backed settings only: these plans have no XDP steering.
Knobs knobsOf(FileTree& fs) { return Knobs(fs, nullptr); }

struct Rig {
    test::TempTree tree{"story-20cpu-single-queue"};
    test::TempTree state{"vm-no-cpufreq"};  // any directory will do for the journal
    std::string stateDir = (state.path() / "state").string();

    Plan makePlan(const std::string& profile = "single-queue-gateway") {
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        auto snap = takeSnapshot(fs, nl, {}).value();
        auto prof = loadProfile(profile, shipped()).value();
        prof.steering.mode = SteeringMode::kRps;  // the shipped ones are mode auto; these tests pin the static shape
        return plan(prof, snap, {}).value();
    }
};

}  // namespace

TEST_CASE("apply writes what differs, a second apply writes nothing", "[apply]") {
    Rig rig;
    FailingTree fs(rig.tree.path().string(), -1);
    JournalStore store(rig.stateDir);
    auto p = rig.makePlan();
    REQUIRE(p.pendingCount() == 29);
    auto r = applyPlan(p, knobsOf(fs), store, "2026-11-30T00:00:00Z");
    REQUIRE(r);
    CHECK(r->written.size() == 29);
    CHECK(fs.writes() == 29);
    CHECK(fs.read("sys/class/net/enp2s0/queues/rx-0/rps_cpus").value() == "fffff");
    auto j = store.load().value();
    REQUIRE(j);
    CHECK(j->state == "applied");
    CHECK(j->originals.size() == 29);

    auto again = rig.makePlan();
    CHECK(again.pendingCount() == 0);
    auto r2 = applyPlan(again, knobsOf(fs), store, "2026-11-30T00:00:01Z");
    REQUIRE(r2);
    CHECK(r2->written.empty());
    CHECK(fs.writes() == 29);  // nothing written the second time
}

TEST_CASE("revert gives back a byte-identical tree, even after two profiles", "[apply]") {
    Rig rig;
    const auto before = contents(rig.tree.path());
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    REQUIRE(applyPlan(rig.makePlan("balanced"), knobsOf(fs), store, "t1"));
    REQUIRE(applyPlan(rig.makePlan("single-queue-gateway"), knobsOf(fs), store, "t2"));
    REQUIRE(applyPlan(rig.makePlan("latency"), knobsOf(fs), store, "t3"));
    CHECK(contents(rig.tree.path()) != before);
    auto r = revertAll(knobsOf(fs), store);
    REQUIRE(r);
    CHECK_FALSE(r->restored.empty());
    CHECK(contents(rig.tree.path()) == before);
    CHECK_FALSE(store.load().value().has_value());
    // Reverting again with no journal is a no-op.
    auto none = revertAll(knobsOf(fs), store);
    REQUIRE(none);
    CHECK(none->restored.empty());
}

TEST_CASE("verify finds drift", "[apply]") {
    Rig rig;
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    REQUIRE(applyPlan(rig.makePlan(), knobsOf(fs), store, "t"));
    auto j = store.load().value().value();
    CHECK(verifyApplied(j, knobsOf(fs)).value().empty());
    rig.tree.put("sys/class/net/enp2s0/queues/rx-0/rps_cpus", "00000\n");
    rig.tree.put("proc/sys/net/core/netdev_max_backlog", "1000\n");
    auto drift = verifyApplied(j, knobsOf(fs)).value();
    REQUIRE(drift.size() == 2);
    CHECK(drift[0].id == "sysctl net.core.netdev_max_backlog");
    CHECK(drift[0].actual == "1000");
    CHECK(drift[1].id == "enp2s0 rx-0 rps_cpus");
    CHECK(drift[1].desired == "fffff");
}

TEST_CASE("a failed write rolls back this apply's writes and names the knob", "[apply]") {
    for (int failAt : {1, 2, 8, 15, 29}) {
        INFO("failing write " << failAt);
        Rig rig;
        const auto before = contents(rig.tree.path());
        FailingTree fs(rig.tree.path().string(), failAt);
        JournalStore store(rig.stateDir);
        auto p = rig.makePlan();
        auto r = applyPlan(p, knobsOf(fs), store, "t");
        REQUIRE_FALSE(r);
        const std::string msg = r.error().message();
        INFO(msg);
        CHECK(msg.find("No such device") != std::string::npos);
        CHECK(msg.find(rig.tree.path().string()) != std::string::npos);
        CHECK(contents(rig.tree.path()) == before);
        CHECK_FALSE(store.load().value().has_value());  // no journal when nothing stayed changed
    }
}

TEST_CASE("a failed apply after an earlier one keeps the earlier journal", "[apply]") {
    Rig rig;
    FileTree ok(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    REQUIRE(applyPlan(rig.makePlan("balanced"), knobsOf(ok), store, "t1"));
    const auto afterFirst = contents(rig.tree.path());
    FailingTree bad(rig.tree.path().string(), 3);
    REQUIRE_FALSE(applyPlan(rig.makePlan("single-queue-gateway"), knobsOf(bad), store, "t2"));
    CHECK(contents(rig.tree.path()) == afterFirst);
    auto j = store.load().value();
    REQUIRE(j);
    CHECK(j->profile == "balanced");
    CHECK(j->state == "applied");
}

TEST_CASE("an interrupted apply's journal keeps the true originals", "[apply]") {
    Rig rig;
    const auto before = contents(rig.tree.path());
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    // Simulate a crash after the journal was written and half the writes done.
    auto p = rig.makePlan();
    Journal j;
    j.state = "applying";
    j.profile = p.profile;
    for (const auto& s : p.settings) j.originals.push_back({s.id, s.path, s.kind, fs.read(s.path).value()});
    REQUIRE(store.save(j));
    for (size_t i = 0; i < p.settings.size() / 2; ++i) REQUIRE(fs.write(p.settings[i].path, p.settings[i].desired));
    // The next apply adopts the journal without overwriting originals with changed values.
    auto r = applyPlan(rig.makePlan(), knobsOf(fs), store, "t");
    REQUIRE(r);
    CHECK(r->resumedInterrupted);
    REQUIRE(revertAll(knobsOf(fs), store));
    CHECK(contents(rig.tree.path()) == before);
}

TEST_CASE("applying a profile that sets less restores what only the earlier one set", "[apply]") {
    Rig rig;
    const auto before = contents(rig.tree.path());
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    REQUIRE(applyPlan(rig.makePlan("throughput"), knobsOf(fs), store, "t1"));
    CHECK(fs.read("proc/sys/net/core/netdev_budget").value() == "600");
    // balanced sets no budget, no socket buffers, no governor: those go back to the originals.
    auto r = applyPlan(rig.makePlan("balanced"), knobsOf(fs), store, "t2");
    REQUIRE(r);
    CHECK(fs.read("proc/sys/net/core/netdev_budget").value() == "300\n");
    CHECK(fs.read("proc/sys/net/core/rmem_max").value() == "212992\n");
    CHECK(fs.read("sys/devices/system/cpu/cpu5/cpufreq/scaling_governor").value() == "powersave\n");
    bool restoredSaid = false;
    for (const auto& s : r->written) restoredSaid = restoredSaid || s.why.find("original restored") != std::string::npos;
    CHECK(restoredSaid);
    CHECK(rig.makePlan("balanced").pendingCount() == 0);
    auto j = store.load().value().value();
    CHECK(verifyApplied(j, knobsOf(fs)).value().empty());
    for (const auto& o : j.originals) CHECK(o.path.find("netdev_budget") == std::string::npos);
    REQUIRE(revertAll(knobsOf(fs), store));
    CHECK(contents(rig.tree.path()) == before);
}
