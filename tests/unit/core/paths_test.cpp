#include <catch2/catch.hpp>

#include "core/paths.hpp"

using namespace rxtune;

TEST_CASE("interface names follow the kernel's rules", "[paths]") {
    CHECK(validateIfName("eth0"));
    CHECK(validateIfName("enp2s0f1np1"));
    CHECK(validateIfName("a-b_c.d@e"));
    CHECK(validateIfName("123456789012345"));
    CHECK_FALSE(validateIfName(""));
    CHECK_FALSE(validateIfName("1234567890123456"));
    CHECK_FALSE(validateIfName("."));
    CHECK_FALSE(validateIfName(".."));
    CHECK_FALSE(validateIfName("a/b"));
    CHECK_FALSE(validateIfName("../etc"));
    CHECK_FALSE(validateIfName("eth0:1"));
    CHECK_FALSE(validateIfName("eth 0"));
    auto e = validateIfName("a/b");
    REQUIRE_FALSE(e);
    CHECK(e.error().message() == "interface name 'a/b': contains '/'");
}

TEST_CASE("sysctl keys are validated and mapped to procfs", "[paths]") {
    CHECK(validateSysctlKey("net.core.rmem_max"));
    CHECK_FALSE(validateSysctlKey("net..core"));
    CHECK_FALSE(validateSysctlKey("net/core"));
    CHECK_FALSE(validateSysctlKey("net.core."));
    CHECK_FALSE(validateSysctlKey("Net.core"));
    CHECK(paths::sysctl("net.ipv4.tcp_rmem") == "proc/sys/net/ipv4/tcp_rmem");
}

TEST_CASE("paths are built from parts", "[paths]") {
    CHECK(paths::queueFile("eth0", paths::QueueDir::kRx, 3, "rps_cpus") == "sys/class/net/eth0/queues/rx-3/rps_cpus");
    CHECK(paths::queueFile("eth0", paths::QueueDir::kTx, 0, "xps_cpus") == "sys/class/net/eth0/queues/tx-0/xps_cpus");
    CHECK(paths::irqFile(45, "smp_affinity_list") == "proc/irq/45/smp_affinity_list");
    CHECK(paths::cpuDir(7) == "sys/devices/system/cpu/cpu7");
}
