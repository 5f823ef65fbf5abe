#include <catch2/catch.hpp>

#include "../support/fixture.hpp"
#include "sys/file_tree.hpp"

using namespace rxtune;

TEST_CASE("FileTree reads, lists and writes under its root", "[file_tree]") {
    test::TempTree tmp("vm-no-cpufreq");
    FileTree fs(tmp.path().string() + "/");
    CHECK(fs.read("sys/devices/system/cpu/online").value() == "0-3\n");
    auto entries = fs.list("sys/class/net/eth0/queues").value();
    CHECK(entries == std::vector<std::string>{"rx-0", "tx-0"});
    REQUIRE(fs.write("proc/sys/net/core/rmem_max", "4096").has_value());
    CHECK(fs.read("proc/sys/net/core/rmem_max").value() == "4096");
    CHECK(fs.exists("proc/interrupts"));
    CHECK_FALSE(fs.exists("proc/nope"));
}

TEST_CASE("FileTree errors carry errno and the full path", "[file_tree]") {
    test::TempTree tmp("vm-no-cpufreq");
    FileTree fs(tmp.path().string());
    auto r = fs.read("sys/nope");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ENOENT);
    CHECK(r.error().path == tmp.path().string() + "/sys/nope");
    // Knobs are never created: writing a file that does not exist fails.
    auto w = fs.write("proc/sys/net/core/not_a_knob", "1");
    REQUIRE_FALSE(w);
    CHECK(w.error().code == ENOENT);
    CHECK_FALSE(fs.exists("proc/sys/net/core/not_a_knob"));
    CHECK(fs.list("sys/nope").error().code == ENOENT);
}

TEST_CASE("FileTree can look proc/sys up elsewhere (a container's host /proc/sys)", "[file_tree]") {
    test::TempTree tmp("vm-no-cpufreq");
    test::TempTree host("vm-no-cpufreq");
    host.put("proc/sys/net/core/somaxconn", "4242\n");
    FileTree fs(tmp.path().string());
    fs.redirect("proc/sys/", (host.path() / "proc" / "sys").string() + "/");
    CHECK(fs.read("proc/sys/net/core/somaxconn").value() == "4242\n");
    REQUIRE(fs.write("proc/sys/net/core/somaxconn", "8192"));
    CHECK(FileTree(host.path().string()).read("proc/sys/net/core/somaxconn").value() == "8192");
    CHECK(FileTree(tmp.path().string()).read("proc/sys/net/core/somaxconn").value_or("") != "8192");  // the root's copy untouched
    CHECK(fs.full("proc/sys/net/core/somaxconn") == (host.path() / "proc/sys/net/core/somaxconn").string());
    CHECK(fs.read("proc/interrupts").has_value());  // the rest of proc stays under the root
    CHECK(fs.full("proc/interrupts") == (tmp.path() / "proc/interrupts").string());
}
