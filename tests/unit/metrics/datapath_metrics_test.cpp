#include <catch2/catch.hpp>

#include <prometheus/text_serializer.h>

#include "inventory/dp_telemetry.hpp"
#include "metrics/datapath_metrics.hpp"

using namespace rxtune;

namespace {

// A reply as rxtune-dp's /rxtune_dp/stats gives it (two workers).
std::string reply(uint64_t rx, uint64_t toTap0) {
    return R"({"/rxtune_dp/stats": {"nic": "net_af_packet0", "tap": "gw0", "tx_mode": "ring", "workers": 2,
      "rx_cpu": 0, "tsc_hz": 1000000000, "uptime_cycles": 5000000000, "rx_packets": )" + std::to_string(rx) +
           R"(, "rx_bytes": 150000, "rx_non_ip": 3, "rx_busy_cycles": 500000000, "nic_tx_packets": 90,
      "nic_tx_bytes": 9000, "nic_tx_dropped": 1, "mbufs_in_use": 2100, "mbufs_total": 8191, "tx_ring_count": 0,
      "worker_cpu": [0, 1], "worker_reta_entries": [64, 64], "worker_dispatched": [60, 40],
      "worker_ring_full": [2, 0], "worker_ring_count": [0, 1], "worker_to_tap_packets": [)" +
           std::to_string(toTap0) + R"(, 40],
      "worker_to_tap_bytes": [6000, 4000], "worker_to_tap_dropped": [0, 0], "worker_from_tap_packets": [50, 41],
      "worker_from_tap_bytes": [5000, 4100], "worker_to_nic": [50, 41], "worker_to_nic_dropped": [0, 0],
      "worker_checksums_fixed": [60, 40], "worker_busy_cycles": [100000000, 250000000],
      "nic_port_ipackets": 100, "nic_port_imissed": 4, "nic_port_rx_nombuf": 1, "tap_port_opackets": 100}})";
}

std::string render(prometheus::Registry& r) {
    prometheus::TextSerializer s;
    return s.Serialize(r.Collect());
}

}  // namespace

TEST_CASE("datapath telemetry: a reply parses into per-worker counters") {
    auto s = parseDatapathStats(reply(100, 60));
    REQUIRE(s);
    CHECK(s->tap == "gw0");
    CHECK(s->rxPackets == 100);
    REQUIRE(s->workers.size() == 2);
    CHECK(s->workers[1].cpu == 1);
    CHECK(s->workers[0].ringFull == 2);
    CHECK(s->workers[1].fromTapPackets == 41);
    CHECK(s->nicPort.at("imissed") == 4);
    CHECK(s->tapPort.at("opackets") == 100);
}

TEST_CASE("datapath telemetry: malformed replies are errors, not crashes") {
    CHECK_FALSE(parseDatapathStats(""));
    CHECK_FALSE(parseDatapathStats("{}"));
    CHECK(parseDatapathStats(R"({"/ethdev/list": [0, 1]})").error().detail.find("not an rxtune-dp socket") != std::string::npos);
    auto shortArray = reply(1, 1);
    shortArray.replace(shortArray.find("[0, 1]"), 6, "[0]");
    CHECK(parseDatapathStats(shortArray).error().detail.find("worker_cpu") != std::string::npos);
    auto negative = reply(1, 1);
    negative.replace(negative.find("\"rx_non_ip\": 3"), 14, "\"rx_non_ip\": -3");
    CHECK(parseDatapathStats(negative).error().detail.find("rx_non_ip") != std::string::npos);
}

TEST_CASE("datapath metrics: counters, a down socket, and a restarted datapath") {
    prometheus::Registry reg;
    DatapathMetrics m(reg);
    const std::string sock = "/var/run/dpdk/gw/dpdk_telemetry.v2";
    auto s = parseDatapathStats(reply(100, 60));
    REQUIRE(s);
    s->pid = 42;
    m.update(sock, *s);
    auto text = render(reg);
    CHECK(text.find("rxtune_datapath_up{socket=\"" + sock + "\"} 1") != std::string::npos);
    CHECK(text.find("rxtune_datapath_rx_packets_total{interface=\"gw0\"} 100") != std::string::npos);
    CHECK(text.find("rxtune_datapath_worker_packets_total{direction=\"to_tap\",interface=\"gw0\",queue=\"1\"} 40") != std::string::npos);
    CHECK(text.find("rxtune_datapath_dropped_packets_total{interface=\"gw0\",queue=\"0\",reason=\"ring_full\"} 2") != std::string::npos);
    CHECK(text.find("rxtune_datapath_rx_busy_seconds_total{interface=\"gw0\"} 0.5") != std::string::npos);
    CHECK(text.find("rxtune_datapath_nic_missed_packets_total{interface=\"gw0\"} 5") != std::string::npos);
    CHECK(text.find("rxtune_datapath_worker_info{cpu=\"1\",interface=\"gw0\",queue=\"1\",reta_entries=\"64\"} 1") != std::string::npos);

    auto later = parseDatapathStats(reply(250, 150));
    later->pid = 42;
    m.update(sock, *later);
    CHECK(render(reg).find("rxtune_datapath_rx_packets_total{interface=\"gw0\"} 250") != std::string::npos);

    m.update(sock, fail(ECONNREFUSED, "connect", sock));
    text = render(reg);
    CHECK(text.find("rxtune_datapath_up{socket=\"" + sock + "\"} 0") != std::string::npos);
    CHECK(text.find("rxtune_datapath_rx_packets_total") == std::string::npos);

    auto restarted = parseDatapathStats(reply(7, 5));  // a new process: counters start again
    restarted->pid = 43;
    m.update(sock, *restarted);
    CHECK(render(reg).find("rxtune_datapath_rx_packets_total{interface=\"gw0\"} 7") != std::string::npos);
}
