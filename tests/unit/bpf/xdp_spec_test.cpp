#include <catch2/catch.hpp>

#include "bpf/xdp_steering.hpp"
#include "core/mountinfo.hpp"

using namespace rxtune;

TEST_CASE("XDP steering specs round-trip and reject garbage", "[xdp]") {
    auto s = XdpSpec::parse("cpus=0-3,8 mode=native qsize=1024").value();
    CHECK(s.cpus == CpuSet::parseList("0-3,8").value());
    CHECK(s.mode == XdpMode::kNative);
    CHECK(s.qsize == 1024);
    CHECK(s.str() == "cpus=0-3,8 mode=native qsize=1024");
    CHECK(XdpSpec::parse(s.str()).value() == s);
    CHECK(XdpSpec::parse("cpus=1").value().str() == "cpus=1 mode=generic qsize=2048");
    for (const char* bad : {"", "detached", "cpus=", "cpus=1 mode=fast", "cpus=1 qsize=0", "cpus=x", "mode=generic", "cpus=1 colour=red"})
        CHECK_FALSE(XdpSpec::parse(bad));
}

TEST_CASE("a bpffs is durable only when PID 1's mount namespace has it", "[xdp]") {
    const char* host =
        "22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "36 22 0:39 / /sys/fs/bpf rw,nosuid,nodev,noexec,relatime shared:17 - bpf bpf rw,mode=700\n"
        "47 27 0:40 / /tmp/lab/bpffs rw,relatime - bpf bpf rw\n"
        "50 22 0:41 / /run rw - tmpfs tmpfs rw\n";
    CHECK(mountinfoHasBpf(host, 0, 39));
    CHECK(mountinfoHasBpf(host, 0, 40));
    CHECK_FALSE(mountinfoHasBpf(host, 0, 41));   // a tmpfs with that device is not a bpffs
    CHECK_FALSE(mountinfoHasBpf(host, 0, 77));   // mounted only in a private namespace
    CHECK_FALSE(mountinfoHasBpf("", 0, 39));
    CHECK_FALSE(mountinfoHasBpf("garbage\n36 22\n", 0, 39));
}
