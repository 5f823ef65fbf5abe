#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "state/journal.hpp"

using namespace rxtune;

namespace {

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string t = (std::filesystem::temp_directory_path() / "rxtune-journal-XXXXXX").string();
        REQUIRE(mkdtemp(t.data()));
        path = t;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("the journal round-trips every byte of its values, and is JSON", "[journal]") {
    TempDir dir;
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
    std::ifstream in(store.path());
    std::stringstream text;
    text << in.rdbuf();
    auto doc = nlohmann::json::parse(text.str());
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
    TempDir dir;
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
