// The golden detect output: `rxtune detect --json` and the table on every fixture host, compared
// with tests/fixtures/golden/detect/<host>.{json,txt} (the JSON as a document: key order aside; the
// table byte for byte). A refactor of detect or of a family's rendering must leave them as they
// are; a change that means to alter them regenerates them (RXTUNE_UPDATE_GOLDEN=1) and the diff is
// reviewed with it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/fixture.hpp"
#include "cli/detect_output.hpp"

using namespace rxtune;
namespace fs = std::filesystem;

namespace {

std::string unrooted(std::string text, const std::string& root) {
    for (size_t at; (at = text.find(root)) != std::string::npos;) text.replace(at, root.size(), "@ROOT@");
    return text;
}

std::string readAll(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("detect's JSON and table on every fixture host are the golden ones", "[detect][golden]") {
    const fs::path golden = fs::path(std::getenv("RXTUNE_SOURCE")) / "tests" / "fixtures" / "golden" / "detect";
    const bool update = std::getenv("RXTUNE_UPDATE_GOLDEN") != nullptr;
    const auto hosts = test::fixtureHosts();
    for (const auto& host : hosts) {
        INFO(host);
        auto root = test::fixtureRoot(host);
        FileTree tree(root.string());
        test::FakeNetlink nl(root);
        auto snap = detectSnapshot(tree, nl, {});
        REQUIRE(snap);
        const std::string json = unrooted(toJson(*snap).dump(2) + "\n", root.string());
        std::ostringstream table;
        printTable(*snap, table);
        const std::string text = unrooted(table.str(), root.string());
        if (update) {
            fs::create_directories(golden);
            std::ofstream(golden / (host + ".json")) << json;
            std::ofstream(golden / (host + ".txt")) << text;
        }
        const std::string wantJson = readAll(golden / (host + ".json")), wantText = readAll(golden / (host + ".txt"));
        REQUIRE_FALSE(wantJson.empty());
        CHECK(nlohmann::json::parse(json) == nlohmann::json::parse(wantJson));
        CHECK(text == wantText);
    }
    CHECK(hosts.size() >= 4);
}
