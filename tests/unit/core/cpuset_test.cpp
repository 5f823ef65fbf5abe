#include <catch2/catch.hpp>

#include "core/cpuset.hpp"

using rxtune::CpuSet;

TEST_CASE("hex masks parse into CPU sets", "[cpuset]") {
    CHECK(CpuSet::parseMask("f").value() == CpuSet::range(0, 3));
    CHECK(CpuSet::parseMask("0000,0000000f").value() == CpuSet::range(0, 3));
    CHECK(CpuSet::parseMask("00000000,0000000f\n").value() == CpuSet::parseMask("f").value());
    CHECK(CpuSet::parseMask("0").value().empty());
    CHECK(CpuSet::parseMask("00000,00000000,00000000").value().empty());
    CHECK(CpuSet::parseMask("1,00000000").value() == CpuSet::of({32}));
    CHECK(CpuSet::parseMask("80000000,00000001").value() == CpuSet::of({0, 63}));
    CHECK(CpuSet::parseMask("FfFf").value() == CpuSet::range(0, 15));
}

TEST_CASE("masks wider than 64 CPUs keep every group", "[cpuset]") {
    // 160 CPUs: five 32-bit groups, CPU 0, 64 and 159 set.
    auto s = CpuSet::parseMask("80000000,00000000,00000001,00000000,00000001").value();
    CHECK(s == CpuSet::of({0, 64, 159}));
    CHECK(s.count() == 3);
    CHECK(s.toMask() == "80000000,00000000,00000001,00000000,00000001");
    CHECK(s.toList() == "0,64,159");
    CHECK(CpuSet::parseMask(s.toMask(256)).value() == s);
}

TEST_CASE("bad masks are errors that say why", "[cpuset]") {
    CHECK_FALSE(CpuSet::parseMask(""));
    CHECK_FALSE(CpuSet::parseMask("\n"));
    CHECK_FALSE(CpuSet::parseMask("xyz"));
    CHECK_FALSE(CpuSet::parseMask("f,,f"));
    CHECK_FALSE(CpuSet::parseMask(",f"));
    CHECK_FALSE(CpuSet::parseMask("123456789"));  // more than 32 bits in a group
    auto e = CpuSet::parseMask("0x0f");
    REQUIRE_FALSE(e);
    CHECK(e.error().message().find("not a hex digit") != std::string::npos);
}

TEST_CASE("cpulists parse with ranges, singles and strides", "[cpuset]") {
    CHECK(CpuSet::parseList("0-3,8,10-11").value() == CpuSet::of({0, 1, 2, 3, 8, 10, 11}));
    CHECK(CpuSet::parseList("5").value() == CpuSet::of({5}));
    CHECK(CpuSet::parseList("").value().empty());
    CHECK(CpuSet::parseList("\n").value().empty());
    CHECK(CpuSet::parseList("0-7:2/4").value() == CpuSet::of({0, 1, 4, 5}));
    CHECK(CpuSet::parseList("3,1,2").value() == CpuSet::range(1, 3));
}

TEST_CASE("bad cpulists are errors", "[cpuset]") {
    CHECK_FALSE(CpuSet::parseList("3-1"));
    CHECK_FALSE(CpuSet::parseList("1,,2"));
    CHECK_FALSE(CpuSet::parseList("a"));
    CHECK_FALSE(CpuSet::parseList("1-"));
    CHECK_FALSE(CpuSet::parseList("-1"));
    CHECK_FALSE(CpuSet::parseList("0-7:0/4"));
    CHECK_FALSE(CpuSet::parseList("0-7:5/4"));
    CHECK_FALSE(CpuSet::parseList("99999999"));  // beyond the kernel's NR_CPUS ceiling
    CHECK_FALSE(CpuSet::parseList("0-4294967296"));
}

TEST_CASE("formatting round-trips and normalises", "[cpuset]") {
    auto s = CpuSet::parseList("0-3,8,10-11").value();
    CHECK(s.toList() == "0-3,8,10-11");
    CHECK(s.toMask() == "d0f");
    CHECK(s.toMask(20) == "00d0f");
    CHECK(s.toMask(64) == "00000000,00000d0f");
    CHECK(s.toMask(40) == "00,00000d0f");
    CHECK(CpuSet{}.toMask() == "0");
    CHECK(CpuSet{}.toMask(2) == "0");
    CHECK(CpuSet{}.toList().empty());
    for (const char* list : {"0", "1-2", "0-63", "31-33", "0,2,4,6,100-130", "4095"}) {
        auto a = CpuSet::parseList(list).value();
        CHECK(CpuSet::parseList(a.toList()).value() == a);
        CHECK(CpuSet::parseMask(a.toMask()).value() == a);
        CHECK(CpuSet::parseMask(a.toMask(4096)).value() == a);
        CHECK(a.toList() == list);
    }
}

TEST_CASE("set algebra", "[cpuset]") {
    auto a = CpuSet::range(0, 7);
    auto b = CpuSet::of({2, 3, 100});
    CHECK((a | b).count() == 9);
    CHECK((a & b) == CpuSet::of({2, 3}));
    CHECK((a - b) == CpuSet::of({0, 1, 4, 5, 6, 7}));
    CHECK(((b - a) == CpuSet::of({100})));
    auto c = CpuSet::of({100});
    c.remove(100);
    CHECK(c.empty());
    CHECK(c == CpuSet{});
    CHECK(a.contains(7));
    CHECK_FALSE(a.contains(8));
    CHECK_FALSE(a.contains(100000));
}
