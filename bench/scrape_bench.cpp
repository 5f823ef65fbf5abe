// Scrape cost of rxtune's metrics on a big host: 256 CPUs and a NIC with 64 queues (a fake tree).
// Prints the mean time to sample (snapshot + softnet/softirqs into the registry) and to serve one
// scrape (Collect + text serialisation), and the scrape's size.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <prometheus/text_serializer.h>

#include "../tests/unit/support/fixture.hpp"
#include "metrics/metrics.hpp"

using namespace rxtune;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& root, const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
}

fs::path makeHost(unsigned cpus, unsigned queues) {
    std::string t = (fs::temp_directory_path() / "rxtune-bench-XXXXXX").string();
    if (!mkdtemp(t.data())) std::abort();
    fs::path r = t;
    const std::string all = "0-" + std::to_string(cpus - 1) + "\n";
    put(r, "sys/devices/system/cpu/online", all);
    put(r, "sys/devices/system/cpu/possible", all);
    put(r, "proc/self/cgroup", "0::/\n");
    std::string head = "  ", netrx = " NET_RX:", softnet, irq = "  ";
    for (unsigned c = 0; c < cpus; ++c) {
        put(r, "sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/scaling_governor", "performance\n");
        head += " CPU" + std::to_string(c);
        netrx += " " + std::to_string(1000 + c);
        char row[200];
        std::snprintf(row, sizeof row, "%08x 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000002 00000000 00000000 %08x 00000000 00000000\n", 100000 + c, c);
        softnet += row;
    }
    put(r, "proc/softirqs", head + "\n" + netrx + "\n");
    put(r, "proc/net/softnet_stat", softnet);
    put(r, "proc/interrupts", head + "\n");
    std::string mask = "0";
    for (unsigned q = 0; q < queues; ++q) {
        put(r, "sys/class/net/eth0/queues/rx-" + std::to_string(q) + "/rps_cpus", "ffffffff,ffffffff\n");
        put(r, "sys/class/net/eth0/queues/rx-" + std::to_string(q) + "/rps_flow_cnt", "512\n");
        put(r, "sys/class/net/eth0/queues/tx-" + std::to_string(q) + "/xps_cpus", "1\n");
    }
    put(r, "netlink.json",
        "{\"links\":[{\"name\":\"eth0\",\"ifindex\":2,\"kind\":\"\",\"operstate\":\"up\",\"flags\":4099,\"mtu\":1500,"
        "\"arptype\":1,\"num_rx_queues\":" + std::to_string(queues) + ",\"num_tx_queues\":" + std::to_string(queues) +
        ",\"channels\":{\"supported\":true,\"rx\":0,\"tx\":0,\"other\":0,\"combined\":" + std::to_string(queues) +
        ",\"max_rx\":0,\"max_tx\":0,\"max_other\":0,\"max_combined\":" + std::to_string(queues) +
        "},\"driver\":{\"available\":true,\"driver\":\"ice\",\"version\":\"1\",\"firmware\":\"1\",\"bus_info\":\"x\"}}]}\n");
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    const unsigned cpus = argc > 1 ? static_cast<unsigned>(std::stoul(argv[1])) : 256;
    const unsigned queues = argc > 2 ? static_cast<unsigned>(std::stoul(argv[2])) : 64;
    const int rounds = 200;
    fs::path root = makeHost(cpus, queues);
    FileTree tree(root.string());
    test::FakeNetlink nl(root);
    Metrics m("bench");
    using clk = std::chrono::steady_clock;
    double sampleUs = 0, scrapeUs = 0;
    size_t bytes = 0;
    for (int i = 0; i < rounds; ++i) {
        auto t0 = clk::now();
        auto snap = takeSnapshot(tree, nl, {}).value();
        auto online = snap.host.online.cpus();
        auto softnet = parseSoftnetStat(tree.read("proc/net/softnet_stat").value(), online).value();
        auto netRx = parseNetRxSoftirqs(tree.read("proc/softirqs").value()).value();
        m.updateSnapshot(snap);
        m.updateSoftnet(softnet, netRx);
        auto t1 = clk::now();
        prometheus::TextSerializer ser;
        std::string text = ser.Serialize(m.registry()->Collect());
        auto t2 = clk::now();
        bytes = text.size();
        sampleUs += std::chrono::duration<double, std::micro>(t1 - t0).count();
        scrapeUs += std::chrono::duration<double, std::micro>(t2 - t1).count();
    }
    fs::remove_all(root);
    std::printf("cpus %u, queues %u: sample %.0f us, scrape %.0f us, %zu bytes (mean of %d)\n", cpus, queues,
                sampleUs / rounds, scrapeUs / rounds, bytes, rounds);
    return 0;
}
