#include <catch2/catch.hpp>

#include "bpf/xdp_steering.hpp"

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
