#include <catch2/catch.hpp>

#include "inventory/stack_counters.hpp"

using namespace rxtune;

namespace {

// Shapes of kernel 6.x's files, shortened to the columns that matter plus a gauge (MaxConn -1).
const char* kSnmp =
    "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers\n"
    "Ip: 2 64 5000 0 0 7 0 3 4990\n"
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens InSegs OutSegs\n"
    "Tcp: 1 200 120000 -1 14 2 1000 900\n"
    "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n"
    "Udp: 200 50 40 30 40 0 0 0 0\n"
    "UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n"
    "UdpLite: 1 1 1 0 0 0 0 0 0\n";
const char* kSnmp6 =
    "Ip6InReceives                   \t100\n"
    "Ip6InDiscards                   \t2\n"
    "Ip6OutForwDatagrams             \t5\n"
    "Udp6InDatagrams                 \t20\n"
    "Udp6NoPorts                     \t4\n"
    "Udp6InErrors                    \t6\n";
const char* kNetstat =
    "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPBacklogDrop TCPRcvQDrop\n"
    "TcpExt: 0 8 9 10 11\n"
    "IpExt: InNoRoutes InOctets\n"
    "IpExt: 0 123456\n";

}  // namespace

TEST_CASE("stack counters: delivered and lost from snmp, snmp6 and netstat", "[stack]") {
    auto c = stackCounters(kSnmp, kSnmp6, kNetstat);
    REQUIRE(c);
    // TCP InSegs 1000 + UDP 200 read + 50 no port + UdpLite 1 + 1 + forwarded 7; v6: 20 + 4 + 5 forwarded.
    CHECK(c->delivered == 1000 + 200 + 50 + 1 + 1 + 7 + 20 + 4 + 5);
    // UDP InErrors 40 (RcvbufErrors are part of them) + UdpLite 1 + Ip InDiscards 3; v6 6 + 2;
    // TcpExt ListenDrops 9 (ListenOverflows are part of them) + backlog 10 + receive queue 11.
    CHECK(c->lost == 40 + 1 + 3 + 6 + 2 + 9 + 10 + 11);
}

TEST_CASE("stack counters: IPv6 off (no snmp6) and a kernel without some counters", "[stack]") {
    auto c = stackCounters(kSnmp, "", "");
    REQUIRE(c);
    CHECK(c->delivered == 1000 + 200 + 50 + 1 + 1 + 7);
    CHECK(c->lost == 40 + 1 + 3);
}

TEST_CASE("stack counters: malformed files are errors naming file and line", "[stack]") {
    auto missingValues = stackCounters("Ip: Forwarding\n", "", "");
    REQUIRE_FALSE(missingValues);
    CHECK(missingValues.error().message().find("/proc/net/snmp line 1") != std::string::npos);
    auto mismatch = stackCounters("Udp: InDatagrams NoPorts\nUdp: 1\n", "", "");
    REQUIRE_FALSE(mismatch);
    CHECK(mismatch.error().message().find("2 names and 1 values") != std::string::npos);
    auto notNumber = stackCounters("Udp: InDatagrams\nUdp: x\n", "", "");
    REQUIRE_FALSE(notNumber);
    CHECK(notNumber.error().message().find("'x' is not a number") != std::string::npos);
    auto noUdp = stackCounters("Ip: Forwarding\nIp: 1\n", "", "");
    REQUIRE_FALSE(noUdp);
    CHECK(noUdp.error().message().find("no Ip, Tcp or Udp counters") != std::string::npos);
    auto bad6 = stackCounters(kSnmp, "Udp6InDatagrams\n", "");
    REQUIRE_FALSE(bad6);
    CHECK(bad6.error().message().find("/proc/net/snmp6 line 1") != std::string::npos);
    auto swapped = stackCounters("Ip: Forwarding\nTcp: 1\n", "", "");
    REQUIRE_FALSE(swapped);
}
