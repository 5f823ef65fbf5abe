#include <catch2/catch.hpp>

#include "../support/fixture.hpp"
#include "inventory/snapshot.hpp"

using namespace rxtune;

namespace {

Result<HostSnapshot> snapshotOf(const std::filesystem::path& root, const std::vector<std::string>& only = {}) {
    FileTree fs(root.string());
    test::FakeNetlink nl(root);
    return takeSnapshot(fs, nl, only);
}

// (A C string, not a std::string: GCC 14 takes a reference returned from a call given a temporary
// string for a dangling one, -Wdangling-reference.)
const Nic& nicNamed(const HostSnapshot& s, const char* name) {
    for (const auto& n : s.nics)
        if (n.name == name) return n;
    throw std::runtime_error(std::string("no nic ") + name);
}

const SysctlValue& sysctl(const Topology& t, const std::string& key) {
    for (const auto& v : t.sysctls)
        if (v.key == key) return v;
    throw std::runtime_error("no sysctl " + key);
}

}  // namespace

TEST_CASE("the story's 20-CPU gateway with a one-queue NIC", "[inventory]") {
    auto s = snapshotOf(test::fixtureRoot("story-20cpu-single-queue"));
    REQUIRE(s);
    const auto& h = s->host;
    CHECK(h.online == CpuSet::range(0, 19));
    CHECK(h.isolated.empty());
    CHECK(h.nohzFull.empty());  // "(null)" when nohz_full is not configured
    CHECK(h.numaNodes.size() == 1);
    CHECK(h.cgroupVersion == "v2");
    CHECK(h.cgroupPath == "/system.slice/gateway.service");
    CHECK(h.cgroupCpus == CpuSet::range(0, 19));
    CHECK(h.llc.empty());  // no cacheinfo in its sysfs: nothing claimed
    CHECK(h.cgroupCpusSource.ends_with("sys/fs/cgroup/cpuset.cpus.effective"));  // walked up to the root
    CHECK(h.cpufreq);
    CHECK(h.governors.at(7) == "powersave");
    CHECK(h.availableGovernors == std::vector<std::string>{"performance", "powersave"});
    CHECK(h.initialNetns);
    CHECK(sysctl(h, "net.core.netdev_max_backlog").value == "1000");
    CHECK(sysctl(h, "net.ipv4.tcp_rmem").value == "4096 131072 6291456");

    const auto& nic = nicNamed(*s, "enp2s0");
    CHECK(nic.kind == "physical");
    CHECK(nic.driver.driver == "r8169");
    CHECK(nic.speedMbps == 2500);
    CHECK_FALSE(nic.channels.supported);
    CHECK(nic.channels.error == "Operation not supported");
    CHECK(nic.rx.size() == 1);
    CHECK(nic.rx[0].rpsCpus.empty());
    REQUIRE(nic.irqs.size() == 1);
    CHECK(nic.irqs[0].number == 45);
    CHECK(nic.irqs[0].affinity == CpuSet::range(0, 19));
    CHECK(nic.irqs[0].effective == CpuSet::of({3}));
    CHECK(nic.irqs[0].total == 987654321);
    CHECK(nic.numaNode == -1);
    CHECK(nic.verdict == Verdict::kSingleQueue);
    CHECK(nicNamed(*s, "lo").kind == "loopback");
    CHECK(nicNamed(*s, "lo").verdict == Verdict::kVirtual);
}

TEST_CASE("a 2-NUMA host with a multi-queue NIC inside a v1 cpuset", "[inventory]") {
    auto s = snapshotOf(test::fixtureRoot("numa2-multi-queue"));
    REQUIRE(s);
    const auto& h = s->host;
    CHECK(h.numaNodes.at(0) == CpuSet::range(0, 7));
    CHECK(h.numaNodes.at(1) == CpuSet::range(8, 15));
    CHECK(h.smtSiblings.at(4) == CpuSet::of({4, 5}));
    // The last-level cache is the highest data/unified level (L3 here, per node), not L1i or L2.
    CHECK(h.llc.at(4) == CpuSet::range(0, 7));
    CHECK(h.llc.at(9) == CpuSet::range(8, 15));
    CHECK(h.cgroupVersion == "v1");
    CHECK(h.cgroupPath == "/docker/abc123");
    CHECK(h.cgroupCpus == CpuSet::range(8, 15));  // containers lie about CPUs; the cpuset does not
    // ... and the cpu controller says how much time: 2 CPUs' worth for 8 CPUs.
    CHECK(h.cgroupCpuPath == "/docker/abc123");
    REQUIRE(h.cgroupQuota.limited);
    CHECK(h.cgroupQuota.cpus == Approx(2.0));
    CHECK(h.cgroupQuota.quotaUs == 200000);
    CHECK(h.cgroupQuota.source.ends_with("sys/fs/cgroup/cpu,cpuacct/docker/abc123/cpu.cfs_quota_us"));
    CHECK(describe(h.cgroupQuota, h.cgroupCpus.count()).find("far below its cpuset's 8 CPUs") != std::string::npos);
    const auto& nic = nicNamed(*s, "ens1f0");
    CHECK(nic.numaNode == 1);
    CHECK(nic.rx.size() == 8);
    CHECK(nic.channels.combined == 8);
    CHECK(nic.channels.maxCombined == 16);
    CHECK(nic.channels.canRaise());
    REQUIRE(nic.irqs.size() == 8);
    CHECK(nic.irqs[2].name == "mlx5_comp2@pci:0000:3b:00.0");
    CHECK(nic.irqs[2].role == "rxtx");
    CHECK(nic.irqs[2].affinity == CpuSet::of({10}));
    CHECK(nic.verdict == Verdict::kMultiQueue);
}

TEST_CASE("isolated CPUs and a non-initial network namespace", "[inventory]") {
    auto s = snapshotOf(test::fixtureRoot("isolated-cpus-netns"));
    REQUIRE(s);
    const auto& h = s->host;
    CHECK(h.isolated == CpuSet::of({2, 3}));
    CHECK(h.nohzFull == CpuSet::of({2, 3}));
    CHECK_FALSE(h.initialNetns);
    CHECK_FALSE(sysctl(h, "net.core.netdev_max_backlog").present);
    CHECK(sysctl(h, "net.core.netdev_max_backlog").hostGlobal);
    CHECK(sysctl(h, "net.core.rmem_max").present);
    const auto& veth = nicNamed(*s, "veth0");
    CHECK(veth.kind == "veth");
    CHECK(veth.rx.size() == 4);
    CHECK(veth.rx[1].rpsCpus == CpuSet::of({0, 1}));
    CHECK(veth.rx[1].rpsFlowCnt == 4096);
    CHECK(veth.tx[0].xpsCpus == CpuSet::of({0}));
    CHECK(veth.verdict == Verdict::kVirtual);
    const auto& tap = nicNamed(*s, "tap0");
    CHECK(tap.kind == "tap");
    REQUIRE(tap.tx.size() == 2);
    CHECK_FALSE(tap.tx[0].xpsCpus.has_value());
    CHECK_FALSE(tap.tx[0].xpsError.empty());
}

TEST_CASE("a VM without cpufreq or NUMA in sysfs", "[inventory]") {
    auto s = snapshotOf(test::fixtureRoot("vm-no-cpufreq"));
    REQUIRE(s);
    const auto& h = s->host;
    CHECK_FALSE(h.cpufreq);
    CHECK(h.governors.empty());
    CHECK(h.numaNodes.at(0) == CpuSet::range(0, 3));
    CHECK(h.cgroupCpus == CpuSet::range(0, 3));
    CHECK(h.cgroupCpusSource == "online");
    const auto& eth = nicNamed(*s, "eth0");
    CHECK(eth.channels.supported);
    CHECK_FALSE(eth.channels.canRaise());
    REQUIRE(eth.irqs.size() == 2);
    CHECK(eth.irqs[0].role == "rx");
    CHECK(eth.irqs[1].role == "tx");
    CHECK(eth.verdict == Verdict::kSingleQueue);
}

TEST_CASE("only the interfaces asked for; an unknown one is an error", "[inventory]") {
    auto root = test::fixtureRoot("vm-no-cpufreq");
    auto s = snapshotOf(root, {"eth0"});
    REQUIRE(s);
    REQUIRE(s->nics.size() == 1);
    CHECK(s->nics[0].name == "eth0");
    auto e = snapshotOf(root, {"wlan9"});
    REQUIRE_FALSE(e);
    CHECK(e.error().code == ENODEV);
    CHECK(e.error().message().find("wlan9") != std::string::npos);
}

TEST_CASE("garbage in sysfs or procfs names the device and the path", "[inventory]") {
    struct Case {
        const char* file;
        const char* garbage;
        const char* mustMention;
    };
    const Case cases[] = {
        {"sys/class/net/eth0/queues/rx-0/rps_cpus", "zz,top\n", "eth0/queues/rx-0/rps_cpus"},
        {"sys/class/net/eth0/queues/rx-0/rps_flow_cnt", "many\n", "rx-0/rps_flow_cnt"},
        {"proc/irq/38/smp_affinity_list", "0-\n", "proc/irq/38/smp_affinity_list"},
        {"proc/interrupts", "garbage\n", "proc/interrupts"},
        {"sys/devices/system/cpu/online", "all of them\n", "sys/devices/system/cpu/online"},
        {"sys/devices/system/cpu/isolated", "2-1\n", "cpu/isolated"},
        {"proc/self/cgroup", "nonsense\n", "proc/self/cgroup"},
        {"sys/class/net/eth0/device/numa_node", "north\n", "device/numa_node"},
        {"sys/devices/system/cpu/cpu0/cache/index0/level", "top\n", "cpu0/cache/index0/level"},
        {"sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list", "0-\n", "cpu0/cache/index0/shared_cpu_list"},
    };
    for (const auto& c : cases) {
        INFO(c.file);
        test::TempTree tmp("vm-no-cpufreq");
        if (std::string(c.file).find("/cache/") != std::string::npos) {  // a cache index needs all three files
            tmp.put("sys/devices/system/cpu/cpu0/cache/index0/level", "3\n");
            tmp.put("sys/devices/system/cpu/cpu0/cache/index0/type", "Unified\n");
            tmp.put("sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list", "0\n");
        }
        tmp.put(c.file, c.garbage);
        auto s = snapshotOf(tmp.path());
        REQUIRE_FALSE(s);
        const std::string msg = s.error().message();
        INFO(msg);
        CHECK(msg.find(c.mustMention) != std::string::npos);
        if (std::string(c.file).starts_with("sys/class/net/eth0") || std::string(c.file).starts_with("proc/irq"))
            CHECK(msg.find("interface eth0") != std::string::npos);
    }
}

TEST_CASE("XPS is read where there is more than one TX queue to choose from", "[inventory]") {
    SECTION("garbage in a multi-queue device's xps_cpus names the device and the path") {
        test::TempTree tmp("numa2-multi-queue");
        tmp.put("sys/class/net/ens1f0/queues/tx-3/xps_cpus", "g\n");
        auto s = snapshotOf(tmp.path());
        REQUIRE_FALSE(s);
        CHECK(s.error().message().find("ens1f0/queues/tx-3/xps_cpus") != std::string::npos);
        CHECK(s.error().message().find("interface ens1f0") != std::string::npos);
    }
    SECTION("one TX queue: the kernel never consults XPS there, so it is not read") {
        test::TempTree tmp("vm-no-cpufreq");
        tmp.put("sys/class/net/eth0/queues/tx-0/xps_cpus", "g\n");
        auto s = snapshotOf(tmp.path());
        REQUIRE(s);
        const auto& eth = nicNamed(*s, "eth0");
        REQUIRE(eth.tx.size() == 1);
        CHECK_FALSE(eth.tx[0].xpsCpus.has_value());
        CHECK(eth.tx[0].xpsError == "one TX queue: not used");
    }
}

TEST_CASE("cgroup v2 CPU quota: the tightest level on the path counts", "[inventory]") {
    auto root = test::fixtureRoot("story-20cpu-single-queue");
    auto s = snapshotOf(root);
    REQUIRE(s);
    const auto& q = s->host.cgroupQuota;
    REQUIRE(q.limited);
    CHECK(q.cpus == Approx(4.0));  // the slice's 400000/100000; the service itself says max
    CHECK(q.source.ends_with("sys/fs/cgroup/system.slice/cpu.max"));
    FileTree fs(root.string());
    auto other = cgroupQuota(fs, s->host, "/user.slice");  // not there: nothing limits it
    REQUIRE(other);
    CHECK_FALSE(other->limited);
    CHECK(describe(*other, 20) == "none (no CFS bandwidth limit on the cgroup's path)");
    CHECK_FALSE(cgroupQuota(fs, s->host, "/../etc"));
    // A VM's root cgroup: no limit.
    auto vm = snapshotOf(test::fixtureRoot("vm-no-cpufreq"));
    REQUIRE(vm);
    CHECK_FALSE(vm->host.cgroupQuota.limited);
}

TEST_CASE("a channels dump the kernel refuses, or a device's channels question it refuses, leave the snapshot whole", "[inventory]") {
    const auto root = test::fixtureRoot("story-20cpu-single-queue");
    FileTree fs(root.string());
    test::FakeNetlink nl(root);
    // Debian 12's 6.1 answered the dump with EINVAL: each device is asked on its own instead.
    nl.dumpErrno = EINVAL;
    auto s = takeSnapshot(fs, nl, {});
    REQUIRE(s);
    CHECK(nl.dumps == 1);
    CHECK(nicNamed(*s, "enp2s0").channels.error == "Operation not supported");
    CHECK(nicNamed(*s, "enp2s0").driver.driver == "r8169");
    // A device whose question is refused too: unavailable, with the kernel's answer; the rest read.
    nl.channelsErrno["enp2s0"] = EINVAL;
    s = takeSnapshot(fs, nl, {});
    REQUIRE(s);
    const auto& nic = nicNamed(*s, "enp2s0");
    CHECK_FALSE(nic.channels.supported);
    CHECK(nic.channels.error.find("ethtool CHANNELS_GET") != std::string::npos);
    CHECK(nic.channels.error.find("Invalid argument") != std::string::npos);
    CHECK(nic.irqs.size() == 1);
    CHECK(nic.verdict == Verdict::kSingleQueue);
    // A device that is gone is still an error (an event follows; the caller knows what to skip).
    nl.channelsErrno["enp2s0"] = ENODEV;
    CHECK_FALSE(takeSnapshot(fs, nl, {}));
}

TEST_CASE("a virtio-mmio NIC (a microVM's, arm64 virt's): its one interrupt, named after the virtio device, is found as rxtx",
          "[inventory]") {
    for (const bool arm64 : {false, true}) {
        INFO((arm64 ? "arm64 GICv3" : "x86 microvm IO-APIC"));
        test::TempTree tmp("vm-no-cpufreq");
        namespace fs = std::filesystem;
        // sysfs as the kernel lays it out: the net device under the virtio device under the
        // platform device, no PCI function, no msi_irqs.
        fs::remove_all(tmp.path() / "sys/class/net/eth0/device");
        const std::string platform = arm64 ? "a003e00.virtio_mmio" : "LNRO0005:00";
        fs::create_directories(tmp.path() / "sys/devices/platform" / platform / "virtio0");
        fs::create_directories(tmp.path() / "sys/bus/virtio");
        fs::create_symlink("../../../../bus/virtio", tmp.path() / "sys/devices/platform" / platform / "virtio0/subsystem");
        fs::create_symlink("../../../devices/platform/" + platform + "/virtio0", tmp.path() / "sys/class/net/eth0/device");
        tmp.put("proc/interrupts", std::string("           CPU0       CPU1       CPU2       CPU3       \n") +
                                       (arm64 ? " 13:        412          0          0          0     GICv3  79 Edge      virtio0\n"
                                              : " 49:          0         12          0          0   IO-APIC  23-fasteoi   virtio0\n") +
                                       " 50:          3          0          0          0   IO-APIC  22-fasteoi   virtio1\n");
        const unsigned irq = arm64 ? 13 : 49;
        tmp.put("proc/irq/" + std::to_string(irq) + "/smp_affinity_list", "0-3\n");
        tmp.put("proc/irq/" + std::to_string(irq) + "/effective_affinity_list", arm64 ? "0\n" : "1\n");
        auto s = snapshotOf(tmp.path());
        REQUIRE(s);
        const auto& eth = nicNamed(*s, "eth0");
        REQUIRE(eth.irqs.size() == 1);  // virtio1 (another virtio device, a disk) is not its
        CHECK(eth.irqs[0].number == irq);
        CHECK(eth.irqs[0].name == "virtio0");
        CHECK(eth.irqs[0].role == "rxtx");
        CHECK(eth.irqs[0].affinity.toList() == "0-3");
    }
}
