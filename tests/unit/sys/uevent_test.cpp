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

TEST_CASE("a uevent names the network device it is about", "[events]") {
    CHECK(ueventDevice({"add", "/devices/virtual/net/v0/queues/rx-3", "queues"}) == "v0");
    CHECK(ueventDevice({"add", "/devices/pci0000:00/0000:00:03.0/virtio0/net/eth0", "net"}) == "eth0");
    // A device called "net" or "queues" is still found by position, not by searching for the word.
    CHECK(ueventDevice({"add", "/devices/virtual/net/net/queues/tx-0", "queues"}) == "net");
    CHECK(ueventDevice({"add", "/devices/virtual/net/queues/queues/rx-0", "queues"}) == "queues");
    CHECK(ueventDevice({"add", "/devices/system/cpu/cpu3", "cpu"}).empty());
    CHECK(ueventDevice({"add", "/devices/virtual/net/v0/rx-0", "queues"}).empty());
    CHECK(ueventDevice({"resync", "", "queues"}).empty());
}
