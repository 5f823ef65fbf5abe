#include <catch2/catch.hpp>

#include "knobs/registry.hpp"

using namespace rxtune;

namespace {

KnobKey queue(const std::string& dev, bool tx, int q, const std::string& file) {
    KnobKey k{Family::kQueue, dev, file};
    k.queue = q;
    k.tx = tx;
    return k;
}

KnobKey irq(const std::string& dev, int n, const std::string& action) {
    KnobKey k{Family::kIrq, dev, action};
    k.queue = n;
    return k;
}

KnobKey governor(int cpu) {
    KnobKey k{Family::kGovernor, "", "governor"};
    k.cpu = cpu;
    return k;
}

}  // namespace

TEST_CASE("every family's path gives its key back, and only its own", "[knobs]") {
    const std::vector<KnobKey> keys = {
        {Family::kSysctl, "", "net.core.rmem_max"},
        {Family::kSysctl, "", "net.ipv4.tcp_rmem"},
        {Family::kDefaultMask, "", "net.core.rps_default_mask"},
        queue("eth0", false, 3, "rps_cpus"),
        queue("cpu0", false, 0, "rps_flow_cnt"),  // a device named like a CPU
        queue("sysctl", true, 11, "xps_cpus"),
        {Family::kXdp, "veth0", "steering"},
        {Family::kNapi, "va", "threaded"},
        {Family::kNapi, "va", "napi-kthreads"},
        {Family::kNapiDefer, "enp2s0", "gro_flush_timeout"},
        {Family::kNapiDefer, "enp2s0", "napi_defer_hard_irqs"},
        governor(0),
        governor(17),
        irq("enp1s0", 77, "enp1s0-TxRx-0"),
        irq("ens2f0np0", 99, "mlx5_comp0@pci:0000:3b:00.0"),
        irq("a", 5, "x irq 5 y"),  // the marker inside an action's name: the owner still comes back
        {Family::kRings, "enp3s0", "rx"},
        {Family::kRings, "enp3s0", "tx"},
    };
    std::set<std::string> paths, ids;
    for (const auto& k : keys) {
        const KnobFamily& f = familyOf(k);
        INFO(f.id(k) << " at " << f.path(k));
        CHECK(f.family() == k.family);
        CHECK(keyOfPath(f.path(k), f.id(k)) == k);
        CHECK(paths.insert(f.path(k)).second);
        CHECK(ids.insert(f.id(k)).second);
    }
    // Ids and paths as plans and journals have always shown them.
    CHECK(familyOf(Family::kQueue).id(queue("eth0", false, 3, "rps_cpus")) == "eth0 rx-3 rps_cpus");
    CHECK(familyOf(Family::kQueue).path(queue("eth0", true, 1, "xps_cpus")) == "sys/class/net/eth0/queues/tx-1/xps_cpus");
    CHECK(familyOf(Family::kGovernor).id(governor(5)) == "cpu5 governor");
    CHECK(familyOf(Family::kXdp).path({Family::kXdp, "fb", "steering"}) == "sys/fs/bpf/rxtune/fb");
    CHECK(familyOf(Family::kDefaultMask).id({}) == "sysctl net.core.rps_default_mask");
    CHECK(familyOf(Family::kIrq).id(irq("enp1s0", 77, "enp1s0-TxRx-0")) == "enp1s0 irq 77 enp1s0-TxRx-0");
    CHECK(familyOf(Family::kIrq).path(irq("enp1s0", 77, "enp1s0-TxRx-0")) == "proc/irq/77/smp_affinity_list");
    // An IRQ's number alone is not its identity: without the owner the journal entry is a plain file.
    CHECK(keyOfPath("proc/irq/77/smp_affinity_list").family == Family::kFile);
}

TEST_CASE("a path no family built is a plain file; near misses are not claimed", "[knobs]") {
    for (const char* p : {"sys/class/net/eth0/mtu", "sys/class/net/eth0/queues/rx-x/rps_cpus", "sys/class/net/eth0/queues/rx-0/other",
                          "sys/class/net/eth0/queues/rx-0/rps_cpus/more", "sys/fs/bpf/rxtune/a/b", "sys/fs/bpf/rxtune/",
                          "sys/devices/system/cpu/cpuX/cpufreq/scaling_governor", "proc/sys/", "sys/x"}) {
        INFO(p);
        const KnobKey k = keyOfPath(p);
        CHECK(k.family == Family::kFile);
        CHECK(familyOf(k).path(k) == p);
    }
}

TEST_CASE("the registry lists each family once, host-wide ones before devices' before CPUs'", "[knobs]") {
    std::set<Family> seen;
    for (const KnobFamily* f : knobFamilies()) CHECK(seen.insert(f->family()).second);
    CHECK(seen.size() == 9);
    CHECK(&familyOf(Family::kFile) == &fileFamily());
}
