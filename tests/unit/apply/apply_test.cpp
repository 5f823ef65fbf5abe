#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include "../support/families.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../support/fake_threads.hpp"
#include "../support/fixture.hpp"
#include "apply/prepare.hpp"
#include "apply/apply.hpp"
#include "knobs/registry.hpp"
#include "inventory/snapshot.hpp"
#include "core/paths.hpp"
#include "core/text.hpp"
#include "planner/planner.hpp"

using namespace rxtune;

namespace {



// A FileTree whose Nth write fails, as a vanished interface or a refusing kernel would.
class FailingTree : public FileTree {
public:
    FailingTree(std::string root, int failAt) : FileTree(std::move(root)), failAt_(failAt) {}
    Result<void> write(const std::string& rel, const std::string& value) override {
        if (++writes_ == failAt_) return fail(ENODEV, "write", full(rel));
        return FileTree::write(rel, value);
    }
    // Every write passes through here: apply gets no device directory to write through instead.
    Result<std::unique_ptr<FileTree>> subtree(const std::string& rel) const override { return fail(ENOTSUP, "subtree", full(rel)); }
    int writes() const { return writes_; }

private:
    int failAt_;
    int writes_ = 0;
};

// A FileTree whose Nth write lands and then fails, as a read-back that does not match or an
// after-effect that fails would (the e1000e IRQ on Debian 12: the affinity written, the
// effective CPU not following yet). From the Nth on, with `wedged`, every write fails before
// landing (a device that stopped answering: the undo cannot go through either).
class LandingFailTree : public FileTree {
public:
    LandingFailTree(std::string root, int failAt, bool wedged = false) : FileTree(std::move(root)), failAt_(failAt), wedged_(wedged) {}
    Result<void> write(const std::string& rel, const std::string& value) override {
        ++writes_;
        if (wedged_ && failAt_ > 0 && writes_ > failAt_) return fail(EIO, "write", full(rel), "wedged");
        if (auto w = FileTree::write(rel, value); !w) return w;
        if (writes_ == failAt_) return fail(EIO, "read back", full(rel), "the kernel shows something else");
        return {};
    }
    Result<std::unique_ptr<FileTree>> subtree(const std::string& rel) const override { return fail(ENOTSUP, "subtree", full(rel)); }

private:
    int failAt_;
    bool wedged_;
    int writes_ = 0;
};

// The device is deleted right after the first write to it lands, as `ip link del` would do
// mid-apply: its directory goes, and every later write to it finds nothing.
class VanishingTree : public FileTree {
public:
    VanishingTree(std::string root, std::string device) : FileTree(std::move(root)), device_(std::move(device)) {}
    Result<void> write(const std::string& rel, const std::string& value) override {
        auto w = FileTree::write(rel, value);
        if (w && rel.find("class/net/" + device_ + "/") != std::string::npos && !gone_) {
            std::filesystem::remove_all(full("sys/class/net/" + device_));
            gone_ = true;
        }
        return w;
    }
    Result<std::unique_ptr<FileTree>> subtree(const std::string& rel) const override { return fail(ENOTSUP, "subtree", full(rel)); }
    bool gone() const { return gone_; }

private:
    std::string device_;
    bool gone_ = false;
};

// File-backed settings only: these plans have no XDP steering.
Knobs knobsOf(FileTree& fs) { return Knobs(fs); }

// The profile most tests apply, fixed here so that a change to a shipped profile moves none of
// their counts. On the story's host it plans 29 writes: its 5 sysctls, the RFS table
// (rps_sock_flow_entries) and rps_default_mask, enp2s0's rx-0 rps_cpus and rps_flow_cnt, and the
// governor of each of the 20 CPUs (XPS is skipped: one TX queue).
constexpr const char* kTestProfile = R"(match:
  verdict: single-queue
steering:
  mode: rps
  cpus: all
  rfs:
    flow_entries: 32768
sysctl:
  net.core.netdev_max_backlog: ">= 300000"
  net.core.rmem_max: ">= 268435456"
  net.core.wmem_max: ">= 268435456"
  net.ipv4.tcp_rmem: ">= 4096 131072 268435456"
  net.ipv4.tcp_wmem: ">= 4096 16384 268435456"
cpu:
  governor: [performance]
)";
constexpr size_t kTestProfileWrites = 29;

struct Rig {
    test::TempTree tree{"story-20cpu-single-queue"};
    test::TempTree state{"vm-no-cpufreq"};  // any directory will do for the journal
    std::string stateDir = (state.path() / "state").string();

    // profile: a shipped one by name; empty: kTestProfile.
    Plan makePlan(const std::string& profile = "") {
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        auto snap = takeSnapshot(fs, nl, {}).value();
        auto prof = profile.empty() ? loadProfileText(kTestProfile, "apply-test.yaml", {}).value()
                                    : loadProfile(profile, test::shippedProfiles()).value();
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
    REQUIRE(p.pendingCount() == kTestProfileWrites);
    auto r = applyPlan(p, knobsOf(fs), store, "2026-11-30T00:00:00Z");
    REQUIRE(r);
    CHECK(r->written.size() == kTestProfileWrites);
    CHECK(fs.writes() == kTestProfileWrites);
    CHECK(fs.read("sys/class/net/enp2s0/queues/rx-0/rps_cpus").value() == "fffff");
    auto j = store.load().value();
    REQUIRE(j);
    CHECK(j->state == "applied");
    CHECK(j->originals.size() == kTestProfileWrites);

    auto again = rig.makePlan();
    CHECK(again.pendingCount() == 0);
    auto r2 = applyPlan(again, knobsOf(fs), store, "2026-11-30T00:00:01Z");
    REQUIRE(r2);
    CHECK(r2->written.empty());
    CHECK(fs.writes() == kTestProfileWrites);  // nothing written the second time
}

TEST_CASE("a device's knobs are written through its directory; a failure there rolls back and names the path", "[apply]") {
    namespace fsys = std::filesystem;
    Rig rig;
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    auto p = rig.makePlan();
    // The plan's last device knob cannot be written (a directory where the file was).
    auto last = std::find_if(p.settings.rbegin(), p.settings.rend(),
                             [](const Setting& s) { return s.pending() && s.path.starts_with("sys/class/net/"); });
    REQUIRE(last != p.settings.rend());
    const auto victim = rig.tree.path() / last->path;
    fsys::remove(victim);
    fsys::create_directory(victim);
    const auto before = test::contents(rig.tree.path());
    auto r = applyPlan(p, knobsOf(fs), store, "t");
    REQUIRE_FALSE(r);
    INFO(r.error().message());
    CHECK(r.error().message().find(victim.string()) != std::string::npos);  // the full path, as from the root
    CHECK(r.error().message().find(last->id) != std::string::npos);
    CHECK(test::contents(rig.tree.path()) == before);
    CHECK_FALSE(store.load().value().has_value());
    // Put back, the same plan applies through the device's directory.
    fsys::remove(victim);
    rig.tree.put(last->path, last->raw.empty() ? last->current + "\n" : last->raw);
    auto ok = applyPlan(p, knobsOf(fs), store, "t");
    REQUIRE(ok);
    CHECK(ok->written.size() == p.pendingCount());
    CHECK(trimmed(fs.read(last->path).value()) == last->desired);
}

TEST_CASE("revert gives back a byte-identical tree, even after two profiles", "[apply]") {
    Rig rig;
    const auto before = test::contents(rig.tree.path());
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    REQUIRE(applyPlan(rig.makePlan("balanced"), knobsOf(fs), store, "t1"));
    REQUIRE(applyPlan(rig.makePlan(), knobsOf(fs), store, "t2"));
    REQUIRE(applyPlan(rig.makePlan("latency"), knobsOf(fs), store, "t3"));
    CHECK(test::contents(rig.tree.path()) != before);
    auto r = revertAll(knobsOf(fs), store);
    REQUIRE(r);
    CHECK_FALSE(r->restored.empty());
    CHECK(test::contents(rig.tree.path()) == before);
    CHECK_FALSE(store.load().value().has_value());
    // Reverting again with no journal is a no-op.
    auto none = revertAll(knobsOf(fs), store);
    REQUIRE(none);
    CHECK(none->restored.empty());
}

TEST_CASE("apply tells values set the first time or newly planned from drift put back", "[apply]") {
    Rig rig;
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    auto first = applyPlan(rig.makePlan(), knobsOf(fs), store, "t1").value();
    CHECK(first.newValues.size() == kTestProfileWrites);  // nothing was applied before
    // Someone clears a mask: put back, and not new.
    rig.tree.put("sys/class/net/enp2s0/queues/rx-0/rps_cpus", "00000\n");
    auto drift = applyPlan(rig.makePlan(), knobsOf(fs), store, "t2").value();
    REQUIRE(drift.written.size() == 1);
    CHECK(drift.newValues.empty());
    // The plan now wants another mask: new, not drift.
    Plan changed = rig.makePlan();
    for (auto& s : changed.settings)
        if (s.id == "enp2s0 rx-0 rps_cpus") s.desired = "0000f";
    auto replanned = applyPlan(changed, knobsOf(fs), store, "t3").value();
    REQUIRE(replanned.written.size() == 1);
    CHECK(replanned.newValues == std::set<std::string>{"enp2s0 rx-0 rps_cpus"});
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
    for (int failAt : {1, 2, 8, 15, static_cast<int>(kTestProfileWrites)}) {
        INFO("failing write " << failAt);
        Rig rig;
        const auto before = test::contents(rig.tree.path());
        FailingTree fs(rig.tree.path().string(), failAt);
        JournalStore store(rig.stateDir);
        auto p = rig.makePlan();
        auto r = applyPlan(p, knobsOf(fs), store, "t");
        REQUIRE_FALSE(r);
        const std::string msg = r.error().message();
        INFO(msg);
        CHECK(msg.find("No such device") != std::string::npos);
        CHECK(msg.find(rig.tree.path().string()) != std::string::npos);
        CHECK(test::contents(rig.tree.path()) == before);
        CHECK_FALSE(store.load().value().has_value());  // no journal when nothing stayed changed
    }
}

TEST_CASE("a failed apply after an earlier one keeps the earlier journal", "[apply]") {
    Rig rig;
    FileTree ok(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    REQUIRE(applyPlan(rig.makePlan("balanced"), knobsOf(ok), store, "t1"));
    const auto afterFirst = test::contents(rig.tree.path());
    FailingTree bad(rig.tree.path().string(), 3);
    REQUIRE_FALSE(applyPlan(rig.makePlan(), knobsOf(bad), store, "t2"));
    CHECK(test::contents(rig.tree.path()) == afterFirst);
    auto j = store.load().value();
    REQUIRE(j);
    CHECK(j->profile == "balanced");
    CHECK(j->state == "applied");
}

TEST_CASE("an interrupted apply's journal keeps the true originals", "[apply]") {
    Rig rig;
    const auto before = test::contents(rig.tree.path());
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    // Simulate a crash after the journal was written and half the writes done.
    auto p = rig.makePlan();
    Journal j;
    j.state = "applying";
    j.profile = p.profile;
    for (const auto& s : p.settings) j.originals.push_back({s.id, s.path, s.kind, fs.read(s.path).value(), s.key});
    REQUIRE(store.save(j));
    for (size_t i = 0; i < p.settings.size() / 2; ++i) REQUIRE(fs.write(p.settings[i].path, p.settings[i].desired));
    // The next apply adopts the journal without overwriting originals with changed values.
    auto r = applyPlan(rig.makePlan(), knobsOf(fs), store, "t");
    REQUIRE(r);
    CHECK(r->resumedInterrupted);
    REQUIRE(revertAll(knobsOf(fs), store));
    CHECK(test::contents(rig.tree.path()) == before);
}

TEST_CASE("applying a profile that sets less restores what only the earlier one set", "[apply]") {
    Rig rig;
    const auto before = test::contents(rig.tree.path());
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
    CHECK(test::contents(rig.tree.path()) == before);
}

TEST_CASE("an event's apply answers for its devices only", "[apply]") {
    Rig rig;
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    const Plan full = rig.makePlan();
    REQUIRE(applyPlan(full, knobsOf(fs), store, "t1"));
    const auto steered = test::contents(rig.tree.path());
    // An event about another device ("veth7", not in the plan): its plan holds the host-wide
    // settings only. enp2s0's knobs are not its business: none is put back, verify keeps them.
    Plan hostOnly = full;
    std::erase_if(hostOnly.settings, [](const Setting& s) { return !s.key.device.empty(); });
    hostOnly.interfaces.clear();
    for (auto& s : hostOnly.settings) s.current = s.desired;  // as planned now: in place
    const std::set<std::string> other{"veth7"};
    auto r = applyPlan(hostOnly, knobsOf(fs), store, "t2", &other);
    REQUIRE(r);
    CHECK(r->written.empty());
    CHECK(test::contents(rig.tree.path()) == steered);
    auto j = store.load().value().value();
    CHECK(j.applied.size() == full.settings.size());
    CHECK(verifyApplied(j, knobsOf(fs)).value().empty());
    // The same plan for the whole host is a profile that no longer steers enp2s0: put back.
    const std::set<std::string> nic{"enp2s0"};
    auto back = applyPlan(hostOnly, knobsOf(fs), store, "t3", &nic);
    REQUIRE(back);
    CHECK_FALSE(back->written.empty());
    CHECK(fs.read("sys/class/net/enp2s0/queues/rx-0/rps_cpus").value() != "fffff");
    const Journal after = store.load().value().value();
    for (const auto& o : after.originals) CHECK(o.key.device != "enp2s0");
}

TEST_CASE("one durable journal save per apply; a drift fix needs none, and a lost mark is an interrupted apply", "[apply]") {
    Rig rig;
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    namespace fsys = std::filesystem;
    auto inode = [&] {
        struct stat st{};
        return ::stat(store.path().c_str(), &st) == 0 ? st.st_ino : 0;
    };
    REQUIRE(applyPlan(rig.makePlan(), knobsOf(fs), store, "t1"));
    const auto first = inode();
    REQUIRE(first != 0);
    REQUIRE(fsys::exists(store.markPath()));
    auto j1 = store.load().value().value();
    CHECK(j1.state == "applied");
    CHECK(j1.appliedAt == "t1");
    // Someone changes one knob; putting it right writes no journal (its original is on disk): only
    // the completion mark moves.
    rig.tree.put("sys/class/net/enp2s0/queues/rx-0/rps_cpus", "00000\n");
    auto fix = applyPlan(rig.makePlan(), knobsOf(fs), store, "t2");
    REQUIRE(fix);
    CHECK(fix->written.size() == 1);
    CHECK(inode() == first);
    auto j2 = store.load().value().value();
    CHECK(j2.state == "applied");
    CHECK(j2.appliedAt == "t2");
    CHECK(j2.originals.size() == j1.originals.size());
    // A mark lost or torn (it is never fsynced): the journal reads as an interrupted apply, with
    // every original still there, and the next apply adopts it.
    std::ofstream(store.markPath()) << "{\"genera";
    auto torn = store.load().value().value();
    CHECK(torn.state == "applying");
    CHECK(torn.originals.size() == j1.originals.size());
    fsys::remove(store.markPath());
    CHECK(store.load().value()->state == "applying");
    auto adopt = applyPlan(rig.makePlan(), knobsOf(fs), store, "t3");
    REQUIRE(adopt);
    CHECK(adopt->resumedInterrupted);
    CHECK(store.load().value()->state == "applied");
    REQUIRE(revertAll(knobsOf(fs), store));
    CHECK_FALSE(fsys::exists(store.markPath()));
}

namespace {

// Counts the reads apply makes of each kind of knob (the snapshot's are made on another tree).
class CountingTree : public FileTree {
public:
    using FileTree::FileTree;
    Result<std::string> read(const std::string& rel) const override {
        for (const char* k : {"rps_cpus", "rps_flow_cnt", "xps_cpus"})
            if (rel.ends_with(std::string("/") + k)) ++reads_[k];
        return FileTree::read(rel);
    }
    // Every read-back passes through here, not through a device directory opened aside.
    Result<std::unique_ptr<FileTree>> subtree(const std::string& rel) const override { return fail(ENOTSUP, "subtree", full(rel)); }
    int reads(const std::string& k) const { return reads_.count(k) ? reads_.at(k) : 0; }

private:
    mutable std::map<std::string, int> reads_;
};

}  // namespace

TEST_CASE("apply reads back only what the kernel could have stored otherwise", "[apply]") {
    SECTION("no isolated CPUs: flow counts and RPS masks are stored as written") {
        Rig rig;
        CountingTree fs(rig.tree.path().string());
        JournalStore store(rig.stateDir);
        auto p = rig.makePlan();
        REQUIRE(p.rpsDropped);
        REQUIRE(p.rpsDropped->empty());
        REQUIRE(applyPlan(p, knobsOf(fs), store, "t"));
        CHECK(fs.reads("rps_flow_cnt") == 0);
        CHECK(fs.reads("rps_cpus") == 0);
        CHECK(fs.read("sys/class/net/enp2s0/queues/rx-0/rps_flow_cnt").value() != "0");
    }
    SECTION("isolated CPUs: a mask that names one is read back, since the kernel may leave it out") {
        test::TempTree tree{"isolated-cpus-netns"};
        test::TempTree state{"vm-no-cpufreq"};
        FileTree plain(tree.path().string());
        auto host = readTopology(plain).value();
        Plan p;
        p.profile = "t";
        p.rpsDropped = host.isolated | host.nohzFull;
        CHECK(p.rpsDropped->toList() == "2-3");
        // One mask with an isolated CPU in it, one without: only the first is read back.
        auto q = [](int i) {
            KnobKey k{"queue", "veth0", "rps_cpus"};
            k.queue = i;
            return k;
        };
        p.settings.push_back(makeSetting(test::family("queue"), q(1), ValueKind::kCpuMask, "0", "c", "isolated CPUs 2-3"));
        p.settings.push_back(makeSetting(test::family("queue"), q(2), ValueKind::kCpuMask, "0", "3", "housekeeping CPUs 0-1"));
        CountingTree fs(tree.path().string());
        JournalStore store((state.path() / "state").string());
        REQUIRE(applyPlan(p, knobsOf(fs), store, "t"));
        // Both masks are read once as originals (the plan carries no raw bytes), and the isolated one
        // once more, back.
        CHECK(fs.reads("rps_cpus") == 3);
    }
}

TEST_CASE("a write that lands and then fails is undone with the rest; no journal is left when all is back", "[apply]") {
    for (int failAt : {1, 2, 8, 15, static_cast<int>(kTestProfileWrites)}) {
        INFO("write " << failAt << " lands, then fails");
        Rig rig;
        const auto before = test::contents(rig.tree.path());
        LandingFailTree fs(rig.tree.path().string(), failAt);
        JournalStore store(rig.stateDir);
        auto r = applyPlan(rig.makePlan(), knobsOf(fs), store, "t");
        REQUIRE_FALSE(r);
        const std::string msg = r.error().message();
        INFO(msg);
        CHECK(msg.find("apply failed, this apply's writes were undone") == 0);
        CHECK(msg.find("the kernel shows something else") != std::string::npos);
        CHECK(test::contents(rig.tree.path()) == before);  // the failed write too
        CHECK_FALSE(store.load().value().has_value());
    }
}

TEST_CASE("an undo that fails too keeps the journal, and revert puts every original back", "[apply]") {
    for (int failAt : {1, 8, static_cast<int>(kTestProfileWrites)}) {
        INFO("write " << failAt << " lands, then fails, and every write after it fails");
        Rig rig;
        const auto before = test::contents(rig.tree.path());
        LandingFailTree fs(rig.tree.path().string(), failAt, true);
        JournalStore store(rig.stateDir);
        auto r = applyPlan(rig.makePlan(), knobsOf(fs), store, "t");
        REQUIRE_FALSE(r);
        const std::string msg = r.error().message();
        INFO(msg);
        CHECK(msg.find("apply failed and could not undo all of its writes: the journal " + store.path() + " keeps their originals") == 0);
        CHECK(msg.find("rollback also failed") != std::string::npos);
        CHECK(test::contents(rig.tree.path()) != before);
        auto j = store.load().value();
        REQUIRE(j);
        CHECK(j->state == "applying");
        // The device answers again: revert restores the host exactly.
        FileTree ok(rig.tree.path().string());
        auto back = revertAll(knobsOf(ok), store);
        REQUIRE(back);
        CHECK(test::contents(rig.tree.path()) == before);
        CHECK_FALSE(store.load().value().has_value());
    }
}

TEST_CASE("a device deleted mid-apply: the other writes undone, nothing kept for the device that is gone", "[apply]") {
    Rig rig;
    auto others = [](std::map<std::string, std::string> m) {  // the host but the deleted device
        std::erase_if(m, [](const auto& kv) { return kv.first.find("class/net/enp2s0/") != std::string::npos; });
        return m;
    };
    const auto before = others(test::contents(rig.tree.path()));
    VanishingTree fs(rig.tree.path().string(), "enp2s0");
    JournalStore store(rig.stateDir);
    auto r = applyPlan(rig.makePlan(), knobsOf(fs), store, "t");
    REQUIRE(fs.gone());
    REQUIRE_FALSE(r);
    const std::string msg = r.error().message();
    INFO(msg);
    CHECK(msg.find("apply failed, this apply's writes were undone") == 0);
    CHECK(msg.find("enp2s0") != std::string::npos);
    CHECK(msg.find("rollback also failed") == std::string::npos);
    CHECK(others(test::contents(rig.tree.path())) == before);
    CHECK_FALSE(store.load().value().has_value());  // no original kept for a device that cannot come back
}

TEST_CASE("a driver's failure late in an apply, and a kthread's, undo every write before them", "[apply]") {
    std::set<std::string> undone;  // families with a write made, then undone, below
    auto pendingFamilies = [](const Plan& p) {
        std::set<std::string> out;
        for (const auto& s : p.settings)
            if (s.pending()) out.insert(s.key.family);
        return out;
    };
    {
        // RPS, sysctls, the default mask, governors, the RX IRQ, deferral, rings and coalescing on
        // the story's host; a late step fails: the driver takes adaptive RX, then fails its reset.
        test::TempTree tree{"story-20cpu-single-queue"};
        auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
        for (auto& l : doc["links"])
            if (l["name"] == "enp2s0") {
                l["rings"] = {{"rx", 256}, {"rx_max", 1024}, {"tx", 256}, {"tx_max", 1024}};
                l["coalesce"] = {{"rx_usecs", 3}, {"adaptive_rx", false}};
            }
        tree.put("netlink.json", doc.dump());
        tree.put("proc/irq/45/enp2s0/.action", "");  // the IRQ's owner, as /proc/irq/N/<action> shows it
        // The IRQ's original is kept as its list ("0-19"; procfs prints it back the same): the file
        // as this tree's writes leave it, so that the tree compares byte for byte.
        tree.put("proc/irq/45/smp_affinity_list", "0-19");
        test::TempTree state{"vm-no-cpufreq"};
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        const auto profile = loadProfileText(std::string(kTestProfile) +
                                                 "irq:\n  cpus: '5'\nnic:\n  rings: {rx: max, tx: max}\n  gro_flush_timeout: 20000\n"
                                                 "  napi_defer_hard_irqs: 10\n  coalesce: {rx_usecs: 50, adaptive_rx: true}\n",
                                             "t.yaml", {})
                                 .value();
        const Plan p = preparePlan(profile, fs, nl).value().plan;
        const auto families = pendingFamilies(p);
        for (std::string f : {"sysctl", "rps_default_mask", "queue", "governor", "irq", "napi_defer", "rings", "coalesce"})
            REQUIRE(families.count(f));
        const auto before = test::contents(tree.path());
        nl.failEthtoolSetAt = 4;  // rings rx and tx, coalescing rx_usecs, then adaptive_rx
        JournalStore store((state.path() / "state").string());
        auto r = applyPlan(p, Knobs(fs, Services().with<NetlinkSource>(&nl)), store, "t");
        REQUIRE_FALSE(r);
        INFO(r.error().message());
        CHECK(r.error().message().find("apply failed, this apply's writes were undone") == 0);
        CHECK(r.error().message().find("enp2s0 coalesce adaptive_rx") != std::string::npos);
        CHECK(test::contents(tree.path()) == before);
        CHECK(nl.ethtoolValue("rings", "enp2s0", "rx") == 256);
        CHECK(nl.ethtoolValue("rings", "enp2s0", "tx") == 256);
        const auto coalesce = nl.ethtoolGet({"coalesce", 0, 0, 0, {}}, "enp2s0").value().values;
        CHECK(coalesce.at("rx_usecs") == 3);
        CHECK(coalesce.at("adaptive_rx") == 0);
        CHECK_FALSE(store.load().value().has_value());
        undone.insert(families.begin(), families.end());
    }
    {
        // Threaded NAPI: `threaded` is written, then its kthread refuses the CPUs it is given.
        test::TempTree tree{"story-20cpu-single-queue"};
        test::TempTree state{"vm-no-cpufreq"};
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        test::FakeThreads threads(tree);
        const Plan p = preparePlan(loadProfileText("steering:\n  mode: napi\n", "t.yaml", {}).value(), fs, nl).value().plan;
        REQUIRE(pendingFamilies(p) == std::set<std::string>{"napi"});
        const auto before = test::contents(tree.path());
        threads.failWith_ = true;
        JournalStore store((state.path() / "state").string());
        REQUIRE_FALSE(applyPlan(p, Knobs(fs, Services().with<NapiThreads>(&threads)), store, "t"));
        CHECK(threads.of("enp2s0").value().empty());  // threaded is off again: its kthread is gone
        CHECK(test::contents(tree.path()) == before);
        CHECK_FALSE(store.load().value().has_value());
        undone.insert("napi");
    }
    // Every family's undo after a later failure, each on its own: the conformance suite
    // (tests/unit/knobs/conformance/), which iterates the registry.
    CHECK(undone.count("napi"));
}

TEST_CASE("a journal is applied to and reverted in the network namespace it was written in, or not at all", "[apply]") {
    namespace fsys = std::filesystem;
    Rig rig;
    FileTree fs(rig.tree.path().string());
    JournalStore store(rig.stateDir);
    const fsys::path ns = rig.tree.path() / "proc" / "self" / "ns";
    fsys::create_directories(ns);
    auto setNetns = [&](const std::string& id) {
        fsys::remove(ns / "net");
        fsys::create_symlink(id, ns / "net");
    };
    const std::string rps = "sys/class/net/enp2s0/queues/rx-0/rps_cpus";
    const std::string original = fs.read(rps).value();
    setNetns("net:[4026532288]");
    REQUIRE(applyPlan(rig.makePlan(), knobsOf(fs), store, "2026-12-03T00:00:00Z"));
    REQUIRE(store.load().value()->netns == "net:[4026532288]");
    const std::string text = fs.read(rps).value();
    CHECK(text != original);

    // Another namespace: revert and apply refuse, naming both, and change nothing.
    setNetns("net:[4026531840]");
    auto r = revertAll(knobsOf(fs), store);
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("the journal was written in network namespace net:[4026532288], and this is net:[4026531840]") !=
          std::string::npos);
    CHECK(r.error().message().find("ip netns exec NAME rxtune revert") != std::string::npos);
    CHECK(fs.read(rps).value() == text);
    REQUIRE(store.load().value());
    auto a = applyPlan(rig.makePlan(), knobsOf(fs), store, "2026-12-03T00:00:01Z");
    REQUIRE_FALSE(a);
    CHECK(a.error().message().find("rxtune apply") != std::string::npos);

    // Back in its own: the exact original.
    setNetns("net:[4026532288]");
    REQUIRE(revertAll(knobsOf(fs), store));
    CHECK(fs.read(rps).value() == original);

    // A journal of an earlier release (no namespace) is reverted anywhere, as it was.
    fsys::remove(ns / "net");
    REQUIRE(applyPlan(rig.makePlan(), knobsOf(fs), store, "2026-12-03T00:00:02Z"));
    CHECK(store.load().value()->netns.empty());
    {
        std::ifstream in(store.path());
        const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK(written.find("\"applied_at\"") != std::string::npos);
        CHECK(written.find("netns") == std::string::npos);  // written as before
    }
    setNetns("net:[4026531840]");
    REQUIRE(revertAll(knobsOf(fs), store));
    CHECK(fs.read(rps).value() == original);
}
