#include <catch2/catch.hpp>

#include "../unit/support/families.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <bpf/bpf.h>

#include "apply/apply.hpp"
#include "knobs/registry.hpp"
#include "support.hpp"
#include "sys/netlink.hpp"

using namespace rxtune::itest;

namespace {

// Client and server namespaces joined by a veth pair; an HTTP server listens in the server one.
struct Pair {
    NetNs srv, cli;
    pid_t http = -1;
    std::filesystem::path dir;
    Pair() {
        std::string t = (std::filesystem::temp_directory_path() / "rxtune-xdp-XXXXXX").string();
        if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
        dir = t;
        srv.ip({"link", "add", "x0", "numrxqueues", "1", "type", "veth", "peer", "name", "x1", "netns", cli.name()});
        srv.ip({"addr", "add", "10.232.0.1/24", "dev", "x0"});
        cli.ip({"addr", "add", "10.232.0.2/24", "dev", "x1"});
        srv.ip({"link", "set", "x0", "up"});
        cli.ip({"link", "set", "x1", "up"});
        http = fork();
        if (http == 0) {
            int devnull = open("/dev/null", O_RDWR);
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
            execlp("ip", "ip", "netns", "exec", srv.name().c_str(), "python3", "-m", "http.server", "--bind",
                   "10.232.0.1", "18080", "--directory", dir.c_str(), nullptr);
            _exit(127);
        }
        std::ofstream(dir / "index.html") << "hello\n";
        // A bpffs of the test's own, mounted in the host's mount namespace: `ip netns exec` gives
        // rxtune a fresh /sys, whose /sys/fs/bpf would vanish with it.
        std::filesystem::create_directories(dir / "bpffs");
        mustRun({"mount", "-t", "bpf", "bpf", (dir / "bpffs").string()});
    }
    ~Pair() {
        kill(http, SIGTERM);
        waitpid(http, nullptr, 0);
        run({"umount", (dir / "bpffs").string()});
        std::filesystem::remove_all(dir);
    }
    std::vector<std::string> rxtune(std::vector<std::string> a) const {
        a.insert(a.begin(), {"ip", "netns", "exec", srv.name(), rxtuneBin()});
        a.insert(a.end(), {"--state-dir", (dir / "state").string(), "--run-dir", (dir / "run").string(),
                           "--bpf-dir", (dir / "bpffs" / "rxtune").string()});
        return a;
    }
    int requests(int n) const {
        int ok = 0;
        for (int i = 0; i < n; ++i) {
            Run r = cli.exec({"curl", "-s", "--max-time", "3", "-o", "/dev/null", "-w", "%{http_code}", "http://10.232.0.1:18080/"});
            ok += r.out == "200";
        }
        return ok;
    }
    std::string pinDir() const {
        struct stat st {};
        ::stat(("/var/run/netns/" + srv.name()).c_str(), &st);
        return (dir / "bpffs" / "rxtune").string() + "/" + std::to_string(st.st_ino) + "_x0";
    }
    std::uint64_t redirected() const {
        int fd = bpf_obj_get((pinDir() + "/redirected").c_str());
        if (fd < 0) return 0;
        std::uint64_t total = 0;
        for (std::uint32_t cpu = 0; cpu < 64; ++cpu) {
            std::uint64_t v = 0;
            if (bpf_map_lookup_elem(fd, &cpu, &v) == 0) total += v;
        }
        close(fd);
        return total;
    }
};

void waitForServer(const Pair& p) {
    for (int i = 0; i < 100 && p.requests(1) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

TEST_CASE("XDP cpumap steering in generic and native mode keeps TCP working", "[integration][xdp]") {
    for (const std::string mode : {"generic", "native"}) {
        INFO("mode " << mode);
        Pair p;
        waitForServer(p);
        REQUIRE(p.requests(1) == 1);
        // Native XDP on veth: the sender's checksums must be filled in, or TCP breaks (documented).
        if (mode == "native") mustRun({"ip", "netns", "exec", p.cli.name(), "ethtool", "-K", "x1", "tx", "off"});
        std::ofstream(p.dir / "xdp.yaml") << "include: single-queue-gateway\nmatch:\n  interfaces: ['x0']\n  virtual: include\n"
                                          << "steering:\n  mode: xdp\n  xdp:\n    mode: " << mode << "\n    qsize: 1024\n";
        Run apply = run(p.rxtune({"apply", "--profile", (p.dir / "xdp.yaml").string()}));
        INFO(apply.out << apply.err);
        REQUIRE(apply.status == 0);
        CHECK(apply.out.find("x0 xdp steering") != std::string::npos);
        const std::string link = p.srv.ip({"-d", "link", "show", "x0"});
        CHECK(link.find(mode == "native" ? " xdp " : " xdpgeneric ") != std::string::npos);

        CHECK(p.requests(20) == 20);
        CHECK(p.redirected() > 0);  // frames went through the cpumap to the target CPUs
        CHECK(run(p.rxtune({"verify"})).status == 0);
        Run again = run(p.rxtune({"apply", "--profile", (p.dir / "xdp.yaml").string()}));
        CHECK(again.out.find("nothing to do") != std::string::npos);

        Run revert = run(p.rxtune({"revert"}));
        INFO(revert.out << revert.err);
        REQUIRE(revert.status == 0);
        CHECK(p.srv.ip({"-d", "link", "show", "x0"}).find("xdp") == std::string::npos);
        CHECK_FALSE(std::filesystem::exists(p.pinDir()));
        CHECK(p.requests(3) == 3);
    }
}

TEST_CASE("XDP steering is re-installed when the device is re-created", "[integration][xdp]") {
    Pair p;
    std::ofstream(p.dir / "xdp.yaml") << "match:\n  interfaces: ['x0']\n  virtual: include\nsteering:\n  mode: xdp\n";
    REQUIRE(run(p.rxtune({"apply", "--profile", (p.dir / "xdp.yaml").string()})).status == 0);
    p.srv.ip({"link", "del", "x0"});
    p.srv.ip({"link", "add", "x0", "type", "veth", "peer", "name", "x9"});
    Run verify = run(p.rxtune({"verify"}));
    CHECK(verify.status == 3);  // the link went with the old device: drift, not silence
    Run apply = run(p.rxtune({"apply", "--profile", (p.dir / "xdp.yaml").string()}));
    INFO(apply.out << apply.err);
    CHECK(apply.status == 0);
    CHECK(p.srv.ip({"-d", "link", "show", "x0"}).find(" xdpgeneric ") != std::string::npos);
    CHECK(run(p.rxtune({"revert"})).status == 0);
    CHECK_FALSE(std::filesystem::exists(p.pinDir()));
}

TEST_CASE("XDP steering refuses a bpffs that would vanish with a private mount namespace", "[integration][xdp]") {
    Pair p;
    std::ofstream(p.dir / "xdp.yaml") << "match:\n  interfaces: ['x0']\n  virtual: include\nsteering:\n  mode: xdp\n";
    // `ip netns exec` gives rxtune a fresh /sys in a mount namespace of its own: the default
    // --bpf-dir /sys/fs/bpf/rxtune lands on a bpffs nobody else can see, gone when rxtune exits.
    Run apply = run({"ip", "netns", "exec", p.srv.name(), rxtuneBin(), "apply", "--profile", (p.dir / "xdp.yaml").string(),
                     "--state-dir", (p.dir / "state").string(), "--run-dir", (p.dir / "run").string()});
    INFO(apply.out << apply.err);
    CHECK(apply.status == 1);
    CHECK(apply.err.find("private mount namespace") != std::string::npos);
    CHECK(apply.err.find("--bpf-dir") != std::string::npos);
    // Nothing changed: no program on the device, RPS as it was.
    CHECK(p.srv.ip({"-d", "link", "show", "x0"}).find("xdp") == std::string::npos);
    CHECK(p.srv.sysfsRead("class/net/x0/queues/rx-0/rps_cpus").find_first_not_of("0,\n") == std::string::npos);
    // The same apply with a bpffs of the host's mount namespace works.
    Run ok = run(p.rxtune({"apply", "--profile", (p.dir / "xdp.yaml").string()}));
    INFO(ok.out << ok.err);
    CHECK(ok.status == 0);
    CHECK(run(p.rxtune({"revert"})).status == 0);
}

TEST_CASE("a failed apply detaches the XDP steering it installed, and keeps no journal", "[integration][xdp][apply]") {
    // In process, in a namespace of the test's own: XDP steering on a veth, then a step the kernel
    // refuses (a ring size: veth has no ring ops). The apply's undo must take the program off.
    using namespace rxtune;
    NetNs ns;
    ns.ip({"link", "add", "xa0", "type", "veth", "peer", "name", "xa1"});
    ns.ip({"link", "set", "xa0", "up"});
    ns.ip({"link", "set", "xa1", "up"});
    std::string t = (std::filesystem::temp_directory_path() / "rxtune-xdp-undo-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()));
    const std::filesystem::path dir = t;
    std::filesystem::create_directories(dir / "bpffs");
    mustRun({"mount", "-t", "bpf", "bpf", (dir / "bpffs").string()});
    struct Cleanup {
        std::filesystem::path dir;
        ~Cleanup() {
            run({"umount", (dir / "bpffs").string()});
            std::filesystem::remove_all(dir);
        }
    } cleanup{dir};
    {
        InNetNs in(ns);
        XdpSteering xdp((dir / "bpffs" / "rxtune").string());
        auto nl = Netlink::open();
        REQUIRE(nl);
        FileTree fs("/");
        const Knobs knobs(fs, Services().with<XdpSteering>(&xdp).with<NetlinkSource>(nl->get()));
        Plan p;
        p.profile = "undo-test";
        p.settings.push_back(makeSetting(test::family("xdp"), {"xdp", "xa0", "steering"}, ValueKind::kXdp, "", "cpus=0 mode=generic qsize=2048", "t"));
        p.settings.push_back(makeSetting(test::family("rings"), {"rings", "xa0", "rx"}, ValueKind::kInteger, "256", "512", "t", "256"));
        const JournalStore store((dir / "state").string());
        auto r = applyPlan(p, knobs, store, "t");
        REQUIRE_FALSE(r);
        INFO(r.error().message());
        CHECK(r.error().message().find("apply failed, this apply's writes were undone") == 0);
        CHECK(r.error().message().find("xa0 ring rx") != std::string::npos);
        CHECK(xdp.current("xa0").value().empty());
        CHECK(run({"ip", "link", "show", "xa0"}).out.find("xdp") == std::string::npos);
        CHECK_FALSE(store.load().value().has_value());
    }
}
