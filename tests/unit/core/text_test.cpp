#include <catch2/catch.hpp>

#include <cstdint>

#include "core/text.hpp"

using namespace rxtune;

TEST_CASE("trimming and splitting kernel text", "[text]") {
    CHECK(trimmed(" \t\v\f\r\nab c\n\n") == "ab c");
    CHECK(trimmed("") == "");
    CHECK(trimmed(" \n ") == "");
    CHECK(splitLines("a\n\n  \nb c\n") == std::vector<std::string>{"a", "b c"});
    CHECK(splitLines("").empty());
    CHECK(splitFields("  a\tb \n c ") == std::vector<std::string>{"a", "b", "c"});
    CHECK(splitFields(" \t ").empty());
    CHECK(splitOn("a,,b,", ',') == std::vector<std::string>{"a", "", "b", ""});
    CHECK(splitOn("", ',') == std::vector<std::string>{""});
    CHECK(joinFields("4096\t131072  6291456\n") == "4096 131072 6291456");
    CHECK(joinFields("\n") == "");
}

TEST_CASE("mountinfo escapes are octal triples, and only those", "[text]") {
    CHECK(unescapeMount("/mnt/with\\040space") == "/mnt/with space");
    CHECK(unescapeMount("\\011tab\\012nl\\134back") == "\ttab\nnl\\back");
    CHECK(unescapeMount("\\0") == "\\0");        // too short
    CHECK(unescapeMount("a\\04") == "a\\04");    // cut off at the end
    CHECK(unescapeMount("\\400x") == "\\400x");  // first digit past 3: not an escape
    CHECK(unescapeMount("\\08x") == "\\08x");    // 8 is not octal
    CHECK(unescapeMount("plain") == "plain");
}

TEST_CASE("integers are parsed whole or not at all", "[text]") {
    unsigned u = 7;
    CHECK(parseUnsigned("42", u));
    CHECK(u == 42);
    CHECK_FALSE(parseUnsigned("", u));
    CHECK_FALSE(parseUnsigned("42 ", u));
    CHECK_FALSE(parseUnsigned("-1", u));
    CHECK_FALSE(parseUnsigned("4294967296", u));  // past unsigned
    std::uint8_t b = 0;
    CHECK_FALSE(parseUnsigned("256", b));
    std::int64_t s = 0;
    CHECK(parseSigned("-1", s));
    CHECK(s == -1);
    CHECK(parseSigned("9223372036854775807", s));
    CHECK_FALSE(parseSigned("9223372036854775808", s));
    CHECK_FALSE(parseSigned("1e3", s));
    CHECK_FALSE(parseSigned("", s));
}

TEST_CASE("log and journal formatting", "[text]") {
    CHECK(rounded(752000.4) == "752000");
    CHECK(rounded(0.5) == "0");  // round half to even, as printf does
    CHECK(rounded(-2.6) == "-3");
    CHECK(isoUtc(0) == "1970-01-01T00:00:00Z");
    CHECK(isoUtc(1796130000) == "2026-12-01T13:00:00Z");
}
