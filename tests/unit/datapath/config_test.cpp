#include <catch2/catch.hpp>

#include "config.hpp"

using namespace rxtune;
using namespace rxtune::dp;

namespace {

std::string errorOf(const std::string& yaml, const CpuSet& cpus = CpuSet::range(0, 3)) {
    auto c = parseDpConfig(yaml, "dp.yaml");
    if (!c) return c.error().message();
    auto ok = validateDpConfig(*c, cpus);
    return ok ? "" : ok.error().message();
}

}  // namespace

TEST_CASE("datapath config: a full file parses and validates") {
    auto c = parseDpConfig(R"(
eal: [--no-huge, -m, "256"]
file_prefix: gw1
nic: {device: "net_af_packet0,iface=eth1", fix_checksums: true}
rx_cpu: 0
workers: {cpus: [1, 2, 3], weights: [1, 1, 2]}
tap: {name: gw0, mac: "02:00:00:00:00:01", addresses: [10.0.0.1/24, "fd00::1/64"]}
ring_size: 2048
burst: 64
reta_size: 256
tx_mode: lock
idle_sleep_us: 20
)", "dp.yaml");
    REQUIRE(c);
    REQUIRE(validateDpConfig(*c, CpuSet::range(0, 3)));
    CHECK(c->nic == "net_af_packet0,iface=eth1");
    CHECK(c->fixChecksums);
    CHECK(c->workerCpus == std::vector<unsigned>{1, 2, 3});
    CHECK(c->weights == std::vector<unsigned>{1, 1, 2});
    CHECK(c->tapAddresses.size() == 2);
    CHECK(c->txMode == TxMode::kLock);
    CHECK(c->eal == std::vector<std::string>{"--no-huge", "-m", "256"});
}

TEST_CASE("datapath config: defaults fill from the CPUs this process may use") {
    auto c = parseDpConfig("nic: {device: net_null0}\n", "dp.yaml");
    REQUIRE(c);
    REQUIRE(validateDpConfig(*c, CpuSet::of({2, 5, 7})));
    CHECK(*c->rxCpu == 2);
    CHECK(c->workerCpus == std::vector<unsigned>{5, 7});
    CHECK(c->weights == std::vector<unsigned>{1, 1});
    CHECK(c->tapMac == stableMac("rxdp0"));
    auto one = parseDpConfig("nic: {device: net_null0}\n", "dp.yaml");
    REQUIRE(validateDpConfig(*one, CpuSet::of({3})));
    CHECK(one->workerCpus == std::vector<unsigned>{3});  // one CPU: the worker shares it
}

TEST_CASE("datapath config: the TAP's default MAC is stable and locally administered") {
    CHECK(stableMac("gw0") == stableMac("gw0"));
    CHECK(stableMac("gw0") != stableMac("gw1"));
    auto mac = parseMac(stableMac("gw0"));
    REQUIRE(mac);
    CHECK(((*mac)[0] & 0x02) != 0);
    CHECK(((*mac)[0] & 0x01) == 0);
}

TEST_CASE("datapath config: bad input names file, line, column and key") {
    CHECK(errorOf("nic: {device: net_null0}\nworkerz: 2\n") == "dp.yaml:2:1: workerz: unknown key (expected one of: burst, eal, "
                                                              "file_prefix, idle_sleep_us, mbufs, nic, reta_size, ring_size, "
                                                              "rx_cpu, tap, tx_mode, workers)");
    CHECK(errorOf("nic: {device: net_null0}\nburst: lots\n").find("dp.yaml:2:8: burst: expected an integer from 1 to 256, got 'lots'") == 0);
    CHECK(errorOf("nic: {device: net_null0}\ntx_mode: fast\n").find("dp.yaml:2:10: tx_mode: expected ring or lock") == 0);
    CHECK(errorOf("nic: {device: net_null0, fix_checksums: yes}\n").find("nic.fix_checksums: expected true or false") != std::string::npos);
    CHECK(errorOf("nic: {device: net_null0}\ntap: {mac: \"01:00:00:00:00:01\"}\n").find("tap.mac: ") != std::string::npos);
    CHECK(errorOf("nic: {device: net_null0}\ntap: {addresses: [10.0.0.1]}\n").find("tap.addresses: expected an address with a prefix length") != std::string::npos);
    CHECK(errorOf("nic: {device: net_null0}\ntap: {name: \"a/b\"}\n").find("tap.name") != std::string::npos);
    CHECK(errorOf("nic: [\n").find("dp.yaml:") == 0);
}

TEST_CASE("datapath config: a CPU this process may not use is refused") {
    CHECK(errorOf("nic: {device: net_null0}\nworkers: {cpus: [1, 9]}\n") ==
          "config workers.cpus: CPU 9 is not one this process may use (allowed: 0-3; see its cpuset)");
    CHECK(errorOf("nic: {device: net_null0}\nrx_cpu: 4\n").find("config rx_cpu: CPU 4") == 0);
}

TEST_CASE("datapath config: counts and sizes are checked against each other") {
    CHECK(errorOf("tap: {name: rxdp0}\n").find("config nic.device: no NIC port") == 0);
    CHECK(errorOf("nic: {device: net_af_packet0}\n").find("needs iface=") != std::string::npos);
    CHECK(errorOf("nic: {device: net_null0}\nworkers: {cpus: [1, 2], weights: [1]}\n").find("1 weights for 2 workers") != std::string::npos);
    CHECK(errorOf("nic: {device: net_null0}\nring_size: 1000\n").find("power of two") != std::string::npos);
    CHECK(errorOf("nic: {device: net_null0}\nreta_size: 3\n").find("power of two") != std::string::npos);
    CHECK(errorOf("nic: {device: \"net_af_packet0,iface=gw0\"}\ntap: {name: gw0}\n").find("cannot have the NIC interface's name") != std::string::npos);
    CHECK(errorOf("nic: {device: net_null0}\nworkers: {cpus: []}\n").find("expected 1 to 16 CPUs") != std::string::npos);
}

TEST_CASE("datapath config: device strings") {
    CHECK(kernelInterfaceOf("net_af_packet0,iface=veth1,qpairs=1") == "veth1");
    CHECK(kernelInterfaceOf("net_af_xdp0,iface=eth2") == "eth2");
    CHECK_FALSE(kernelInterfaceOf("0000:03:00.0"));
    CHECK(portNameOf("net_af_packet0,iface=veth1") == "net_af_packet0");
    CHECK(portNameOf("0000:03:00.0") == "0000:03:00.0");
    CHECK(isVdev("net_null0"));
    CHECK_FALSE(isVdev("0000:03:00.0"));
}

TEST_CASE("datapath config: the shared YAML rules (empty file, duplicate keys, booleans)") {
    CHECK(errorOf("") == "dp.yaml: empty configuration (no settings at all: a truncated write or a wrong path?)");
    CHECK(errorOf("nic: {device: net_null0}\nburst: 32\nburst: 64\n") ==
          "dp.yaml:3:1: burst: duplicate key: already given on line 2 (a key may appear once in a mapping)");
    CHECK(errorOf("nic:\n  device: net_null0\n  device: net_null1\n").find("dp.yaml:3:3: nic.device: duplicate key") == 0);
    CHECK(errorOf("nic: {device: net_null0, fix_checksums: on}\n").find("nic.fix_checksums: expected true or false, got 'on'") != std::string::npos);
}
