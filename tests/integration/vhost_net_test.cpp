#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sys/vhost_net.hpp"

using namespace rxtune;

namespace {

// Whether the kernel has a vhost-net driver registered, read independently of the probe: the misc
// devices list ("238 vhost-net").
bool vhostNetRegistered() {
    std::ifstream misc("/proc/misc");
    std::string minor, name;
    while (misc >> minor >> name)
        if (name == "vhost-net") return true;
    return false;
}

}  // namespace

TEST_CASE("the vhost-net probe on the real device node: works where the driver is there, else names it", "[integration][vhost]") {
    // misc 10:238 is vhost-net's node; made here so that the test does not depend on /dev.
    const auto dir = std::filesystem::temp_directory_path() / ("rxtune-vhost-it-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto node = dir / "vhost-net";
    REQUIRE(::mknod(node.c_str(), S_IFCHR | 0600, makedev(10, 238)) == 0);
    auto r = probeVhostNet(node.string());
    const bool expected = vhostNetRegistered();
    INFO("vhost-net in /proc/misc: " << expected);
    CHECK(static_cast<bool>(r) == expected);
    if (!r) {
        INFO(r.error().message());
        CHECK(r.error().message().find(node.string()) != std::string::npos);
        CHECK((r.error().code == ENODEV || r.error().code == ENXIO));
        CHECK(r.error().message().find("modprobe vhost_net") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}
