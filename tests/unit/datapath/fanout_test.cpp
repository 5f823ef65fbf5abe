#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "fanout.hpp"

using namespace rxtune::dp;

TEST_CASE("redirection table: equal weights share the table exactly, interleaved") {
    auto reta = buildReta({1, 1, 1, 1}, 128);
    REQUIRE(reta);
    REQUIRE(reta->size() == 128);
    CHECK(retaShares(*reta, 4) == std::vector<unsigned>{32, 32, 32, 32});
    // Interleaved, not in blocks: no worker holds two neighbouring entries.
    for (size_t i = 1; i < reta->size(); ++i) CHECK((*reta)[i] != (*reta)[i - 1]);
}

TEST_CASE("redirection table: unequal weights are apportioned by largest remainder") {
    auto reta = buildReta({3, 1}, 8);
    REQUIRE(reta);
    CHECK(retaShares(*reta, 2) == std::vector<unsigned>{6, 2});
    auto odd = buildReta({1, 1, 1}, 16);  // 16/3: 5.33 each, the first takes the extra entry
    REQUIRE(odd);
    CHECK(retaShares(*odd, 3) == std::vector<unsigned>{6, 5, 5});
    auto shares = retaShares(*buildReta({2, 5, 0, 9}, 1024), 4);
    CHECK(std::accumulate(shares.begin(), shares.end(), 0u) == 1024);
    CHECK(shares == std::vector<unsigned>{128, 320, 0, 576});
}

TEST_CASE("redirection table: a zero weight gets nothing, a tiny one still gets an entry") {
    auto reta = buildReta({0, 1}, 4);
    REQUIRE(reta);
    CHECK(retaShares(*reta, 2) == std::vector<unsigned>{0, 4});
    auto tiny = buildReta({1000, 1}, 16);
    REQUIRE(tiny);
    CHECK(retaShares(*tiny, 2) == std::vector<unsigned>{15, 1});
}

TEST_CASE("redirection table: is a pure function (same input, same table)") {
    CHECK(*buildReta({1, 2, 3}, 64) == *buildReta({1, 2, 3}, 64));
    auto reta = *buildReta({1, 1}, 2);
    CHECK(retaLookup(reta, 0) == reta[0]);
    CHECK(retaLookup(reta, 0xffffffff) == reta[1]);
}

TEST_CASE("redirection table: bad input is refused with the reason") {
    CHECK(buildReta({}, 128).error().detail.find("need 1 to 16 workers") != std::string::npos);
    CHECK(buildReta(std::vector<unsigned>(17, 1), 128).error().detail.find("got 17") != std::string::npos);
    CHECK(buildReta({1, 1}, 100).error().detail.find("power of two") != std::string::npos);
    CHECK(buildReta({1, 1}, 0).error().detail.find("power of two") != std::string::npos);
    CHECK(buildReta({0, 0}, 8).error().detail.find("every weight is 0") != std::string::npos);
    CHECK(buildReta({1, 1, 1}, 2).error().detail.find("at least that many") != std::string::npos);
}
