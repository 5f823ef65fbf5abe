// The knob families' conformance suite: every family of the registry, with the fixture it supplies
// (conformance.hpp), is checked for the same things: identity (key <-> path and id), plan ->
// apply -> verify -> revert to the byte-identical tree and driver state, idempotence (a second
// apply writes nothing), undo when a later write of the same apply fails, its journal entries
// read back with their keys by both journal readers, and refusal of its bad profile values with
// file:line:col and the key. A family is added to it by its fixture file, nothing else.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "../../support/driver_state.hpp"
#include "../../support/fake_threads.hpp"
#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "conformance.hpp"
#include "knobs/registry.hpp"
#include "profile/profile.hpp"

namespace rxtune::test {

namespace {

std::vector<FamilyFixture>& fixtures() {
    static std::vector<FamilyFixture> f;
    return f;
}

}  // namespace

FixtureRegistration::FixtureRegistration(FamilyFixture f) { fixtures().push_back(std::move(f)); }
const std::vector<FamilyFixture>& familyFixtures() { return fixtures(); }

void storyDevice(TempTree& tree) {
    auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
    for (auto& l : doc["links"])
        if (l["name"] == "enp2s0") {
            l["rings"] = {{"rx", 256}, {"rx_max", 1024}, {"tx", 256}, {"tx_max", 1024}};
            l["coalesce"] = {{"rx_usecs", 3}, {"adaptive_rx", false}};
        }
    tree.put("netlink.json", doc.dump());
    tree.put("proc/irq/45/enp2s0/.action", "");
    // Kept as its list ("0-19"): procfs prints it back the same, so the tree compares byte for byte.
    tree.put("proc/irq/45/smp_affinity_list", "0-19");
}

}  // namespace rxtune::test

using namespace rxtune;
using namespace rxtune::test;

namespace {

constexpr const char* kSentinel = "conformance-late-step";

// A tree whose write to the sentinel file fails: the late step of an apply, after every write of
// the plan before it.
class LateFailTree final : public FileTree {
public:
    using FileTree::FileTree;
    Result<void> write(const std::string& rel, const std::string& value) override {
        if (rel == kSentinel) return fail(EIO, "write", full(rel), "the conformance suite's late step");
        return FileTree::write(rel, value);
    }
    Result<std::unique_ptr<FileTree>> subtree(const std::string& rel) const override { return fail(ENOTSUP, "subtree", full(rel)); }
};

// A fixture's host, its fake driver and NAPI kthreads, and a journal store of its own.
struct ConformanceHost {
    explicit ConformanceHost(const FamilyFixture& f) : tree(f.host), edited(edit(f, tree)), fsys(tree.path().string()), nl(tree.path()), threads(tree) {}
    // The fixture's edits, before the fake driver reads netlink.json.
    static bool edit(const FamilyFixture& f, TempTree& t) {
        if (f.edit) f.edit(t);
        t.put(kSentinel, "before");
        return true;
    }
    Knobs knobs(FileTree& fs) { return Knobs(fs, Services().with<NetlinkSource>(&nl).with<NapiThreads>(&threads)); }
    // The tree and the drivers, with the fake kernel's NAPI kthreads brought up to date first.
    std::string state() {
        const auto links = nl.links().value();
        for (const auto& l : links) (void)threads.of(l.name);
        std::ostringstream out;
        for (const auto& [file, text] : test::contents(tree.path()))
            if (file.rfind("state/", 0) != 0) out << file << "=" << text << "\n";
        return out.str() + driverState(nl);
    }
    TempTree tree;
    bool edited;
    FileTree fsys;
    FakeNetlink nl;
    FakeThreads threads;
    JournalStore store{(tree.path() / "state").string()};
};

std::set<std::string> familiesWriting(const Plan& p) {
    std::set<std::string> out;
    for (const auto& s : p.settings)
        if (s.pending()) out.insert(s.key.family);
    return out;
}

std::string keyText(const KnobKey& k) {
    return k.family + "|" + k.device + "|" + k.name + "|" + std::to_string(k.queue) + "|" + std::to_string(k.tx) + "|" + std::to_string(k.cpu) +
           "|" + std::to_string(k.irq);
}

}  // namespace

TEST_CASE("every registered family supplies a conformance fixture, once", "[knobs][conformance]") {
    std::set<std::string> supplied;
    for (const auto& f : familyFixtures()) {
        CHECK(supplied.insert(f.family).second);
        CHECK(findFamily(f.family) != nullptr);  // no fixture of a family this build lacks
    }
    for (const KnobFamily* f : knobFamilies()) {
        INFO("knob family " << f->name() << " has no fixture in tests/unit/knobs/conformance/");
        CHECK(supplied.count(std::string(f->name())));
    }
}

TEST_CASE("conformance: identity, round trip, idempotence, undo, journal and refusals of every family", "[knobs][conformance]") {
    std::set<std::string> paths;
    for (const auto& fx : familyFixtures()) {
        const KnobFamily* family = findFamily(fx.family);
        REQUIRE(family);
        INFO("family " << fx.family);

        // Identity: each key's path and id give it back; no two keys of any family share a path.
        REQUIRE_FALSE(fx.keys.empty());
        for (const auto& k : fx.keys) {
            INFO(family->id(k) << " at " << family->path(k));
            CHECK(k.family == fx.family);
            CHECK(keyOfPath(family->path(k), family->id(k)) == k);
            CHECK(paths.insert(family->path(k)).second);
        }

        // Refusals: a clear, located error; nothing is written (the host is only read).
        REQUIRE_FALSE(fx.refused.empty());
        for (const auto& r : fx.refused) {
            INFO("refused profile:\n" << r.yaml);
            ConformanceHost h(fx);
            const std::string before = h.state();
            auto profile = loadProfileText(r.yaml, "bad.yaml", {});
            std::string message;
            if (!profile) {
                message = profile.error().message();
            } else {
                auto planned = preparePlan(*profile, h.fsys, h.nl);
                REQUIRE_FALSE(planned);
                message = planned.error().message();
            }
            INFO(message);
            CHECK(message.find(r.expect) != std::string::npos);
            CHECK(message.find("bad.yaml:") != std::string::npos);
            CHECK(h.state() == before);
        }

        if (!fx.appliedOnlyIn.empty()) {
            // Its backend is proven against the real kernel there (named, and the file exists).
            std::ifstream proof(std::string(std::getenv("RXTUNE_SOURCE")) + "/" + fx.appliedOnlyIn);
            CHECK(proof.good());
            continue;
        }

        const Profile profile = loadProfileText(fx.profile, fx.family + ".yaml", {}).value();
        {
            // Undo: the plan's writes, then a late step that fails; the host is as it was, and no
            // journal is left.
            ConformanceHost h(fx);
            const std::string before = h.state();
            Plan plan = preparePlan(profile, h.fsys, h.nl).value().plan;
            REQUIRE(familiesWriting(plan).count(fx.family));
            KnobKey late;
            late.name = kSentinel;
            plan.settings.push_back(makeSetting(fileFamily(), late, ValueKind::kWord, "before", "after", "the late step"));
            LateFailTree failing(h.tree.path().string());
            auto r = applyPlan(plan, h.knobs(failing), h.store, "t");
            REQUIRE_FALSE(r);
            INFO(r.error().message());
            CHECK(r.error().message().find("apply failed, this apply's writes were undone") == 0);
            CHECK(h.state() == before);
            CHECK_FALSE(h.store.load().value().has_value());
        }
        ConformanceHost h(fx);
        const std::string before = h.state();
        auto prepared = preparePlan(profile, h.fsys, h.nl);
        REQUIRE(prepared);
        const Plan& plan = prepared->plan;
        // Every setting the plan holds is a key its family gives back from the path and id.
        for (const auto& s : plan.settings) CHECK(keyOfPath(s.path, s.id) == s.key);
        auto applied = applyPlan(plan, h.knobs(h.fsys), h.store, "t1");
        REQUIRE(applied);
        std::set<std::string> wrote;
        for (const auto& s : applied->written) wrote.insert(s.key.family);
        CHECK(wrote.count(fx.family));

        // Idempotence: planned again, nothing of it pending, and a second apply writes nothing.
        auto again = preparePlan(profile, h.fsys, h.nl);
        REQUIRE(again);
        CHECK(again->plan.pendingCount() == 0);
        auto second = applyPlan(again->plan, h.knobs(h.fsys), h.store, "t2");
        REQUIRE(second);
        CHECK(second->written.empty());

        // Verify: in sync.
        auto journal = h.store.load().value();
        REQUIRE(journal);
        auto drift = verifyApplied(*journal, h.knobs(h.fsys));
        REQUIRE(drift);
        CHECK(drift->empty());

        // The journal: the family's entries with their keys, read the same by both readers.
        std::ifstream in(h.store.path());
        std::stringstream text;
        text << in.rdbuf();
        std::ifstream markIn(h.store.markPath());
        std::stringstream mark;
        mark << markIn.rdbuf();
        const std::string markText = mark.str();
        auto reference = parseJournalReference(text.str(), markIn ? std::optional<std::string_view>(markText) : std::nullopt, h.store.path());
        REQUIRE(reference);
        std::set<std::string> journaled, referenced;
        for (const auto& s : journal->applied)
            if (s.key.family == fx.family) journaled.insert(s.id + " " + keyText(s.key));
        for (const auto& s : reference->applied)
            if (s.key.family == fx.family) referenced.insert(s.id + " " + keyText(s.key));
        std::set<std::string> planned;
        for (const auto& s : plan.settings)
            if (s.key.family == fx.family) planned.insert(s.id + " " + keyText(s.key));
        CHECK(journaled == planned);
        CHECK(referenced == planned);
        size_t originals = 0;
        for (const auto& o : journal->originals) originals += o.key.family == fx.family;
        CHECK(originals > 0);

        // Revert: the tree and the drivers exactly as they were, the journal gone.
        auto reverted = revertAll(h.knobs(h.fsys), h.store);
        REQUIRE(reverted);
        CHECK(h.state() == before);
        CHECK_FALSE(h.store.load().value().has_value());
    }
}
