#include <catch2/catch.hpp>

#include "../support/yaml_bomb.hpp"
#include "config.hpp"

using namespace rxtune;
using namespace rxtune::dp;

namespace {

std::string dpConfigErrorOf(const std::string& yaml, const CpuSet& cpus = CpuSet::range(0, 3)) {
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
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nworkerz: 2\n") == "dp.yaml:2:1: workerz: unknown key (expected one of: burst, eal, "
                                                              "file_prefix, idle_sleep_us, mbufs, nic, prefetch_next_mbufs, reta_size, ring_size, "
                                                              "rx_cpu, tap, tx_mode, workers)");
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nburst: lots\n").find("dp.yaml:2:8: burst: expected an integer from 1 to 256, got 'lots'") == 0);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntx_mode: fast\n").find("dp.yaml:2:10: tx_mode: expected lock or ring") == 0);
    CHECK(dpConfigErrorOf("nic: {device: net_null0, fix_checksums: yes}\n").find("nic.fix_checksums: expected true or false") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {mac: \"01:00:00:00:00:01\"}\n").find("tap.mac: ") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {addresses: [10.0.0.1]}\n").find("tap.addresses: expected an address with a prefix length") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {name: \"a/b\"}\n").find("tap.name") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: [\n").find("dp.yaml:") == 0);
}

TEST_CASE("datapath config: a CPU this process may not use is refused") {
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nworkers: {cpus: [1, 9]}\n") ==
          "config workers.cpus: CPU 9 is not one this process may use (allowed: 0-3; see its cpuset)");
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nrx_cpu: 4\n").find("config rx_cpu: CPU 4") == 0);
}

TEST_CASE("datapath config: counts and sizes are checked against each other") {
    CHECK(dpConfigErrorOf("tap: {name: rxdp0}\n").find("config nic.device: no NIC port") == 0);
    CHECK(dpConfigErrorOf("nic: {device: net_af_packet0}\n").find("needs iface=") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nworkers: {cpus: [1, 2], weights: [1]}\n").find("1 weights for 2 workers") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nring_size: 1000\n").find("power of two") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nreta_size: 3\n").find("power of two") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: \"net_af_packet0,iface=gw0\"}\ntap: {name: gw0}\n").find("cannot have the NIC interface's name") != std::string::npos);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nworkers: {cpus: []}\n").find("expected 1 to 16 CPUs") != std::string::npos);
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
    CHECK(dpConfigErrorOf("") == "dp.yaml: empty configuration (no settings at all: a truncated write or a wrong path?)");
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nburst: 32\nburst: 64\n") ==
          "dp.yaml:3:1: burst: duplicate key: already given on line 2 (a key may appear once in a mapping)");
    CHECK(dpConfigErrorOf("nic:\n  device: net_null0\n  device: net_null1\n").find("dp.yaml:3:3: nic.device: duplicate key") == 0);
    CHECK(dpConfigErrorOf("nic: {device: net_null0, fix_checksums: on}\n").find("nic.fix_checksums: expected true or false, got 'on'") != std::string::npos);
}

TEST_CASE("datapath config: the exception path, TAP or virtio-user over vhost-net") {
    auto cfg = [](const std::string& yaml) {
        auto c = parseDpConfig(yaml, "dp.yaml");
        REQUIRE(c);
        REQUIRE(validateDpConfig(*c, CpuSet::range(0, 3)));
        return *c;
    };
    int probes = 0;
    auto works = [&] { ++probes; return Result<void>{}; };
    auto missing = [&] { ++probes; return Result<void>(fail(ENOENT, "open", "/dev/vhost-net", "no such device node")); };
    SECTION("auto: virtio-user where vhost-net works, with one queue pair per worker and the TAP's name and MAC") {
        auto c = cfg("nic: {device: net_null0}\nworkers: {cpus: [1, 2]}\ntap: {name: gw0}\n");
        auto p = chooseExceptionPath(c, works);
        REQUIRE(p);
        CHECK(p->kind == "virtio-user");
        CHECK(p->port == "virtio_user_gw0");
        CHECK(p->vdev == "virtio_user_gw0,path=/dev/vhost-net,queues=2,queue_size=512,iface=gw0,mac=" + stableMac("gw0"));
        CHECK(p->why.find("auto") != std::string::npos);
    }
    SECTION("auto: the TAP where it does not, saying why") {
        auto c = cfg("nic: {device: net_null0}\ntap: {name: gw0}\n");
        auto p = chooseExceptionPath(c, missing);
        REQUIRE(p);
        CHECK(p->kind == "tap");
        CHECK(p->vdev == "net_tap_gw0,iface=gw0,mac=" + stableMac("gw0"));
        CHECK(p->why.find("virtio-user not possible") != std::string::npos);
        CHECK(p->why.find("/dev/vhost-net") != std::string::npos);
    }
    SECTION("tap.backend: tap never looks at vhost-net") {
        auto p = chooseExceptionPath(cfg("nic: {device: net_null0}\ntap: {backend: tap}\n"), works);
        REQUIRE(p);
        CHECK(p->kind == "tap");
        CHECK(probes == 0);
    }
    SECTION("tap.backend: virtio-user without vhost-net is an error naming both") {
        auto p = chooseExceptionPath(cfg("nic: {device: net_null0}\ntap: {backend: virtio-user, vhost_net: /dev/vhost-net}\n"), missing);
        REQUIRE_FALSE(p);
        CHECK(p.error().message().find("tap.backend") != std::string::npos);
        CHECK(p.error().message().find("/dev/vhost-net") != std::string::npos);
    }
    SECTION("tap.device: the vdev as given; a virtio-user one still needs vhost-net") {
        auto p = chooseExceptionPath(cfg("nic: {device: net_null0}\ntap: {device: net_null1}\n"), missing);
        REQUIRE(p);
        CHECK(p->kind == "device");
        CHECK(p->port == "net_null1");
        CHECK_FALSE(chooseExceptionPath(cfg("nic: {device: net_null0}\ntap: {device: \"virtio_user0,path=/dev/vhost-net\"}\n"), missing));
    }
    SECTION("bad values are refused where they are written") {
        CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {backend: vhost}\n").find("dp.yaml:2:16: tap.backend: expected auto, tap or virtio-user") != std::string::npos);
        CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {vhost_net: dev/vhost-net}\n").find("tap.vhost_net: expected an absolute path") != std::string::npos);
        CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {device: net_null1, backend: tap}\n").find("tap.backend: tap.device names the kernel side already") != std::string::npos);
    }
}

TEST_CASE("datapath config: tx_mode is lock unless ring is asked for") {
    auto mode = [](const std::string& yaml) {
        auto c = parseDpConfig(yaml, "dp.yaml");
        REQUIRE(c);
        REQUIRE(validateDpConfig(*c, CpuSet::range(0, 3)));
        return c->txMode;
    };
    CHECK(mode("nic: {device: net_null0}\n") == TxMode::kLock);
    CHECK(mode("nic: {device: net_null0}\ntx_mode: ring\n") == TxMode::kRing);
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntx_mode: both\n").find("dp.yaml:2:10: tx_mode: expected lock or ring, got 'both'") != std::string::npos);
}

TEST_CASE("datapath config: workers outside the RX core's last-level cache are named") {
    auto c = parseDpConfig("nic: {device: net_null0}\nrx_cpu: 1\nworkers: {cpus: [2, 9, 12]}\n", "dp.yaml");
    REQUIRE(c);
    REQUIRE(validateDpConfig(*c, CpuSet::range(0, 15)));
    CHECK(workersAcrossLlc(*c, CpuSet::range(0, 7)) == CpuSet::of({9, 12}));
    const std::string w = acrossLlcWarning(*c, CpuSet::range(0, 7));
    INFO(w);
    CHECK(w.find("workers on CPUs 9,12 do not share the RX core's last-level cache (CPU 1 shares it with 0-7)") == 0);
    CHECK(acrossLlcWarning(*c, CpuSet::range(0, 15)).empty());
    // No cacheinfo: unknown, so nothing is claimed.
    CHECK(workersAcrossLlc(*c, CpuSet{}).empty());
    CHECK(acrossLlcWarning(*c, CpuSet{}).empty());
}

TEST_CASE("datapath config: prefetch_next_mbufs resolves against the host's caches and CPU") {
    auto c = parseDpConfig("nic: {device: net_null0}\nrx_cpu: 1\nworkers: {cpus: [2, 9]}\n", "dp.yaml");
    REQUIRE(c);
    REQUIRE(validateDpConfig(*c, CpuSet::range(0, 15)));
    CHECK(c->prefetchNextMbufs == Prefetch::kAuto);
    // auto: on exactly when a worker is outside the RX core's last-level cache.
    auto across = choosePrefetch(*c, CpuSet::range(0, 7), true);
    CHECK(across.on);
    CHECK(across.why == "auto: workers on 9 do not share the RX core's last-level cache");
    auto shared = choosePrefetch(*c, CpuSet::range(0, 15), true);
    CHECK_FALSE(shared.on);
    CHECK(shared.why.find("every worker shares") != std::string::npos);
    CHECK_FALSE(choosePrefetch(*c, CpuSet{}, true).on);  // no cacheinfo: unknown, left off
    CHECK(choosePrefetch(*c, CpuSet{}, true).why.find("unknown") != std::string::npos);
    // Without PREFETCHW the prefetch would be a read: never on, even when asked.
    c->prefetchNextMbufs = Prefetch::kOn;
    CHECK(choosePrefetch(*c, CpuSet::range(0, 15), true).on);
    CHECK_FALSE(choosePrefetch(*c, CpuSet::range(0, 15), false).on);
    CHECK(choosePrefetch(*c, CpuSet::range(0, 15), false).why == "this CPU has no PREFETCHW");
    c->prefetchNextMbufs = Prefetch::kOff;
    CHECK_FALSE(choosePrefetch(*c, CpuSet::range(0, 7), true).on);

    for (auto [text, want] : {std::pair{"on", Prefetch::kOn}, {"true", Prefetch::kOn}, {"off", Prefetch::kOff},
                              {"false", Prefetch::kOff}, {"auto", Prefetch::kAuto}}) {
        auto p = parseDpConfig(std::string("nic: {device: net_null0}\nprefetch_next_mbufs: ") + text + "\n", "dp.yaml");
        REQUIRE(p);
        CHECK(p->prefetchNextMbufs == want);
    }
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\nprefetch_next_mbufs: sometimes\n").find(
              "dp.yaml:2:22: prefetch_next_mbufs: expected auto, on or off, got 'sometimes'") != std::string::npos);
}

TEST_CASE("datapath config: nested aliases are refused at once, and paths must be absolute") {
    for (unsigned levels : {10u, 20u})
        for (const auto& text : {test::aliasBomb(levels, "eal"), test::nestedAliasBomb(levels, "eal")}) {
            const auto e = dpConfigErrorOf(text);
            CHECK(e.rfind("dp.yaml:", 0) == 0);
            CHECK(e.find("more than 100000 nodes") != std::string::npos);
        }
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {vhost_net: ''}\n") ==
          "dp.yaml:2:18: tap.vhost_net: expected an absolute path, got an empty one");
    CHECK(dpConfigErrorOf("nic: {device: net_null0}\ntap: {vhost_net: dev/vhost-net}\n") ==
          "dp.yaml:2:18: tap.vhost_net: expected an absolute path, got 'dev/vhost-net'");
}
