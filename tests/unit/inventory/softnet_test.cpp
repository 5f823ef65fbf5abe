#include <catch2/catch.hpp>

#include "inventory/softnet.hpp"

using namespace rxtune;

TEST_CASE("softnet_stat with CPU ids (kernel 6.x, 15 columns)", "[softnet]") {
    const char* text =
        "00000020 00000001 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000003 00000004 00000005 00000000 00000000 00000000\n"
        "0000044e 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002 00000000 00000000\n";
    auto t = parseSoftnetStat(text, {0, 2});
    REQUIRE(t);
    REQUIRE(t->size() == 2);
    CHECK(t->at(0).processed == 0x20);
    CHECK(t->at(0).dropped == 1);
    CHECK(t->at(0).timeSqueeze == 2);
    CHECK(t->at(0).receivedRps == 3);
    CHECK(t->at(0).flowLimitCount == 4);
    CHECK(t->at(0).backlogLen == 5);
    CHECK(t->at(2).processed == 0x44e);  // CPU 1 offline: the id column says 2
}

TEST_CASE("softnet_stat of older kernels maps rows to online CPUs", "[softnet]") {
    const char* text =
        "00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"
        "00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n";
    auto t = parseSoftnetStat(text, {0, 3});
    REQUIRE(t);
    CHECK(t->at(3).processed == 2);
    CHECK_FALSE(parseSoftnetStat(text, {0}));
}

TEST_CASE("garbage softnet_stat and softirqs are errors", "[softnet]") {
    CHECK_FALSE(parseSoftnetStat("1 2 3\n", {0}));
    CHECK_FALSE(parseSoftnetStat("zz 0 0 0 0 0 0 0 0 0 0\n", {0}));
    CHECK_FALSE(parseSoftnetStat("100000000 0 0 0 0 0 0 0 0 0 0\n", {0}));
    CHECK_FALSE(parseNetRxSoftirqs(""));
    CHECK_FALSE(parseNetRxSoftirqs("  CPU0\n  TIMER: 1\n"));
    CHECK_FALSE(parseNetRxSoftirqs("  CPU0 CPU1\n NET_RX: 1\n"));
}

TEST_CASE("NET_RX softirqs per CPU", "[softnet]") {
    auto t = parseNetRxSoftirqs("                    CPU0       CPU1\n          HI:          0          0\n"
                                "      NET_RX:        844        849\n");
    REQUIRE(t);
    CHECK(t->at(0) == 844);
    CHECK(t->at(1) == 849);
}

TEST_CASE("32-bit kernel counters become monotonic 64-bit counters across a wrap", "[softnet]") {
    WrapCounter c;
    CHECK(c.update(0xfffffff0u) == 0xfffffff0u);
    CHECK(c.update(0x10u) == 0x100000000ull + 0x10u);
    CHECK(c.update(0x20u) == 0x100000000ull + 0x20u);
    CHECK(c.update(0x20u) == 0x100000000ull + 0x20u);
}
