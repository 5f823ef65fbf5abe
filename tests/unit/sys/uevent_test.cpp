#include <catch2/catch.hpp>

#include <string>

#include "sys/events.hpp"

using namespace rxtune;

TEST_CASE("kernel uevents for queues parse; libudev datagrams are ignored", "[events]") {
    using namespace std::string_literals;
    const std::string msg = "add@/devices/virtual/net/v0/queues/rx-3\0ACTION=add\0DEVPATH=/devices/virtual/net/v0/queues/rx-3\0"
                            "SUBSYSTEM=queues\0SEQNUM=1234\0"s;
    Uevent ev;
    REQUIRE(parseUevent(msg.data(), msg.size(), ev));
    CHECK(ev.action == "add");
    CHECK(ev.subsystem == "queues");
    CHECK(ev.devpath == "/devices/virtual/net/v0/queues/rx-3");
    const std::string udev = "libudev\0\xfe\xed\xca\xfe"s;
    CHECK_FALSE(parseUevent(udev.data(), udev.size(), ev));
    CHECK_FALSE(parseUevent("", 0, ev));
}
