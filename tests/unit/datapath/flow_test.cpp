#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "fanout.hpp"
#include "flow.hpp"

using namespace rxtune::dp;

namespace {

std::vector<uint8_t> frame(uint16_t ethertype, std::vector<uint8_t> payload, int vlans = 0) {
    std::vector<uint8_t> f = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
    for (int v = 0; v < vlans; ++v) f.insert(f.end(), {0x81, 0x00, 0x00, static_cast<uint8_t>(10 + v)});
    f.push_back(static_cast<uint8_t>(ethertype >> 8));
    f.push_back(static_cast<uint8_t>(ethertype));
    f.insert(f.end(), payload.begin(), payload.end());
    return f;
}

std::vector<uint8_t> ipv4(uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport, uint16_t dport, uint16_t frag = 0) {
    std::vector<uint8_t> p = {0x45, 0, 0, 40, 0, 1, static_cast<uint8_t>(frag >> 8), static_cast<uint8_t>(frag), 64, proto, 0, 0};
    for (uint32_t a : {src, dst})
        for (int s = 24; s >= 0; s -= 8) p.push_back(static_cast<uint8_t>(a >> s));
    p.insert(p.end(), {static_cast<uint8_t>(sport >> 8), static_cast<uint8_t>(sport), static_cast<uint8_t>(dport >> 8),
                       static_cast<uint8_t>(dport)});
    p.resize(40, 0);
    return p;
}

std::vector<uint8_t> ipv6(uint8_t srcLast, uint8_t dstLast, uint8_t proto, uint16_t sport, uint16_t dport) {
    std::vector<uint8_t> p = {0x60, 0, 0, 0, 0, 8, proto, 64};
    for (uint8_t last : {srcLast, dstLast}) {
        std::vector<uint8_t> a = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, last};
        p.insert(p.end(), a.begin(), a.end());
    }
    p.insert(p.end(), {static_cast<uint8_t>(sport >> 8), static_cast<uint8_t>(sport), static_cast<uint8_t>(dport >> 8),
                       static_cast<uint8_t>(dport), 0, 8, 0, 0});
    return p;
}

uint32_t hashOf(const std::vector<uint8_t>& f) {
    FlowTuple t;
    REQUIRE(parseFlow(f.data(), f.size(), t));
    return flowHash(t);
}

}  // namespace

TEST_CASE("flow hash: both directions of a TCP/UDP IPv4 flow hash the same") {
    for (uint16_t port = 1000; port < 1200; ++port) {
        auto fwd = frame(0x0800, ipv4(0x0a4d0001, 0x0a4d0002, 6, port, 80));
        auto rev = frame(0x0800, ipv4(0x0a4d0002, 0x0a4d0001, 6, 80, port));
        CHECK(hashOf(fwd) == hashOf(rev));
        auto ufwd = frame(0x0800, ipv4(0xc0a80001 + port, 0x08080808, 17, port, 53), 1);
        auto urev = frame(0x0800, ipv4(0x08080808, 0xc0a80001 + port, 17, 53, port), 1);
        CHECK(hashOf(ufwd) == hashOf(urev));
    }
}

TEST_CASE("flow hash: IPv6 flows are symmetric too") {
    for (uint16_t port = 40000; port < 40100; ++port)
        CHECK(hashOf(frame(0x86dd, ipv6(1, 2, 6, port, 443))) == hashOf(frame(0x86dd, ipv6(2, 1, 6, 443, port))));
}

TEST_CASE("flow hash: is the Toeplitz hash of the 5-tuple (ports count, VLAN tags do not)") {
    auto a = hashOf(frame(0x0800, ipv4(0x0a000001, 0x0a000002, 6, 1234, 80)));
    CHECK(a == hashOf(frame(0x0800, ipv4(0x0a000001, 0x0a000002, 6, 1234, 80), 2)));
    CHECK(a != hashOf(frame(0x0800, ipv4(0x0a000001, 0x0a000002, 6, 1235, 80))));
    uint32_t words[3] = {0x0a000001, 0x0a000002, (1234u << 16) | 80u};
    CHECK(a == rte_softrss(words, 3, kSymmetricRssKey));
}

TEST_CASE("flow hash: the folded table computes exactly rte_softrss, for IPv4 and IPv6 tuples") {
    uint32_t state = 12345;
    auto next = [&] { return state = state * 1103515245u + 12345u; };
    for (int i = 0; i < 20000; ++i) {
        uint32_t words[9];
        for (auto& w : words) w = next() ^ (next() << 16);
        for (uint32_t n : {2u, 3u, 8u, 9u}) CHECK(kSymmetricToeplitz(words, n) == rte_softrss(words, n, kSymmetricRssKey));
    }
}

TEST_CASE("flow hash: many flows spread evenly over the workers") {
    auto reta = *buildReta({1, 1, 1, 1}, 128);
    std::map<uint16_t, unsigned> perWorker;
    for (uint16_t port = 20000; port < 24000; ++port)
        ++perWorker[retaLookup(reta, hashOf(frame(0x0800, ipv4(0x0a4d0001, 0x0a4d0002, 6, port, 8080))))];
    REQUIRE(perWorker.size() == 4);
    for (auto [w, n] : perWorker) CHECK((n > 800 && n < 1200));  // 1000 each expected
}

TEST_CASE("flow parse: fragments hash on addresses only; non-IP and runts have no flow") {
    FlowTuple t;
    auto frag = frame(0x0800, ipv4(1, 2, 17, 5, 6, 0x2000));  // MF set
    REQUIRE(parseFlow(frag.data(), frag.size(), t));
    CHECK_FALSE(t.hasPorts);
    CHECK(t.nwords == 2);
    auto arp = frame(0x0806, std::vector<uint8_t>(28, 0));
    CHECK_FALSE(parseFlow(arp.data(), arp.size(), t));
    auto full = frame(0x0800, ipv4(1, 2, 6, 5, 6));
    for (size_t len = 0; len < 34; ++len) CHECK_FALSE(parseFlow(full.data(), len, t));  // shorter than Ethernet+IPv4
    REQUIRE(parseFlow(full.data(), 36, t));  // IP header but ports cut off
    CHECK_FALSE(t.hasPorts);
    auto icmp = frame(0x0800, ipv4(1, 2, 1, 0, 0));
    REQUIRE(parseFlow(icmp.data(), icmp.size(), t));
    CHECK_FALSE(t.hasPorts);
    auto bad = frame(0x0800, ipv4(1, 2, 6, 5, 6));
    bad[14] = 0x43;  // IHL 3: invalid
    CHECK_FALSE(parseFlow(bad.data(), bad.size(), t));
}
