#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "state/journal.hpp"
#include "../support/temp_dir.hpp"

using namespace rxtune;

namespace {

using test::TempDir;

}  // namespace

TEST_CASE("the journal round-trips every byte of its values, and is JSON", "[journal]") {
    TempDir dir("rxtune-journal");
    JournalStore store(dir.path.string());
    Journal j;
    j.state = "applying";
    j.generation = 1796061762000000123ull;
    j.pid = 4242;
    j.profile = "gw \"edge\"";
    j.appliedAt = "2026-11-30T18:00:00Z";
    // What sysfs and procfs hand back: newlines, tabs, commas, quotes, backslashes, a control
    // byte, and UTF-8 (an interface alias, say).
    const std::vector<std::string> values = {"00000000,00000003\n", "4096\t131072\t6291456\n", "a\"b\\c", std::string("x\x01y", 3),
                                             "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", ""};
    for (size_t i = 0; i < values.size(); ++i) {
        j.originals.push_back({"k" + std::to_string(i), "sys/class/net/e" + std::to_string(i) + "/queues/rx-0/rps_cpus", ValueKind::kCpuMask, values[i], {}});
        Setting s;
        s.id = "k" + std::to_string(i);
        s.path = j.originals.back().path;
        s.kind = ValueKind::kCpuMask;
        s.desired = values[i];
        j.applied.push_back(s);
    }
    REQUIRE(store.save(j));
    auto back = store.load();
    REQUIRE(back);
    REQUIRE(back->has_value());
    const Journal& r = **back;
    CHECK(r.state == "applying");
    CHECK(r.generation == j.generation);
    CHECK(r.pid == 4242);
    CHECK(r.profile == j.profile);
    CHECK(r.appliedAt == j.appliedAt);
    REQUIRE(r.originals.size() == values.size());
    REQUIRE(r.applied.size() == values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        CHECK(r.originals[i].value == values[i]);
        CHECK(r.originals[i].path == j.originals[i].path);
        CHECK(r.originals[i].kind == ValueKind::kCpuMask);
        CHECK(r.applied[i].desired == values[i]);
    }
    // Any JSON parser reads it (it is not only our loader's format).
    auto doc = nlohmann::json::parse(test::readText(store.path()));
    CHECK(doc["version"] == 1);
    CHECK(doc["originals"][3]["value"] == std::string("x\x01y", 3));

    SECTION("empty lists") {
        Journal e;
        e.state = "applied";
        REQUIRE(store.save(e));
        auto l = store.load();
        REQUIRE(l);
        REQUIRE(l->has_value());
        CHECK((*l)->originals.empty());
        CHECK((*l)->applied.empty());
    }
}

TEST_CASE("a value that is not UTF-8 is refused and the journal on disk stays as it was", "[journal]") {
    TempDir dir("rxtune-journal");
    JournalStore store(dir.path.string());
    Journal good;
    good.state = "applied";
    good.originals.push_back({"k", "proc/sys/net/core/somaxconn", ValueKind::kInteger, "4096\n", {}});
    REQUIRE(store.save(good));
    for (const std::string& bad : {std::string("\xff"), std::string("\xc0\x80"), std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
                                  std::string("\xe2\x82"), std::string("\x80")}) {
        Journal j = good;
        j.originals.push_back({"x", "sys/x", ValueKind::kWord, bad, {}});
        auto r = store.save(j);
        REQUIRE_FALSE(r);
        CHECK(r.error().message().find("not valid UTF-8") != std::string::npos);
        auto l = store.load();
        REQUIRE(l);
        REQUIRE(l->has_value());
        CHECK((*l)->originals.size() == 1);
    }
}

TEST_CASE("a journal whose paths leave the kernel's files is refused, not replayed", "[journal]") {
    auto doc = [](const std::string& originalPath, const std::string& appliedPath) {
        nlohmann::json j = {{"version", 1}, {"state", "applied"}, {"generation", 1}};
        j["originals"] = {{{"id", "k"}, {"path", originalPath}, {"kind", "word"}, {"value", "x"}}};
        j["applied"] = {{{"id", "k"}, {"path", appliedPath}, {"kind", "word"}, {"desired", "y"}}};
        return j.dump();
    };
    const std::string ok = "proc/sys/net/core/somaxconn";
    CHECK(parseJournal(doc(ok, ok), std::nullopt, "j.json"));
    CHECK(parseJournal(doc("sys/fs/bpf/rxtune/eth0", ok), std::nullopt, "j.json"));
    for (const std::string bad : {"/etc/shadow", "etc/shadow", "sys/../etc/shadow", "proc/sys//x", "proc/./sys", "", "sys"}) {
        INFO(bad);
        auto a = parseJournal(doc(bad, ok), std::nullopt, "j.json");
        REQUIRE_FALSE(a);
        CHECK(a.error().message().find("j.json") != std::string::npos);
        CHECK(a.error().message().find("outside sys/ and proc/") != std::string::npos);
        CHECK_FALSE(parseJournal(doc(ok, bad), std::nullopt, "j.json"));
    }
}

TEST_CASE("the completion mark counts only for its own generation, and a torn one is ignored", "[journal]") {
    const std::string text = R"({"version":1,"state":"applying","generation":7,"originals":[],"applied":[]})";
    CHECK(parseJournal(text, std::nullopt, "j")->state == "applying");
    CHECK(parseJournal(text, std::string_view(R"({"generation":7,"applied_at":"t"})"), "j")->state == "applied");
    CHECK(parseJournal(text, std::string_view(R"({"generation":6,"applied_at":"t"})"), "j")->state == "applying");
    CHECK(parseJournal(text, std::string_view(R"({"generation":7,"appl)"), "j")->state == "applying");
    CHECK_FALSE(parseJournal(R"({"version":2})", std::nullopt, "j"));
    CHECK_FALSE(parseJournal("", std::nullopt, "j"));
}

TEST_CASE("a journal number that is no integer of its field's range is damage, not undefined behaviour", "[journal]") {
    // Found by make fuzz-soak: "version": 2222...2 (past uint64) was converted to int.
    for (const std::string v : {"222222222222222211111111111111111111111111111111111111111111111122", "1.5", "-1", "\"1\"", "1e300"}) {
        INFO(v);
        auto a = parseJournal("{\"version\": " + v + ", \"state\": \"applied\", \"originals\": [], \"applied\": []}", std::nullopt, "j.json");
        REQUIRE_FALSE(a);
        CHECK(a.error().message().find("j.json") != std::string::npos);
    }
    const std::string ok = R"({"version": 1, "state": "applied", "originals": [], "applied": [], )";
    CHECK_FALSE(parseJournal(ok + R"("generation": -3})", std::nullopt, "j"));
    CHECK_FALSE(parseJournal(ok + R"("pid": 1e40})", std::nullopt, "j"));
    CHECK(parseJournal(ok + R"("generation": 18446744073709551615})", std::nullopt, "j")->generation == 18446744073709551615ull);
    // A mark whose generation is not an integer is a torn mark: the apply reads as interrupted.
    const std::string applying = R"({"version":1,"state":"applying","generation":7,"originals":[],"applied":[]})";
    CHECK(parseJournal(applying, std::string_view(R"({"generation":7.5,"applied_at":"t"})"), "j")->state == "applying");
    CHECK(parseJournal(applying, std::string_view(R"([1,2])"), "j")->state == "applying");
}

namespace {

// Both readers' journals, field by field (Original and Setting have no ==).
void requireSame(const Journal& a, const Journal& b) {
    CHECK(a.state == b.state);
    CHECK(a.generation == b.generation);
    CHECK(a.pid == b.pid);
    CHECK(a.profile == b.profile);
    CHECK(a.appliedAt == b.appliedAt);
    CHECK(a.netns == b.netns);
    REQUIRE(a.originals.size() == b.originals.size());
    REQUIRE(a.applied.size() == b.applied.size());
    for (size_t i = 0; i < a.originals.size(); ++i) {
        CHECK(a.originals[i].id == b.originals[i].id);
        CHECK(a.originals[i].path == b.originals[i].path);
        CHECK(a.originals[i].kind == b.originals[i].kind);
        CHECK(a.originals[i].value == b.originals[i].value);
        CHECK(a.originals[i].key == b.originals[i].key);
    }
    for (size_t i = 0; i < a.applied.size(); ++i) {
        CHECK(a.applied[i].id == b.applied[i].id);
        CHECK(a.applied[i].path == b.applied[i].path);
        CHECK(a.applied[i].kind == b.applied[i].kind);
        CHECK(a.applied[i].desired == b.applied[i].desired);
        CHECK(a.applied[i].key == b.applied[i].key);
    }
}


}  // namespace

TEST_CASE("the fast journal reader takes what the writer writes and reads what the reference reads", "[journal]") {
    TempDir dir("rxtune-journal");
    JournalStore store(dir.path.string());
    Journal j;
    j.state = "applying";
    j.generation = 18446744073709551615ull;
    j.pid = 4242;
    j.profile = "gw \"edge\" \xc3\xa9";
    j.appliedAt = "2026-12-02T18:00:00Z";
    j.netns = "net:[4026531840]";
    // Every key field the writer knows, and an entry without a stored key (family "").
    KnobKey queue{"queue", "eth0", "rps_cpus", 3, true, -1, -1};
    KnobKey irq{"irq", "eth0", "smp_affinity", -1, false, -1, 27};
    KnobKey cpu{"governor", "", "scaling_governor", -1, false, 5, -1};
    KnobKey none;
    none.family.clear();
    int n = 0;
    for (const KnobKey& k : {queue, irq, cpu, none}) {
        const std::string i = std::to_string(n++);
        j.originals.push_back({"k" + i, "sys/x/" + i, ValueKind::kCpuMask, "00000000,0000000" + i + "\n", k});
        Setting s;
        s.id = "k" + i;
        s.path = "sys/x/" + i;
        s.kind = ValueKind::kNumbers;
        s.desired = "4096\t" + i;
        s.key = k;
        j.applied.push_back(s);
    }
    REQUIRE(store.save(j));
    const std::string text = test::readText(store.path());
    auto fast = parseJournalFast(text, std::nullopt);
    REQUIRE(fast);  // the writer's shape is the fast reader's
    auto reference = parseJournalReference(text, std::nullopt, "j.json");
    REQUIRE(reference);
    requireSame(*fast, *reference);
    CHECK(fast->netns == "net:[4026531840]");
    CHECK(fast->originals[1].key.irq == 27);
    CHECK(fast->originals[3].key.family.empty());
    // The completion mark applies the same way.
    const std::string mark = R"({"generation":18446744073709551615,"applied_at":"t"})";
    REQUIRE(parseJournalFast(text, std::string_view(mark)));
    CHECK(parseJournalFast(text, std::string_view(mark))->state == "applied");
    CHECK(parseJournalFast(text, std::string_view(mark))->appliedAt == "t");

    // Anything else is the reference reader's to decide: what both read, they read alike, and
    // what the reference refuses the fast reader never takes.
    auto edit = [&](const std::string& from, const std::string& to) {
        std::string t = text;
        const auto at = t.find(from);
        REQUIRE(at != std::string::npos);
        return t.replace(at, from.size(), to);
    };
    const std::vector<std::string> variants = {
        edit("\"pid\": 4242", "\"pid\": 4242, \"future\": {\"a\": [1, null]}"),  // a key of a later build
        edit("\"pid\": 4242", "\"pid\": 4242, \"pid\": 7"),                     // said twice: the last counts
        edit("\"pid\": 4242", "\"pid\": 4242.0"),
        edit("\"pid\": 4242", "\"pid\": null"),
        edit("\"version\": 1", "\"version\": 2"),
        edit("\"kind\": \"cpumask\"", "\"kind\": \"mask\""),
        edit("\"path\": \"sys/x/0\"", "\"path\": \"sys/../etc/shadow\""),
        edit("\"family\": \"queue\"", "\"family\": \"\""),
        edit("\"queue\": 3", "\"queue\": 3000000000"),
        edit("\"tx\": true", "\"tx\": 1"),
        edit("\"originals\": [", "\"originals\": null, \"x\": ["),
        edit("\"applied\": [", "\"applied\": {\"a\": "),
        edit("\"value\": ", "\"desired\": "),
        text + "x",
        "{\"version\": 1, \"state\": \"applied\", \"originals\": {}, \"applied\": null}",
        "{\"state\": \"applied\", \"originals\": [], \"applied\": [], \"version\": 1}",
    };
    for (const auto& v : variants) {
        INFO(v.substr(0, 300));
        auto ref = parseJournalReference(v, std::nullopt, "j.json");
        auto got = parseJournal(v, std::nullopt, "j.json");
        REQUIRE(got.has_value() == ref.has_value());
        if (!ref) {
            CHECK_FALSE(parseJournalFast(v, std::nullopt));
            CHECK(got.error().message() == ref.error().message());
        } else {
            requireSame(*got, *ref);
            if (auto f = parseJournalFast(v, std::nullopt)) requireSame(*f, *ref);
        }
    }
}
