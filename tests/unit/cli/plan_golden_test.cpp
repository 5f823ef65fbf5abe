// The golden plans: `rxtune plan --json` for every shipped profile (as shipped, and with steering
// pinned to rps and to xdp) on every fixture host, compared byte for byte with
// tests/fixtures/golden/<host>.json. A refactor of the planner or of a knob family must leave them
// as they are; a change that means to alter a plan regenerates them (RXTUNE_UPDATE_GOLDEN=1) and
// the diff is reviewed with it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/fixture.hpp"
#include "cli/tune_commands.hpp"
#include "inventory/snapshot.hpp"
#include "planner/planner.hpp"

using namespace rxtune;
namespace fs = std::filesystem;

namespace {

std::string goldenDocument(const std::string& host, const std::string& profilesDir) {
    auto root = test::fixtureRoot(host);
    FileTree tree(root.string());
    test::FakeNetlink nl(root);
    auto snap = takeSnapshot(tree, nl, {}).value();
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(profilesDir))
        if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    nlohmann::ordered_json doc;
    for (const auto& name : names) {
        for (const char* variant : {"shipped", "rps", "xdp"}) {
            auto prof = loadProfile(name, {profilesDir}).value();
            if (std::string(variant) == "rps") prof.steering.mode = SteeringMode::kRps;
            if (std::string(variant) == "xdp") prof.steering.mode = SteeringMode::kXdp;
            auto p = plan(prof, snap, {});
            nlohmann::ordered_json entry;
            if (p) entry = planJson(*p);
            else entry["error"] = p.error().message();
            doc[name + " (" + variant + ")"] = std::move(entry);
        }
    }
    std::string text = doc.dump(2) + "\n";
    // The profiles' directory differs between checkouts.
    for (size_t at; (at = text.find(profilesDir)) != std::string::npos;) text.replace(at, profilesDir.size(), "@PROFILES@");
    return text;
}

}  // namespace

TEST_CASE("the plans of every shipped profile on every fixture host are the golden ones", "[planner][golden]") {
    const std::string profiles = std::getenv("RXTUNE_PROFILES");
    const fs::path golden = fs::path(std::getenv("RXTUNE_SOURCE")) / "tests" / "fixtures" / "golden";
    const bool update = std::getenv("RXTUNE_UPDATE_GOLDEN") != nullptr;
    const auto hosts = test::fixtureHosts();
    for (const auto& host : hosts) {
        INFO(host);
        const std::string now = goldenDocument(host, profiles);
        const fs::path file = golden / (host + ".json");
        if (update) {
            fs::create_directories(golden);
            std::ofstream(file) << now;
        }
        std::ifstream in(file);
        REQUIRE(in);
        std::stringstream want;
        want << in.rdbuf();
        CHECK(now == want.str());
    }
    CHECK(hosts.size() >= 4);
}
