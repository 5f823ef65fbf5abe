#include <catch2/catch.hpp>

#include "core/setting.hpp"

using namespace rxtune;

// Idempotence rests on these: a value the kernel shows in another spelling is not a change.
TEST_CASE("sameValue and normalise compare kernel values in their normalised form", "[setting]") {
    SECTION("cpu masks: padding, commas, case and a trailing newline do not matter") {
        CHECK(sameValue(ValueKind::kCpuMask, "0000,0000000f\n", "f"));
        CHECK(sameValue(ValueKind::kCpuMask, "00000000,00000000,00000001", "1"));
        CHECK(sameValue(ValueKind::kCpuMask, "FF", "ff"));
        CHECK(sameValue(ValueKind::kCpuMask, "0", "00000000"));
        CHECK_FALSE(sameValue(ValueKind::kCpuMask, "f", "1f"));
        CHECK_FALSE(sameValue(ValueKind::kCpuMask, "1,00000000", "1"));  // CPU 32, not CPU 0
        CHECK(normalise(ValueKind::kCpuMask, "0000,0000000f\n") == "f");
        CHECK(normalise(ValueKind::kCpuMask, "00000000") == "0");
        // Not a mask at all: compared as trimmed text, never equal to a real mask.
        CHECK(normalise(ValueKind::kCpuMask, " zz \n") == "zz");
        CHECK_FALSE(sameValue(ValueKind::kCpuMask, "zz", "0"));
    }
    SECTION("integers and number triples: whitespace between fields is one space") {
        CHECK(sameValue(ValueKind::kInteger, "300000\n", "300000"));
        CHECK_FALSE(sameValue(ValueKind::kInteger, "300000", "30000"));
        CHECK(sameValue(ValueKind::kNumbers, "4096\t131072\t268435456\n", "4096 131072 268435456"));
        CHECK(normalise(ValueKind::kNumbers, "  4096\t 131072  6291456\n") == "4096 131072 6291456");
        CHECK_FALSE(sameValue(ValueKind::kNumbers, "4096 131072", "4096 131072 6291456"));
    }
    SECTION("words are trimmed, not folded") {
        CHECK(sameValue(ValueKind::kWord, "performance\n", "performance"));
        CHECK_FALSE(sameValue(ValueKind::kWord, "Performance", "performance"));
        CHECK(normalise(ValueKind::kWord, "\tpowersave \n") == "powersave");
    }
    SECTION("XDP specs: fields joined by one space, empty is none") {
        CHECK(sameValue(ValueKind::kXdp, "cpus=0-3  mode=generic qsize=2048", "cpus=0-3 mode=generic qsize=2048"));
        CHECK_FALSE(sameValue(ValueKind::kXdp, "", "cpus=0-3 mode=generic qsize=2048"));
        CHECK(normalise(ValueKind::kXdp, "\n") == "");
    }
}

TEST_CASE("a setting is pending only when its values differ once normalised", "[setting]") {
    Setting s{"eth0 rx-0 rps_cpus", "sys/class/net/eth0/queues/rx-0/rps_cpus", ValueKind::kCpuMask, "0000,000000ff", "ff", "", "", {}};
    CHECK_FALSE(s.pending());
    s.desired = "fe";
    CHECK(s.pending());
    Plan p;
    p.settings = {s, s};
    p.settings[1].desired = "ff";
    CHECK(p.pendingCount() == 1);
}

TEST_CASE("value kinds round-trip through their journal names", "[setting]") {
    for (ValueKind k : {ValueKind::kCpuMask, ValueKind::kInteger, ValueKind::kNumbers, ValueKind::kWord, ValueKind::kXdp}) {
        ValueKind back = k == ValueKind::kWord ? ValueKind::kXdp : ValueKind::kWord;
        REQUIRE(parseValueKind(toString(k), back));
        CHECK(back == k);
    }
    ValueKind untouched = ValueKind::kInteger;
    CHECK_FALSE(parseValueKind("mask", untouched));
    CHECK_FALSE(parseValueKind("", untouched));
    CHECK(untouched == ValueKind::kInteger);
}
