#include <catch2/catch.hpp>

#include <unistd.h>

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
    SECTION("a character device that is not vhost: no vhost ioctls behind it") {
        // /dev/null opens read-write for anyone and answers VHOST_GET_FEATURES with ENOTTY; the
        // real vhost-net node (made with mknod, which needs root) is tested in the integration suite.
        auto r = probeVhostNet("/dev/null");
        REQUIRE_FALSE(r);
        // ENOSYS under qemu-user (make cross-arm64 runs these tests there): it does not pass an
        // ioctl it does not know to the kernel.
        CHECK((r.error().code == ENOTTY || r.error().code == ENOSYS));
        CHECK(r.error().message().find("/dev/null") != std::string::npos);
        CHECK(r.error().message().find("not a vhost device") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}
