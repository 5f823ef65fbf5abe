#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "../support/skips.hpp"
#include "support.hpp"

using namespace rxtune::itest;
using namespace std::chrono_literals;

namespace {

// A receiver netns with `fb`, fed from a sender netns; a flood from the sender pinned to CPU 0
// puts the receive work (veth delivers on the sending CPU) on CPU 0.
struct StatusLab : VethPair {
    TempDir tmp;
    StatusLab() : VethPair("10.89.0") {}
    std::unique_ptr<Background> flood(int seconds) {
        return std::make_unique<Background>(sender, std::vector<std::string>{"taskset", "-c", "0", env("UDP_FLOOD"), "send", "10.89.0.2", "9000",
                                                                           std::to_string(seconds), "64"},
                                            tmp.path / "flood.log");
    }
    std::vector<std::string> dirs() const {
        return {"--state-dir", (tmp.path / "state").string(), "--run-dir", (tmp.path / "run").string()};
    }
};

// The line of a screen that starts with CPU n's row ("  0  [").
std::string cpuRow(const std::string& screen, unsigned cpu) {
    std::istringstream in(screen);
    std::string line;
    const std::string want = (cpu < 10 ? "  " : " ") + std::to_string(cpu) + "  [";
    while (std::getline(in, line))
        if (line.rfind(want, 0) == 0) return line;
    return "";
}

}  // namespace

TEST_CASE("rxtune status --watch in a real terminal shows the CPU a flood lands on as the hot one", "[integration][status]") {
    if (std::thread::hardware_concurrency() < 2) {
        return rxtune::test::skipBecause("needs two CPUs to tell a hot one from the others");
    }
    StatusLab lab;
    auto flood = lab.flood(30);
    std::this_thread::sleep_for(500ms);
    const std::string session = "rxtune-status-" + std::to_string(::getpid());
    std::string cmd = "ip netns exec " + lab.receiver.name() + " " + rxtuneBin() + " status --watch --interval 500";
    for (const auto& d : lab.dirs()) cmd += " " + d;
    mustRun({"tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "30", cmd});
    std::string screen;
    const bool hot = eventually([&] {
        screen = run({"tmux", "capture-pane", "-p", "-t", session}).out;
        return cpuRow(screen, 0).find("<- hot") != std::string::npos;
    }, 10s, 250ms);
    run({"tmux", "kill-session", "-t", session});
    flood->signal(SIGKILL);
    INFO(screen);
    CHECK(hot);
    CHECK(cpuRow(screen, 1).find("<- hot") == std::string::npos);
    // Every line fits 80 columns, and the layout is there.
    std::istringstream in(screen);
    for (std::string line; std::getline(in, line);) CHECK(line.size() <= 80);
    CHECK(screen.find("rxtune status: ") != std::string::npos);
    CHECK(screen.find("softirq (all)") != std::string::npos);
}

TEST_CASE("rxtune status --json shows what rxtune steers, the journal's state and the daemon", "[integration][status]") {
    StatusLab lab;
    std::ofstream(lab.tmp.path / "p.yaml") << "match:\n  interfaces: [fb]\n  virtual: include\nsteering:\n  mode: rps\n  xps: false\n";
    std::ofstream(lab.tmp.path / "rxtune.yaml") << "profile: " << (lab.tmp.path / "p.yaml").string() << "\nlisten: 127.0.0.1:19877\n"
                                                << "state_dir: " << (lab.tmp.path / "state").string() << "\nrun_dir: "
                                                << (lab.tmp.path / "run").string() << "\nmetrics_interval: 300ms\non_stop: revert\n";
    auto status = [&](std::vector<std::string> extra = {}) {
        std::vector<std::string> argv{rxtuneBin(), "status", "--json", "--interval", "200"};
        for (const auto& d : lab.dirs()) argv.push_back(d);
        for (const auto& e : extra) argv.push_back(e);
        Run r = lab.receiver.exec(argv);
        INFO(r.err);
        REQUIRE(r.status == 0);
        return nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
    };
    // Nothing applied, no daemon.
    auto before = status();
    CHECK(before["profile"].is_null());
    CHECK(before["daemon_pid"].is_null());
    CHECK(before["interfaces"].empty());
    {
        Background daemon(lab.receiver, {rxtuneBin(), "daemon", "--config", (lab.tmp.path / "rxtune.yaml").string()},
                          lab.tmp.path / "daemon.log");
        REQUIRE(eventually([&] { return std::filesystem::exists(lab.tmp.path / "run" / "status.json"); }));
        auto s = status();
        INFO(s.dump(2));
        CHECK(s["profile"] == "p");
        CHECK(s["in_sync"] == true);
        CHECK(s["daemon_pid"].get<long>() == daemon.pid());
        REQUIRE(s["interfaces"].size() == 1);
        CHECK(s["interfaces"][0]["name"] == "fb");
        CHECK(s["interfaces"][0]["mode"] == "rps");
        CHECK_FALSE(s["interfaces"][0]["targets"].get<std::string>().empty());
        // Someone clears the mask: status says the host drifted from the journal.
        lab.receiver.sysfsWrite("class/net/fb/queues/rx-0/rps_cpus", "0");
        auto drifted = status();
        CHECK(drifted["in_sync"] == false);
        CHECK(drifted["drifted"].get<int>() >= 1);
        // Two samples, two documents.
        std::vector<std::string> argv{rxtuneBin(), "status", "--json", "--interval", "100", "--count", "2"};
        for (const auto& d : lab.dirs()) argv.push_back(d);
        Run two = lab.receiver.exec(argv);
        CHECK(std::count(two.out.begin(), two.out.end(), '\n') == 2);
        daemon.signal(SIGTERM);
        CHECK(daemon.wait() == 0);
    }
    // The daemon is gone: its status file no longer counts.
    CHECK(status()["daemon_pid"].is_null());
}
