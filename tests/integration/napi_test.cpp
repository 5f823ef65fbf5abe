#include <catch2/catch.hpp>

#include <sys/utsname.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support.hpp"

using nlohmann::json;
using namespace rxtune::itest;

namespace {

// NAPI kthreads are the host's tasks: found by name, as the kernel gives it, napi/<dev>-<id>.
std::vector<int> kthreadsOf(const std::string& dev) {
    std::vector<int> out;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "comm");
        std::string comm;
        if (std::getline(in, comm) && comm.rfind("napi/" + dev + "-", 0) == 0) out.push_back(std::stoi(name));
    }
    return out;
}

std::string cpusOf(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 18));
    return "";
}

// The task's time on a CPU so far (ns), from /proc/PID/schedstat.
unsigned long long runtimeOf(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
    unsigned long long ns = 0;
    in >> ns;
    return ns;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// A veth pair in its own namespace; the receiving end has NAPI only with GRO on.
struct NapiVeth {
    NetNs ns;
    std::string dev;
    NapiVeth(const std::string& name, bool gro) : dev(name) {
        ns.ip({"link", "add", dev, "type", "veth", "peer", "name", dev + "p"});
        ns.ip({"link", "set", dev, "up"});
        ns.ip({"link", "set", dev + "p", "up"});
        if (gro) ns.exec({"ethtool", "-K", dev, "gro", "on"});
    }
};

const char* kProfile =
    "match:\n  interfaces: ['nv*']\n  virtual: include\n"
    "steering:\n  mode: napi\n  cpus: '1'\n  xps: false\n"
    "nic:\n  gro_flush_timeout: 20000\n  napi_defer_hard_irqs: 10\n";

}  // namespace

TEST_CASE("mode napi on a real veth: threaded on, kthread pinned, deferral set; verify, drift, revert", "[integration][napi]") {
    REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2);  // the kthread is pinned to CPU 1
    NapiVeth v("nv0", true);
    Scratch s;
    const std::string prof = s.profile("napi", kProfile);

    // detect reads the NAPI instance through netdev napi-get.
    Run det = v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv0"});
    REQUIRE(det.status == 0);
    auto d = json::parse(det.out)["interfaces"][0];
    CHECK(d["napi"]["source"] == "netdev-genl");
    REQUIRE(d["napi"]["instances"].size() == 1);
    CHECK(d["napi"]["threaded"] == "0");
    CHECK(d["napi_defer"]["gro_flush_timeout"] == 0);
    // Where this kernel's napi-set takes them (6.13+: its policy says), the deferral goes per NAPI
    // and the device's sysfs files stay as they were; elsewhere through sysfs.
    const bool perNapi = d["napi"]["napi_set"]["gro_flush_timeout"] == true;
    const std::string sysfsAfter = perNapi ? "0" : "20000", deferAfter = perNapi ? "0" : "10";

    Run plan = v.ns.exec(s.args({"plan", "--profile", prof}));
    INFO(plan.out << plan.err);
    CHECK(plan.status == 2);
    CHECK(plan.out.find("nv0 threaded") != std::string::npos);

    Run apply = v.ns.exec(s.args({"apply", "--profile", prof}));
    INFO(apply.out << apply.err);
    REQUIRE(apply.status == 0);
    CHECK(trim(v.ns.sysfsRead("class/net/nv0/threaded")) == "1");
    CHECK(trim(v.ns.sysfsRead("class/net/nv0/gro_flush_timeout")) == sysfsAfter);
    CHECK(trim(v.ns.sysfsRead("class/net/nv0/napi_defer_hard_irqs")) == deferAfter);
    auto threads = kthreadsOf("nv0");
    REQUIRE(threads.size() == 1);
    CHECK(cpusOf(threads[0]) == "1");
    // napi-get shows the same kthread, and each NAPI holds the deferral (napi-set's or sysfs').
    d = json::parse(v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv0"}).out)["interfaces"][0];
    CHECK(d["napi"]["instances"][0]["pid"] == threads[0]);
    CHECK(d["napi"]["instances"][0]["cpus"] == "1");
    CHECK(d["napi"]["instances"][0]["gro_flush_timeout"] == 20000);
    CHECK(d["napi"]["instances"][0]["defer_hard_irqs"] == 10);

    CHECK(v.ns.exec(s.args({"apply", "--profile", prof})).out.find("nothing to do") != std::string::npos);
    CHECK(v.ns.exec(s.args({"verify"})).status == 0);
    // Pinned elsewhere by someone else: drift, named as the kthreads.
    mustRun({"taskset", "-pc", "0", std::to_string(threads[0])});
    Run drift = v.ns.exec(s.args({"verify"}));
    CHECK(drift.status == 3);
    CHECK(drift.out.find("nv0 napi kthreads") != std::string::npos);
    CHECK(drift.out.find("NAPI kthreads of nv0") != std::string::npos);
    // status shows the device steered by napi.
    Run st = v.ns.exec(s.args({"status"}));
    CHECK(st.out.find("napi") != std::string::npos);

    Run revert = v.ns.exec(s.args({"revert"}));
    INFO(revert.out << revert.err);
    REQUIRE(revert.status == 0);
    CHECK(trim(v.ns.sysfsRead("class/net/nv0/threaded")) == "0");
    CHECK(trim(v.ns.sysfsRead("class/net/nv0/gro_flush_timeout")) == "0");
    CHECK(trim(v.ns.sysfsRead("class/net/nv0/napi_defer_hard_irqs")) == "0");
    CHECK(kthreadsOf("nv0").empty());
    d = json::parse(v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv0"}).out)["interfaces"][0];
    CHECK(d["napi"]["instances"][0]["gro_flush_timeout"] == 0);
    CHECK(d["napi"]["instances"][0]["defer_hard_irqs"] == 0);
}

TEST_CASE("per-NAPI deferral through napi-set on a real veth: keyed by its place, read back per NAPI, revert exact", "[integration][napi]") {
    NapiVeth v("nv4", true);
    Scratch s;
    Run det = v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv4"});
    REQUIRE(det.status == 0);
    auto d = json::parse(det.out)["interfaces"][0];
    const json feats = d["napi"]["napi_set"];
    INFO(feats.dump());
    // detect says what this kernel's napi-set takes, from its policy: the same answer as uname's
    // version promises for the features every kernel of this suite has (6.13+ on this host).
    const bool has = feats["available"] == true;
    REQUIRE(d["napi"]["instances"].size() == 1);
    CHECK(d["napi"]["instances"][0]["per_napi_settings"] == has);
    CHECK(d["napi"]["instances"][0]["busy_poll"] == feats["busy_poll"]);
    const std::string prof = s.profile("defer", "match:\n  interfaces: [nv4]\n  virtual: include\nsteering:\n  mode: none\n  xps: false\n"
                                                "nic:\n  gro_flush_timeout: 30000\n  napi_defer_hard_irqs: 7\n  irq_suspend_timeout: 5000000\n");
    Run plan = v.ns.exec(s.args({"plan", "--profile", prof}));
    INFO(plan.out << plan.err);
    if (!has) {
        // A kernel without napi-set: sysfs for two, irq_suspend_timeout refused with the reason.
        CHECK(plan.out.find("which this kernel does not take (Linux 6.13+)") != std::string::npos);
        return;
    }
    // veth's queues name no NAPI (queue-get gives no napi-id): keyed by its place, napi-0.
    CHECK(plan.out.find("nv4 napi napi-0 gro_flush_timeout") != std::string::npos);
    CHECK(plan.out.find("nv4 napi napi-0 irq_suspend_timeout") != std::string::npos);
    Run apply = v.ns.exec(s.args({"apply", "--profile", prof}));
    INFO(apply.out << apply.err);
    REQUIRE(apply.status == 0);
    d = json::parse(v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv4"}).out)["interfaces"][0];
    CHECK(d["napi"]["instances"][0]["gro_flush_timeout"] == 30000);
    CHECK(d["napi"]["instances"][0]["defer_hard_irqs"] == 7);
    CHECK(d["napi"]["instances"][0]["irq_suspend_timeout"] == 5000000);
    // The device-wide files are not what was written.
    CHECK(trim(v.ns.sysfsRead("class/net/nv4/gro_flush_timeout")) == "0");
    CHECK(v.ns.exec(s.args({"apply", "--profile", prof})).out.find("nothing to do") != std::string::npos);
    CHECK(v.ns.exec(s.args({"verify"})).status == 0);
    // Someone writes the device-wide file: that sets every NAPI's too (6.13+), which verify sees.
    v.ns.exec({"sh", "-c", "echo 1000 > /sys/class/net/nv4/gro_flush_timeout"});
    Run drift = v.ns.exec(s.args({"verify"}));
    CHECK(drift.status == 3);
    CHECK(drift.out.find("nv4 napi napi-0 gro_flush_timeout") != std::string::npos);
    v.ns.exec({"sh", "-c", "echo 0 > /sys/class/net/nv4/gro_flush_timeout"});
    Run revert = v.ns.exec(s.args({"revert"}));
    INFO(revert.out << revert.err);
    REQUIRE(revert.status == 0);
    d = json::parse(v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv4"}).out)["interfaces"][0];
    CHECK(d["napi"]["instances"][0]["gro_flush_timeout"] == 0);
    CHECK(d["napi"]["instances"][0]["defer_hard_irqs"] == 0);
    CHECK(d["napi"]["instances"][0]["irq_suspend_timeout"] == 0);
}

TEST_CASE("mode busypoll on this kernel's real veth: refused by what napi-set takes, with the version; nothing written", "[integration][napi]") {
    NapiVeth v("nv5", true);
    Scratch s;
    const json d = json::parse(v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv5"}).out)["interfaces"][0];
    const bool busyPoll = d["napi"]["napi_set"]["busy_poll"] == true;
    struct utsname u {};
    REQUIRE(uname(&u) == 0);
    const std::string prof = s.profile("busypoll", "match:\n  interfaces: [nv5]\n  virtual: include\nsteering:\n  mode: busypoll\n  xps: false\n");
    Run plan = v.ns.exec(s.args({"plan", "--profile", prof}));
    INFO(plan.out << plan.err);
    CHECK(plan.status == 0);
    if (busyPoll)  // 6.19+: veth's queues name no NAPI, so there is no RX NAPI to poll
        CHECK(plan.out.find("mode busypoll: the kernel links no NAPI of nv5 to an RX queue") != std::string::npos);
    else
        CHECK(plan.out.find(std::string("mode busypoll: busy-poll needs Linux 6.19 (this kernel: ") + u.release + ")") != std::string::npos);
    Run apply = v.ns.exec(s.args({"apply", "--profile", prof}));
    INFO(apply.out << apply.err);
    REQUIRE(apply.status == 0);
    CHECK(apply.out.find("nothing to do") != std::string::npos);
    const json after = json::parse(v.ns.exec({rxtuneBin(), "detect", "--json", "-i", "nv5"}).out)["interfaces"][0];
    CHECK(after["napi"]["threaded"] == "0");
    CHECK(after["napi"]["instances"] == d["napi"]["instances"]);
}

// What busy-poll keeps its poll off, seen on this kernel's /proc: a process pinned to the last
// CPU (taskset) that keeps it busy (a shell's loop at nice -20, so a busy machine does not halve it).
TEST_CASE("detect on this kernel: an application's thread pinned to a CPU and keeping it busy is named", "[integration][napi]") {
    NetNs ns;
    Scratch s;
    const unsigned cpu = std::thread::hardware_concurrency() > 1 ? std::thread::hardware_concurrency() - 1 : 0;
    Background spin(ns, {"nice", "-n", "-20", "taskset", "-c", std::to_string(cpu), "sh", "-c", "while :; do :; done"}, s.dir / "spin.log");
    json seen;
    const bool found = eventually(
        [&] {
            Run d = ns.exec({rxtuneBin(), "detect", "--json"});
            if (d.status != 0) return false;
            seen = json::parse(d.out)["host"]["pinned_busy_threads"];
            for (const auto& t : seen)
                if (t["pid"] == spin.pid()) return t["cpu"] == cpu && t["tid"] == spin.pid() && t["comm"] == "sh" && t["share"] >= 0.5;
            return false;
        },
        std::chrono::seconds(15), std::chrono::milliseconds(500));
    INFO("spinner pid " << spin.pid() << " on CPU " << cpu << "; detect's pinned_busy_threads: " << seen.dump());
    CHECK(found);
    Run text = ns.exec({rxtuneBin(), "detect"});
    CHECK(text.out.find("pinned busy threads (busy-poll keeps its poll off their CPUs):") != std::string::npos);
    CHECK(text.out.find("CPU " + std::to_string(cpu) + ": sh (tid " + std::to_string(spin.pid())) != std::string::npos);
}

TEST_CASE("mode napi where the kthreads ran already: their CPUs come back on revert, threaded stays", "[integration][napi]") {
    REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2);  // the kthread is pinned to CPU 1
    NapiVeth v("nv1", true);
    Scratch s;
    v.ns.sysfsWrite("class/net/nv1/threaded", "1");
    auto before = kthreadsOf("nv1");
    REQUIRE(before.size() == 1);
    const std::string cpusBefore = cpusOf(before[0]);
    REQUIRE(v.ns.exec(s.args({"apply", "--profile", s.profile("napi", kProfile)})).status == 0);
    CHECK(cpusOf(before[0]) == "1");
    REQUIRE(v.ns.exec(s.args({"revert"})).status == 0);
    CHECK(trim(v.ns.sysfsRead("class/net/nv1/threaded")) == "1");
    CHECK(cpusOf(before[0]) == cpusBefore);
}

TEST_CASE("mode napi on a veth without NAPI (GRO off): steering skipped with the way to get one, threaded left off", "[integration][napi]") {
    NapiVeth v("nv2", false);
    Scratch s;
    Run apply = v.ns.exec(s.args({"apply", "--profile", s.profile("napi", kProfile)}));
    INFO(apply.out << apply.err);
    REQUIRE(apply.status == 0);
    CHECK(apply.out.find("has no NAPI instance now") != std::string::npos);
    CHECK(apply.out.find("ethtool -K nv2 gro on") != std::string::npos);
    CHECK(trim(v.ns.sysfsRead("class/net/nv2/threaded")) == "0");
    CHECK(v.ns.exec(s.args({"revert"})).status == 0);
}

// A TAP's NAPI (IFF_NAPI, as lab_wire opens the lab's server TAP) is one napi-get does not list
// (the tun driver adds it as a TX NAPI, without an id); tun_flags shows it, and its kthread is
// napi/<dev>-0 once threaded. Frames written into the TAP are then polled by that kthread.
TEST_CASE("mode napi on a TAP opened with IFF_NAPI: planned from tun_flags, kthread pinned and polling; a TAP without: skipped", "[integration][napi]") {
    REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2);  // the kthread is pinned to CPU 1
    NetNs ns;
    TapQueues napi(ns, "nt0", 1, IFF_NAPI);
    TapQueues plain(ns, "nt1", 1);
    ns.ip({"link", "set", "nt0", "up"});
    ns.ip({"link", "set", "nt1", "up"});
    ns.ip({"addr", "add", "10.79.0.1/24", "dev", "nt0"});
    Scratch s;
    const std::string prof = s.profile("napi", "match:\n  interfaces: ['nt*']\n  virtual: include\nsteering:\n  mode: napi\n  cpus: '1'\n  xps: false\n");

    auto d = json::parse(ns.exec({rxtuneBin(), "detect", "--json", "-i", "nt0"}).out)["interfaces"][0];
    CHECK(d["napi"]["unlisted"] == true);
    CHECK(d["napi"]["instances"].empty());

    Run apply = ns.exec(s.args({"apply", "--profile", prof}));
    INFO(apply.out << apply.err);
    REQUIRE(apply.status == 0);
    CHECK(apply.out.find("nt1 has no NAPI instance now (a TAP/TUN has one only when the program that opens it asks for IFF_NAPI") !=
          std::string::npos);
    CHECK(trim(ns.sysfsRead("class/net/nt1/threaded")) == "0");
    CHECK(trim(ns.sysfsRead("class/net/nt0/threaded")) == "1");
    auto threads = kthreadsOf("nt0");
    REQUIRE(threads.size() == 1);
    CHECK(cpusOf(threads[0]) == "1");
    CHECK(ns.exec(s.args({"verify"})).status == 0);
    d = json::parse(ns.exec({rxtuneBin(), "detect", "--json", "-i", "nt0"}).out)["interfaces"][0];
    CHECK(d["napi"]["source"] == "proc");
    REQUIRE(d["napi"]["instances"].size() == 1);
    CHECK(d["napi"]["instances"][0]["pid"] == threads[0]);

    // Frames written into the TAP (as the lab's wire writes them) are polled by the kthread.
    const unsigned long long before = runtimeOf(threads[0]);
    unsigned char frame[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00};  // broadcast IPv4, no payload worth routing
    int written = 0;
    for (int i = 0; i < 2000; ++i) written += write(napi.fd(0), frame, sizeof frame) == static_cast<ssize_t>(sizeof frame);
    CHECK(written == 2000);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(runtimeOf(threads[0]) > before);

    REQUIRE(ns.exec(s.args({"revert"})).status == 0);
    CHECK(trim(ns.sysfsRead("class/net/nt0/threaded")) == "0");
    CHECK(kthreadsOf("nt0").empty());
}
