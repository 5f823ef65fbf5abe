#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "bpf/softirq_accounting.hpp"
#include "inventory/softnet.hpp"
#include "support.hpp"

using namespace rxtune;
using namespace rxtune::itest;

namespace {

std::map<unsigned, std::uint64_t> procNetRx() {
    std::ifstream in("/proc/softirqs");
    std::stringstream ss;
    ss << in.rdbuf();
    return parseNetRxSoftirqs(ss.str()).value();
}

}  // namespace

TEST_CASE("the feature probe says the softirq program is available here", "[integration][bpf]") {
    requireRoot();
    auto p = probeSoftirqAccounting();
    INFO(p.reason);
    CHECK(p.state == BpfAvailability::kAvailable);
}

TEST_CASE("BPF NET_RX counts agree with /proc/softirqs over the same window", "[integration][bpf]") {
    NetNs ns;
    ns.ip({"link", "add", "a0", "type", "veth", "peer", "name", "b0"});
    ns.ip({"addr", "add", "10.231.0.1/24", "dev", "a0"});
    ns.ip({"addr", "add", "10.231.0.2/24", "dev", "b0"});
    ns.ip({"link", "set", "a0", "up"});
    ns.ip({"link", "set", "b0", "up"});

    auto acc = SoftirqAccounting::load();
    INFO((acc ? std::string() : acc.error().message()));
    REQUIRE(acc);
    auto bpfBefore = (*acc)->read().value();
    auto procBefore = procNetRx();
    // 3000 UDP datagrams between the namespace's own addresses: each one is received in NET_RX.
    Run load = ns.exec({"python3", "-c",
                        "import socket\n"
                        "r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(('10.231.0.2', 9999))\n"
                        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                        "for i in range(3000):\n"
                        "    s.sendto(b'x' * 64, ('10.231.0.2', 9999)); r.recv(100)\n"});
    INFO(load.out << load.err);
    REQUIRE(load.status == 0);
    auto bpfAfter = (*acc)->read().value();
    auto procAfter = procNetRx();

    std::uint64_t totalProc = 0, totalBpf = 0, polls = 0, ns_ = 0;
    for (const auto& [cpu, after] : procAfter) {
        const std::uint64_t dProc = after - procBefore[cpu];
        const std::uint64_t dBpf = bpfAfter[cpu].netRxCount - bpfBefore[cpu].netRxCount;
        INFO("cpu " << cpu << ": /proc/softirqs " << dProc << ", bpf " << dBpf);
        // Both count the same handle_softirqs() runs; only runs straddling the two reads differ.
        const std::uint64_t slack = 3 + dProc / 50;
        CHECK(dBpf + slack >= dProc);
        CHECK(dBpf <= dProc + slack);
        totalProc += dProc;
        totalBpf += dBpf;
        polls += bpfAfter[cpu].napiPolls - bpfBefore[cpu].napiPolls;
        ns_ += bpfAfter[cpu].netRxNs - bpfBefore[cpu].netRxNs;
    }
    CHECK(totalProc >= 1000);  // the flood really went through NET_RX
    CHECK(totalBpf > 0);
    CHECK(polls > 0);
    CHECK(ns_ > 0);
}
