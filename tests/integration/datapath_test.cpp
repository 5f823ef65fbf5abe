// rxtune-dp end to end: client netns -- veth -- rxtune-dp (af_packet PMD, --no-huge) -- multi-queue
// TAP in the server netns, where an HTTP server listens. Real DPDK, real kernel, real TCP.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "fanout.hpp"
#include "flow.hpp"
#include "config.hpp"
#include "inventory/dp_telemetry.hpp"
#include "inventory/snapshot.hpp"
#include "sys/file_tree.hpp"
#include "sys/vhost_net.hpp"
#include "support.hpp"

using namespace rxtune::itest;
using namespace std::chrono_literals;

namespace {

// client (10.77.0.1 on vc) <-> vd (no address: rxtune-dp's NIC) in the server netns.
struct Lab {
    NetNs client, server;
    Lab() {
        mustRun({"ip", "link", "add", "vc", "netns", client.name(), "type", "veth", "peer", "name", "vd", "netns", server.name()});
        client.ip({"addr", "add", "10.77.0.1/24", "dev", "vc"});
        client.ip({"link", "set", "vc", "up"});
        server.ip({"link", "set", "vd", "up"});
        server.exec({"sysctl", "-qw", "net.ipv6.conf.vd.disable_ipv6=1"});
    }
};

std::map<std::string, uint64_t> summary(const std::string& log) {
    std::map<std::string, uint64_t> out;
    auto p = log.find("rxtune-dp: stopped:");
    if (p == std::string::npos) return out;
    std::istringstream line(log.substr(p + 19, log.find('\n', p) - p - 19));
    std::string kv;
    while (line >> kv) {
        auto eq = kv.find('=');
        if (eq != std::string::npos) out[kv.substr(0, eq)] = std::stoull(kv.substr(eq + 1));
    }
    return out;
}

}  // namespace

TEST_CASE("rxtune-dp carries HTTP flows from one RX queue to a multi-queue TAP and back", "[integration][datapath]") {
    // Both ways the replies reach the NIC's one TX queue: the workers under a spinlock (the
    // default), or a ring the RX core drains. The ring run also forces prefetch_next_mbufs on
    // (auto, in the lock run, resolves against this host's caches).
    const std::string txMode = GENERATE(as<std::string>{}, "lock", "ring");
    INFO("tx_mode " << txMode);
    Lab lab;
    TempDir tmp;
    // The client keeps TX checksum offload on (its frames carry partial checksums, which af_packet
    // hands over as they are) but segments in software: rxtune-dp fixes the checksums.
    lab.client.exec({"ethtool", "-K", "vc", "tso", "off", "gso", "off"});
    const std::string prefix = "rxt-dp-" + std::to_string(getpid());
    std::ofstream(tmp.path / "dp.yaml") << "eal: [--no-huge, -m, \"256\", --log-level=lib.eal:warning]\n"
                                        << "file_prefix: " << prefix << "\n"
                                        << "nic: {device: \"net_af_packet0,iface=vd\", fix_checksums: true}\n"
                                        << "rx_cpu: 0\nworkers: {cpus: [0, 1]}\n"
                                        << "tap: {name: gw0, addresses: [10.77.0.2/24]}\n"
                                        << "idle_sleep_us: 50\ntx_mode: " << txMode << "\n"
                                        << "prefetch_next_mbufs: " << (txMode == "ring" ? "on" : "auto") << "\n";
    Background dp(lab.server, {env("RXTUNE_DP_BIN"), "--config", (tmp.path / "dp.yaml").string()}, tmp.path / "dp.log");
    const std::string socket = "/var/run/dpdk/" + prefix + "/dpdk_telemetry.v2";
    REQUIRE(eventually([&] { return dp.log().find("running:") != std::string::npos || dp.exited(); }));
    INFO(dp.log());
    REQUIRE_FALSE(dp.exited());
    CHECK(lab.server.ip({"-d", "link", "show", "gw0"}).find("tun type tap") != std::string::npos);
    CHECK(lab.server.ip({"addr", "show", "gw0"}).find("10.77.0.2/24") != std::string::npos);
    CHECK(lab.server.sysfsRead("class/net/gw0/address").find(rxtune::dp::stableMac("gw0")) == 0);  // stable MAC

    Background httpd(lab.server, {env("LAB_HTTPD"), "--listen", "10.77.0.2:8080", "--threads", "2", "--conn-log",
                                  (tmp.path / "conns.txt").string()},
                     tmp.path / "httpd.log");
    // 64 connections of 10 requests each: 64 flows over the two TAP queues.
    Run load;
    REQUIRE(eventually([&] {
        load = lab.client.exec({env("HTTP_LOAD"), "--host", "10.77.0.2", "--port", "8080", "--connections", "1", "--requests", "1",
                                "--timeout-ms", "1000"});
        return load.status == 0;
    }));
    load = lab.client.exec({env("HTTP_LOAD"), "--host", "10.77.0.2", "--port", "8080", "--connections", "64", "--requests",
                            "10", "--threads", "2", "--timeout-ms", "5000"});
    INFO(load.out << load.err);
    auto result = nlohmann::json::parse(load.out);
    CHECK(result["ok"] == 640);
    CHECK(result["failures"] == 0);

    // Telemetry, as the agent reads it: both queues carried flows, replies came back, checksums fixed.
    auto stats = rxtune::readDatapathTelemetry(socket, 2000);
    REQUIRE(stats);
    REQUIRE(stats->workers.size() == 2);
    for (const auto& w : stats->workers) {
        CHECK(w.toTapPackets > 0);
        CHECK(w.fromTapPackets > 0);
        CHECK(w.checksumsFixed > 0);
    }
    CHECK(stats->rxPackets >= 640);
    // lock: the workers transmit the replies themselves; ring: they hand them to the RX core.
    uint64_t toNic = 0;
    for (const auto& w : stats->workers) toNic += w.toNic;
    CHECK(toNic >= 640);
    CHECK(stats->txMode == txMode);
    if (txMode == "lock") CHECK(stats->nicTxPackets == 0);
    else CHECK(stats->nicTxPackets >= 640);
    // The exception path chosen at start-up (tap.backend auto: virtio-user only where vhost-net
    // works, which this host decides) and the flow hash (af_packet gives none; fix_checksums
    // parses every frame anyway).
    const bool vhost = static_cast<bool>(rxtune::probeVhostNet("/dev/vhost-net"));
    CHECK(stats->exceptionPath == (vhost ? "virtio-user" : "tap"));
    CHECK(stats->flowHash == "software");
    auto rxLlc = rxtune::readLlc(rxtune::FileTree("/"), 0);
    REQUIRE(rxLlc);
    rxtune::dp::DpConfig asRun;
    asRun.rxCpu = 0;
    asRun.workerCpus = {0, 1};
    asRun.prefetchNextMbufs = txMode == "ring" ? rxtune::dp::Prefetch::kOn : rxtune::dp::Prefetch::kAuto;
    const auto prefetch = rxtune::dp::choosePrefetch(asRun, *rxLlc, rxtune::dp::cpuHasPrefetchw());
    CHECK(stats->prefetch == (prefetch.on ? "on" : "off"));
    CHECK(dp.log().find(std::string("next mbufs prefetched for ownership: ") + (prefetch.on ? "on" : "off") + " (" + prefetch.why + ")") !=
          std::string::npos);
    CHECK(dp.log().find(vhost ? "exception path: virtio-user (auto: /dev/vhost-net is a vhost device)"
                              : "exception path: tap (virtio-user not possible: open /dev/vhost-net: ") != std::string::npos);

    // The agent exports them: rxtune daemon in a third namespace (nothing there to tune).
    NetNs agentNs;
    std::ofstream(tmp.path / "rxtune.yaml") << "listen: 127.0.0.1:19874\nstate_dir: " << (tmp.path / "state").string()
                                            << "\nrun_dir: " << (tmp.path / "run").string()
                                            << "\nmetrics_interval: 200ms\ndatapaths: [" << socket << "]\n";
    Background agent(agentNs, {rxtuneBin(), "daemon", "--config", (tmp.path / "rxtune.yaml").string()}, tmp.path / "agent.log");
    std::string metrics;
    CHECK(eventually([&] {
        metrics = agentNs.exec({"curl", "-s", "--max-time", "2", "http://127.0.0.1:19874/metrics"}).out;
        return metrics.find("rxtune_datapath_worker_packets_total{direction=\"to_tap\",interface=\"gw0\",queue=\"1\"}") != std::string::npos;
    }));
    CHECK(metrics.find("rxtune_datapath_up{socket=\"" + socket + "\"} 1") != std::string::npos);
    CHECK(metrics.find("rxtune_datapath_rx_busy_seconds_total{interface=\"gw0\"}") != std::string::npos);
    CHECK(metrics.find(std::string("exception_path=\"") + (vhost ? "virtio-user" : "tap") + "\",flow_hash=\"software\"") != std::string::npos);
    CHECK(metrics.find(std::string("prefetch=\"") + stats->prefetch + "\"") != std::string::npos);
    agent.signal(SIGTERM);
    CHECK(agent.wait() == 0);

    // Each flow ran on the CPU of the worker the redirection table gives it (SO_INCOMING_CPU: the
    // kernel processed the flow's packets where the worker wrote them into its TAP queue).
    httpd.signal(SIGTERM);
    REQUIRE(httpd.wait() == 0);
    auto reta = *rxtune::dp::buildReta({1, 1}, 128);
    const std::map<unsigned, unsigned> workerCpu = {{0, 0}, {1, 1}};
    std::istringstream conns(slurp(tmp.path / "conns.txt"));
    std::string ip;
    unsigned port = 0, requests = 0;
    int cpu = -1;
    std::set<unsigned> workersSeen;
    size_t flows = 0;
    while (conns >> ip >> port >> cpu >> requests) {
        if (requests == 0) continue;
        uint32_t words[3] = {0x0a4d0001, 0x0a4d0002, (port << 16) | 8080u};
        const unsigned worker = rxtune::dp::retaLookup(reta, rte_softrss(words, 3, rxtune::dp::kSymmetricRssKey));
        INFO("client port " << port << " worker " << worker);
        CHECK(cpu == static_cast<int>(workerCpu.at(worker)));
        workersSeen.insert(worker);
        ++flows;
    }
    CHECK(flows >= 64);
    CHECK(workersSeen.size() == 2);

    // Staged stop: exit 0 (rxtune-dp itself checks that the counters add up and no mbuf leaked).
    dp.signal(SIGTERM);
    REQUIRE(dp.wait() == 0);
    auto s = summary(dp.log());
    INFO(dp.log());
    REQUIRE(s.count("rx_packets"));
    CHECK(s["rx_packets"] == s["dispatched"] + s["ring_full"]);
    CHECK(s["dispatched"] == s["to_tap"] + s["to_tap_dropped"]);
    CHECK(s["from_tap"] == s["to_nic"] + s["to_nic_dropped"]);
    CHECK(s["mbufs_in_use"] == 0);
    CHECK(s["rx_packets"] >= 640);
    // The TAP is gone with the datapath, and the NIC interface is no longer promiscuous.
    CHECK(lab.server.exec({"ip", "link", "show", "gw0"}).status != 0);
    CHECK(lab.server.ip({"link", "show", "vd"}).find("PROMISC") == std::string::npos);
}

TEST_CASE("rxtune-dp refuses bad input with a clear message and leaves the host as it was", "[integration][datapath]") {
    Lab lab;
    TempDir tmp;
    auto devices = [&] {  // names and kinds of the server namespace's devices
        std::string out;
        std::istringstream lines(lab.server.ip({"-o", "-d", "link", "show"}));
        for (std::string line; std::getline(lines, line);) {
            std::istringstream f(line);
            std::string index, name;
            f >> index >> name;
            out += name + (line.find(" tun ") != std::string::npos ? " tun" : "") +
                   (line.find("PROMISC") != std::string::npos ? " promisc" : "") + "\n";
        }
        return out;
    };
    const std::string before = devices();
    auto dp = [&](std::vector<std::string> args) {
        args.insert(args.begin(), env("RXTUNE_DP_BIN"));
        return lab.server.exec(args);
    };
    std::ofstream(tmp.path / "typo.yaml") << "nic: {device: \"net_af_packet0,iface=vd\"}\nworkrs: {cpus: [1]}\n";
    Run typo = dp({"--config", (tmp.path / "typo.yaml").string()});
    CHECK(typo.status == 1);
    CHECK(typo.err.find((tmp.path / "typo.yaml").string() + ":2:1: workrs: unknown key") != std::string::npos);

    Run cpu = dp({"--nic", "net_af_packet0,iface=vd", "--worker-cpus", "4095"});
    CHECK(cpu.status == 1);
    CHECK(cpu.err.find("workers.cpus: CPU 4095 is not one this process may use") != std::string::npos);

    const std::string eal = "--no-huge";
    Run missing = dp({"--nic", "net_af_packet0,iface=nosuch0", "--", eal});
    CHECK(missing.status == 1);
    CHECK(missing.err.find("NIC interface 'nosuch0' does not exist") != std::string::npos);

    lab.server.exec({"ethtool", "-K", "vd", "gro", "on"});
    Run gro = dp({"--nic", "net_af_packet0,iface=vd", "--", eal});
    CHECK(gro.status == 1);
    CHECK(gro.err.find("GRO is on") != std::string::npos);
    CHECK(gro.err.find("ethtool -K vd gro off") != std::string::npos);
    lab.server.exec({"ethtool", "-K", "vd", "gro", "off"});

    // virtio-user asked for where vhost-net cannot serve it: refused before EAL starts.
    std::ofstream(tmp.path / "vu.yaml") << "nic: {device: \"net_af_packet0,iface=vd\"}\ntap: {backend: virtio-user, vhost_net: "
                                        << (tmp.path / "vhost-net").string() << "}\n";
    Run vu = dp({"--config", (tmp.path / "vu.yaml").string(), "--", eal});
    CHECK(vu.status == 1);
    CHECK(vu.err.find("tap.backend: virtio-user, but open " + (tmp.path / "vhost-net").string()) != std::string::npos);
    CHECK(vu.err.find("modprobe vhost_net") != std::string::npos);

    Run check = dp({"--nic", "net_af_packet0,iface=vd", "--rx-cpu", "0", "--worker-cpus", "0,1", "--check"});
    CHECK(check.status == 0);
    CHECK(check.out.find("{queue: 1, cpu: 1, reta_entries: 64") != std::string::npos);
    // The RX core's last-level cache from this host's sysfs cacheinfo, each worker against it.
    auto rxLlc = rxtune::readLlc(rxtune::FileTree("/"), 0);
    REQUIRE(rxLlc);
    if (rxLlc->empty()) {
        CHECK(check.out.find("rx_llc: unknown\n") != std::string::npos);
    } else {
        CHECK(check.out.find("rx_llc: " + rxLlc->toList() + "\n") != std::string::npos);
        CHECK(check.out.find(std::string("cpu: 1, reta_entries: 64, shares_rx_llc: ") + (rxLlc->contains(1) ? "true}" : "false}")) !=
              std::string::npos);
    }
    CHECK(check.out.find("tx_mode: lock\n") != std::string::npos);
    CHECK(devices() == before);  // no TAP, nothing made promiscuous
}
