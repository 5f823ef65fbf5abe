#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../support/skips.hpp"
#include "support.hpp"

using nlohmann::json;
using namespace rxtune::itest;

namespace {

// (A C string, not a std::string: GCC 14 takes a reference returned from a call given a temporary
// string for a dangling one, -Wdangling-reference.)
const json& findIface(const json& doc, const char* name) {
    for (const auto& i : doc["interfaces"])
        if (i["name"] == name) return i;
    throw std::runtime_error(std::string("detect did not report ") + name);
}

}  // namespace

TEST_CASE("detect reports exactly the devices a test namespace holds", "[integration][detect]") {
    NetNs ns;
    ns.ip({"link", "add", "v0", "numtxqueues", "3", "numrxqueues", "4", "type", "veth", "peer", "name", "v1",
           "numtxqueues", "1", "numrxqueues", "1"});
    ns.ip({"link", "set", "v0", "up"});
    ns.ip({"link", "set", "v1", "up"});
    ns.ip({"link", "set", "v0", "mtu", "9000"});
    TapQueues mq(ns, "mq0", 4);
    TapQueues sq(ns, "sq0", 1);
    ns.sysfsWrite("class/net/v0/queues/rx-1/rps_cpus", "1");
    ns.sysfsWrite("class/net/v0/queues/rx-1/rps_flow_cnt", "256");
    const std::string before = ns.sysfsRead("class/net/v0/queues/rx-0/rps_cpus");

    Run r = ns.exec({rxtuneBin(), "detect", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    json doc = json::parse(r.out);

    std::set<std::string> names;
    for (const auto& i : doc["interfaces"]) names.insert(i["name"]);
    CHECK(names == std::set<std::string>{"lo", "v0", "v1", "mq0", "sq0"});

    const auto& v0 = findIface(doc, "v0");
    CHECK(v0["kind"] == "veth");
    CHECK(v0["mtu"] == 9000);
    CHECK(v0["operstate"] == "up");
    CHECK(v0["queues"]["rx"] == 4);
    CHECK(v0["queues"]["tx"] == 3);
    CHECK(v0["queues"]["rtnl_num_rx"] == 4);
    CHECK(v0["driver"]["name"] == "veth");
    CHECK(v0["channels"]["supported"] == true);
    CHECK(v0["channels"]["source"] == "ethtool-netlink");
    CHECK(v0["channels"]["max_rx"] == 4);
    CHECK(v0["channels"]["rx"] == 4);
    CHECK(v0["rx_queues"][1]["rps_cpus"] == "0");
    CHECK(v0["rx_queues"][1]["rps_flow_cnt"] == 256);
    CHECK(v0["rx_queues"][0]["rps_cpus"] == "");
    CHECK(v0["verdict"] == "virtual");

    const auto& v1 = findIface(doc, "v1");
    CHECK(v1["queues"]["rx"] == 1);
    CHECK(v1["queues"]["tx"] == 1);

    const auto& mq0 = findIface(doc, "mq0");
    CHECK(mq0["kind"] == "tap");
    CHECK(mq0["queues"]["rx"] == 4);
    CHECK(mq0["queues"]["tx"] == 4);
    CHECK(mq0["driver"]["name"] == "tun");
    CHECK(mq0["verdict"] == "virtual");
    CHECK(findIface(doc, "sq0")["queues"]["rx"] == 1);
    CHECK(findIface(doc, "lo")["kind"] == "loopback");

    // Inside a non-initial namespace the host-global sysctls are absent, and detect says so.
    CHECK(doc["host"]["initial_netns"] == false);
    size_t hostGlobal = 0;
    for (const auto& s : doc["host"]["sysctls"])
        if (s["host_global"] == true) {
            ++hostGlobal;
            CHECK(s["present"] == false);
        }
    CHECK(hostGlobal >= 3);  // netdev_max_backlog, rps_sock_flow_entries, netdev_budget at least

    // Detect is read-only.
    CHECK(ns.sysfsRead("class/net/v0/queues/rx-0/rps_cpus") == before);
}

TEST_CASE("detect --interface narrows, and the table form works", "[integration][detect]") {
    NetNs ns;
    ns.ip({"link", "add", "a0", "numrxqueues", "2", "type", "veth", "peer", "name", "a1"});
    Run r = ns.exec({rxtuneBin(), "detect", "--json", "--interface", "a0"});
    REQUIRE(r.status == 0);
    json doc = json::parse(r.out);
    REQUIRE(doc["interfaces"].size() == 1);
    CHECK(doc["interfaces"][0]["name"] == "a0");
    CHECK(doc["interfaces"][0]["queues"]["rx"] == 2);

    Run t = ns.exec({rxtuneBin(), "detect"});
    REQUIRE(t.status == 0);
    CHECK(t.out.find("a0") != std::string::npos);
    CHECK(t.out.find("veth") != std::string::npos);
    CHECK(t.out.find("non-initial") != std::string::npos);
}

TEST_CASE("bad interface names and unknown devices fail cleanly", "[integration][detect]") {
    NetNs ns;
    for (const std::string bad : {"nope0", "a/b", "..", "waytoolonginterfacename"}) {
        INFO(bad);
        Run r = ns.exec({rxtuneBin(), "detect", "--json", "--interface", bad});
        CHECK(r.status == 1);
        CHECK(r.out.empty());  // no partial JSON on stdout
        CHECK(r.err.find("rxtune: ") == 0);
        CHECK(r.err.find(bad.size() > 15 ? "longer than 15" : bad) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
}

TEST_CASE("detect on the host reads eth0 without touching it", "[integration][detect]") {
    requireRoot();
    const std::string before = mustRun({"cat", "/sys/class/net/lo/queues/rx-0/rps_cpus"});
    Run r = run({rxtuneBin(), "detect", "--json"});
    REQUIRE(r.status == 0);
    json doc = json::parse(r.out);
    CHECK(doc["host"]["initial_netns"] == true);
    CHECK(doc["host"]["cpus"]["online"] != "");
    CHECK(mustRun({"cat", "/sys/class/net/lo/queues/rx-0/rps_cpus"}) == before);
}

TEST_CASE("detect reads eth0's IRQs, rings, coalescing and NAPI from the kernel, read-only; and irqbalance's state",
          "[integration][detect][irq]") {
    requireRoot();
    // What the kernel shows, read independently: ethtool -g / -c and /proc/irq.
    const std::string ringsBefore = mustRun({"ethtool", "-g", "eth0"}), coalBefore = mustRun({"ethtool", "-c", "eth0"});
    Run r = run({rxtuneBin(), "detect", "--json", "-i", "eth0"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    json doc = json::parse(r.out);
    const json& eth0 = findIface(doc, "eth0");
    auto field = [&](const std::string& text, const std::string& section, const std::string& key) {
        const auto at = text.find(section);
        REQUIRE(at != std::string::npos);
        const auto k = text.find(key, at);
        REQUIRE(k != std::string::npos);
        return std::stol(text.substr(k + key.size()));
    };
    REQUIRE(eth0["rings"].contains("rx"));
    CHECK(eth0["rings"]["rx_max"] == field(ringsBefore, "Pre-set maximums", "RX:"));
    CHECK(eth0["rings"]["rx"] == field(ringsBefore, "Current hardware settings", "RX:"));
    CHECK(eth0["rings"]["tx"] == field(ringsBefore, "Current hardware settings", "TX:"));
    REQUIRE(eth0.contains("coalesce"));
    const bool adaptiveOff = coalBefore.find("Adaptive RX: off") != std::string::npos;
    if (eth0["coalesce"].contains("adaptive_rx") && !eth0["coalesce"]["adaptive_rx"].is_null())
        CHECK(eth0["coalesce"]["adaptive_rx"] == !adaptiveOff);
    // Its IRQs as /proc/irq shows them (virtio-net has its input, output and config vectors).
    REQUIRE_FALSE(eth0["irqs"].empty());
    for (const auto& irq : eth0["irqs"]) {
        const std::string n = std::to_string(irq["irq"].get<int>());
        std::string aff = mustRun({"cat", "/proc/irq/" + n + "/smp_affinity_list"});
        aff.erase(aff.find_last_not_of("\n") + 1);
        CHECK(irq["affinity"] == aff);
    }
    CHECK(eth0["napi"]["source"] == "netdev-genl");
    CHECK(eth0["napi"]["instances"].size() >= 1);
    // irqbalance: not installed on this machine; the object says so either way.
    const json& b = doc["host"]["irqbalance"];
    CHECK(b["running"] == (run({"pgrep", "-x", "irqbalance"}).status == 0));
    CHECK(b.contains("banned_irqs"));
    // Read-only: the settings are as they were.
    CHECK(mustRun({"ethtool", "-g", "eth0"}) == ringsBefore);
    CHECK(mustRun({"ethtool", "-c", "eth0"}) == coalBefore);
}

TEST_CASE("detect shows the CPU quota of its own cgroup beside the cpuset", "[integration][detect]") {
    // A cgroup of the test's own with 0.5 CPUs' worth of time (v1 cpu controller here, cpu.max on
    // a v2 host); detect runs inside it, read-only, in the host's namespaces (ip netns exec would
    // give it a fresh /sys without the cgroup mounts).
    const bool v2 = std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers");
    const std::filesystem::path base = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
    if (!std::filesystem::exists(base / (v2 ? "cgroup.subtree_control" : "cpu.cfs_quota_us"))) {
        return rxtune::test::skipBecause("no cpu cgroup controller here");
    }
    const std::string name = "rxtune-quota-" + std::to_string(getpid());
    const auto dir = base / name;
    std::filesystem::create_directory(dir);
    struct Cleanup {
        std::filesystem::path d;
        ~Cleanup() { rmdir(d.c_str()); }
    } cleanup{dir};
    if (v2 && !std::filesystem::exists(dir / "cpu.max")) {
        return rxtune::test::skipBecause("the cpu controller is not enabled for children of " + base.string());
    }
    if (v2) std::ofstream(dir / "cpu.max") << "50000 100000\n";
    else std::ofstream(dir / "cpu.cfs_quota_us") << "50000\n";
    Run r = run({"sh", "-c", "echo $$ > " + (dir / "cgroup.procs").string() + " && exec " + rxtuneBin() + " detect --json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json q = json::parse(r.out)["host"]["cgroup"]["cpu_quota"];
    INFO(q.dump());
    CHECK(q["limited"] == true);
    CHECK(q["cpus"].get<double>() == Approx(0.5));
    CHECK(q["quota_us"] == 50000);
    CHECK(q["source"].get<std::string>().find(name) != std::string::npos);
    Run text = run({"sh", "-c", "echo $$ > " + (dir / "cgroup.procs").string() + " && exec " + rxtuneBin() + " detect"});
    CHECK(text.out.find("CPU quota 0.50 CPUs' worth of time (50000/100000 us") != std::string::npos);
    // Outside it: no limit on this path.
    CHECK(json::parse(run({rxtuneBin(), "detect", "--json"}).out)["host"]["cgroup"]["cpu_quota"]["limited"] == false);
}

TEST_CASE("detect reads each CPU's last-level cache from the kernel's cacheinfo", "[integration][detect]") {
    requireRoot();
    // The same question asked of sysfs by a shell loop: per online CPU, the shared_cpu_list of the
    // highest cache level that is not an instruction cache.
    const std::string expected = mustRun({"sh", "-c", R"SH(
        for c in $(seq 0 $(($(getconf _NPROCESSORS_CONF) - 1))); do
          d=/sys/devices/system/cpu/cpu$c
          [ "$c" = 0 ] || [ "$(cat $d/online 2>/dev/null || echo 1)" = 1 ] || continue
          [ -d $d/cache ] || continue
          best=; top=0
          for i in $d/cache/index*; do
            [ "$(cat $i/type)" = Instruction ] && continue
            [ "$(cat $i/level)" -gt "$top" ] && { top=$(cat $i/level); best=$(cat $i/shared_cpu_list); }
          done
          echo "$c $best"
        done)SH"});
    Run r = run({rxtuneBin(), "detect", "--json"});
    REQUIRE(r.status == 0);
    const json llc = json::parse(r.out)["host"]["llc"];
    std::istringstream lines(expected);
    std::string cpu, shared;
    size_t n = 0;
    while (lines >> cpu >> shared) {
        INFO("cpu " << cpu);
        REQUIRE(llc.contains(cpu));
        CHECK(llc[cpu] == shared);
        ++n;
    }
    CHECK(llc.size() == n);
    Run table = run({rxtuneBin(), "detect"});
    REQUIRE(table.status == 0);
    CHECK(table.out.find(n ? "  last-level cache [" : "  last-level cache -") != std::string::npos);
}
