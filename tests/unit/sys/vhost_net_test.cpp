#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>

#include "sys/vhost_net.hpp"

using namespace rxtune;

TEST_CASE("the vhost-net probe says what is missing", "[vhost]") {
    const auto dir = std::filesystem::temp_directory_path() / ("rxtune-vhost-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    SECTION("no node") {
        auto r = probeVhostNet((dir / "vhost-net").string());
        REQUIRE_FALSE(r);
        CHECK(r.error().code == ENOENT);
        CHECK(r.error().message().find("modprobe vhost_net") != std::string::npos);
    }
    SECTION("a file that is not a vhost device") {
        std::ofstream(dir / "plain") << "x";
        auto r = probeVhostNet((dir / "plain").string());
        REQUIRE_FALSE(r);
        CHECK(r.error().message().find("not a vhost device") != std::string::npos);
    }
    SECTION("the vhost-net device itself: works where the module is there, else names the missing driver") {
        // misc 10:238 is vhost-net's node; made here so that the test does not depend on /dev.
        const auto node = dir / "vhost-net-node";
        REQUIRE(::mknod(node.c_str(), S_IFCHR | 0600, makedev(10, 238)) == 0);
        auto r = probeVhostNet(node.string());
        if (r) {
            SUCCEED("vhost_net is loaded here");
        } else {
            INFO(r.error().message());
            CHECK(r.error().message().find(node.string()) != std::string::npos);
            CHECK((r.error().code == ENODEV || r.error().code == ENXIO));
            CHECK(r.error().message().find("modprobe vhost_net") != std::string::npos);
        }
    }
    std::filesystem::remove_all(dir);
}
