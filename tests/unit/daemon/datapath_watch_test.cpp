#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "daemon/datapath_watch.hpp"

using namespace rxtune;

namespace {

const std::string kStats =
    R"({"/rxtune_dp/stats": {"nic": "net_null0", "tap": "gw0", "tx_mode": "lock", "workers": 1, "rx_cpu": 0,
      "tsc_hz": 1000000000, "uptime_cycles": 5000000000, "rx_packets": 10, "rx_bytes": 640, "rx_non_ip": 0,
      "rx_busy_cycles": 1, "nic_tx_packets": 0, "nic_tx_bytes": 0, "nic_tx_dropped": 0, "mbufs_in_use": 1,
      "mbufs_total": 8191, "tx_ring_count": 0, "worker_cpu": [1], "worker_reta_entries": [128],
      "worker_dispatched": [10], "worker_ring_full": [0], "worker_ring_count": [0], "worker_to_tap_packets": [10],
      "worker_to_tap_bytes": [640], "worker_to_tap_dropped": [0], "worker_from_tap_packets": [0],
      "worker_from_tap_bytes": [0], "worker_to_nic": [0], "worker_to_nic_dropped": [0],
      "worker_checksums_fixed": [0], "worker_busy_cycles": [1], "nic_port_ipackets": 10, "nic_port_imissed": 0,
      "nic_port_rx_nombuf": 0, "tap_port_opackets": 10}})";

// One connection of DPDK's telemetry protocol: a greeting, then one reply per command.
class TelemetryServer {
public:
    explicit TelemetryServer(std::string path) : path_(std::move(path)) {
        fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un sun{};
        sun.sun_family = AF_UNIX;
        std::memcpy(sun.sun_path, path_.c_str(), path_.size());
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&sun), sizeof sun) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
        thread_ = std::thread([this] {
            int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            const std::string hello = R"({"version": "DPDK 22.11", "pid": 4242, "max_output_len": 16384})";
            ::send(c, hello.data(), hello.size(), MSG_NOSIGNAL);
            char buf[256];
            if (::recv(c, buf, sizeof buf, 0) > 0) ::send(c, kStats.data(), kStats.size(), MSG_NOSIGNAL);
            ::close(c);
        });
    }
    ~TelemetryServer() {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
        ::unlink(path_.c_str());
    }

private:
    std::string path_;
    int fd_ = -1;
    std::thread thread_;
};

}  // namespace

TEST_CASE("the datapath watch reads each rxtune-dp's telemetry socket into its metrics", "[daemon][datapath]") {
    prometheus::Registry registry;
    DatapathMetrics metrics(registry);
    DatapathWatch watch(metrics);
    const std::string dir = std::filesystem::temp_directory_path() / ("rxt-dpw-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string up = dir + "/up.sock", down = dir + "/none.sock";
    {
        TelemetryServer server(up);
        watch.sample({up, down});
    }
    CHECK(watch.up(up));
    CHECK_FALSE(watch.up(down));
    const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
    CHECK(text.find("rxtune_datapath_up{socket=\"" + up + "\"} 1") != std::string::npos);
    CHECK(text.find("rxtune_datapath_up{socket=\"" + down + "\"} 0") != std::string::npos);
    // The server is gone: the next sample says so.
    watch.sample({up});
    CHECK_FALSE(watch.up(up));
    std::filesystem::remove_all(dir);
}
