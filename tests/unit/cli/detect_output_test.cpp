#include <catch2/catch.hpp>

#include <sstream>

#include "../support/fixture.hpp"
#include "cli/detect_output.hpp"

using namespace rxtune;

TEST_CASE("detect JSON has host and interfaces with the detected facts", "[detect]") {
    auto root = test::fixtureRoot("numa2-multi-queue");
    FileTree fs(root.string());
    test::FakeNetlink nl(root);
    auto s = takeSnapshot(fs, nl, {});
    REQUIRE(s);
    auto j = toJson(*s);
    REQUIRE(j.contains("host"));
    REQUIRE(j.contains("interfaces"));
    CHECK(j["host"]["cgroup"]["effective_cpus"] == "8-15");
    CHECK(j["host"]["numa_nodes"]["1"] == "8-15");
    CHECK(j["host"]["llc"]["9"] == "8-15");
    std::ostringstream table;
    printTable(*s, table);
    CHECK(table.str().find("  last-level cache [0-7] [8-15]\n") != std::string::npos);  // each cache once, in CPU order
    const auto& nic = j["interfaces"][1];
    CHECK(nic["name"] == "ens1f0");
    CHECK(nic["verdict"] == "multi-queue");
    CHECK(nic["channels"]["max_combined"] == 16);
    CHECK(nic["channels"]["can_raise"] == true);
    CHECK(nic["queues"]["rx"] == 8);
    CHECK(nic["irqs"].size() == 8);
    CHECK(nic["numa_node"] == 1);
}

TEST_CASE("detect table names every interface and the verdict", "[detect]") {
    auto root = test::fixtureRoot("story-20cpu-single-queue");
    FileTree fs(root.string());
    test::FakeNetlink nl(root);
    auto s = takeSnapshot(fs, nl, {});
    REQUIRE(s);
    std::ostringstream os;
    printTable(*s, os);
    const std::string out = os.str();
    CHECK(out.find("enp2s0") != std::string::npos);
    CHECK(out.find("single-queue") != std::string::npos);
    CHECK(out.find("r8169") != std::string::npos);
    CHECK(out.find("channels: Operation not supported") != std::string::npos);
    CHECK(out.find("governor powersave on 0-19") != std::string::npos);
    CHECK(out.find("last-level cache -") != std::string::npos);  // the fixture has no cacheinfo
}
