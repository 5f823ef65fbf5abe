#include <catch2/catch.hpp>

#include "../support/families.hpp"

#include <prometheus/text_serializer.h>

#include "../support/fixture.hpp"
#include "knobs/registry.hpp"
#include "metrics/metrics.hpp"

using namespace rxtune;

namespace {

std::string render(const Metrics& m) {
    prometheus::TextSerializer s;
    return s.Serialize(m.registry()->Collect());
}

double value(const std::string& text, const std::string& series) {
    auto p = text.find("\n" + series + " ");
    if (p == std::string::npos) return -1;
    return std::stod(text.substr(p + series.size() + 2));
}

SoftnetRow processed(std::uint32_t n) {
    SoftnetRow r;
    r.processed = n;
    return r;
}

}  // namespace

TEST_CASE("busiest CPU share: 1 when one core does all, 1/N when spread", "[metrics]") {
    Metrics m("test");
    m.updateSoftnet({{0, processed(100)}, {1, processed(100)}}, {{0, 1}, {1, 1}});
    m.updateSoftnet({{0, processed(1100)}, {1, processed(100)}}, {{0, 2}, {1, 1}});
    CHECK(m.busiestShare() == Approx(1.0));
    m.updateSoftnet({{0, processed(1600)}, {1, processed(600)}}, {{0, 3}, {1, 2}});
    CHECK(m.busiestShare() == Approx(0.5));
    CHECK(value(render(m), "rxtune_rx_busiest_cpu_share") == Approx(0.5));
}

TEST_CASE("softnet counters survive the kernel's 32-bit wrap", "[metrics]") {
    Metrics m("test");
    m.updateSoftnet({{0, processed(0xfffffff0u)}}, {});
    m.updateSoftnet({{0, processed(0x10u)}}, {});
    CHECK(value(render(m), "rxtune_softnet_processed_packets_total{cpu=\"0\"}") == Approx(4294967312.0));
}

TEST_CASE("snapshot metrics follow interfaces coming and going", "[metrics]") {
    auto root = test::fixtureRoot("numa2-multi-queue");
    FileTree fs(root.string());
    test::FakeNetlink nl(root);
    auto snap = takeSnapshot(fs, nl, {}).value();
    Metrics m("1.2.3");
    m.updateSnapshot(snap);
    auto text = render(m);
    CHECK(text.find("rxtune_build_info{version=\"1.2.3\"} 1") != std::string::npos);
    CHECK(text.find("rxtune_interface_info{driver=\"mlx5_core\",interface=\"ens1f0\",kind=\"physical\",numa_node=\"1\",verdict=\"multi-queue\"} 1") !=
          std::string::npos);
    CHECK(value(text, "rxtune_interface_queues{direction=\"rx\",interface=\"ens1f0\"}") == 8);
    CHECK(value(text, "rxtune_interface_queues_max{direction=\"rx\",interface=\"ens1f0\"}") == 16);
    CHECK(value(text, "rxtune_queue_steering_cpus{interface=\"ens1f0\",queue=\"rx-0\"}") == 0);
    CHECK(text.find("rxtune_cpu_governor_info{cpu=\"9\",governor=\"performance\"} 1") != std::string::npos);
    snap.nics.erase(snap.nics.begin() + 1);  // ens1f0 goes away
    m.updateSnapshot(snap);
    text = render(m);
    CHECK(text.find("interface=\"ens1f0\"") == std::string::npos);
}

TEST_CASE("apply results, drift and latency", "[metrics]") {
    Metrics m("t");
    m.recordApply({"p1", "d1", "changed", 1700000000, 10, 0});
    m.recordApply({"p2", "d2", "unchanged", 1700000001, 12, 0});
    m.recordApply({"p2", "d2", "failed", 1700000002, 0, 3});
    KnobKey rx{"queue", "v0", "rps_cpus"};
    rx.queue = 1;
    m.countDriftCorrection(makeSetting(test::family("queue"), rx, ValueKind::kCpuMask, "0", "3", ""));
    m.countDriftCorrection(makeSetting(test::family("sysctl"), {"sysctl", "", "net.core.rmem_max"}, ValueKind::kInteger, "1", "2", ""));
    m.observeReapplyLatency(std::chrono::milliseconds(3));
    auto text = render(m);
    CHECK(value(text, "rxtune_applies_total{result=\"changed\"}") == 1);
    CHECK(value(text, "rxtune_applies_total{result=\"failed\"}") == 1);
    CHECK(text.find("rxtune_applied_profile_info{digest=\"d1\",profile=\"p1\"}") == std::string::npos);
    CHECK(value(text, "rxtune_applied_profile_info{digest=\"d2\",profile=\"p2\"}") == 1);
    CHECK(value(text, "rxtune_settings{state=\"in_sync\"}") == 12);
    CHECK(value(text, "rxtune_last_apply_timestamp_seconds") == Approx(1700000001));
    CHECK(value(text, "rxtune_drift_corrections_total{interface=\"v0\",setting=\"rps_cpus\"}") == 1);
    CHECK(value(text, "rxtune_drift_corrections_total{interface=\"\",setting=\"net.core.rmem_max\"}") == 1);
    CHECK(value(text, "rxtune_reapply_latency_seconds_bucket{le=\"0.005\"}") == 1);
    CHECK(value(text, "rxtune_reapply_latency_seconds_bucket{le=\"0.002\"}") == 0);
}

TEST_CASE("drift labels come from the setting's identity, whatever the device is called", "[metrics]") {
    // The labels were once parsed back from the id: a device named cpu0 or cpub got interface="".
    Metrics m("t");
    for (const char* dev : {"cpu0", "cpub", "sysctl"}) {
        KnobKey k{"queue", dev, "rps_cpus"};
        k.queue = 0;
        m.countDriftCorrection(makeSetting(test::family("queue"), k, ValueKind::kCpuMask, "0", "3", ""));
        m.countDriftCorrection(makeSetting(test::family("napi"), {"napi", dev, "napi-kthreads"}, ValueKind::kCpuMask, "", "2", ""));
    }
    KnobKey gov{"governor", "", "governor"};
    gov.cpu = 3;
    m.countDriftCorrection(makeSetting(test::family("governor"), gov, ValueKind::kWord, "powersave", "performance", ""));
    m.countDriftCorrection(makeSetting(test::family("xdp"), {"xdp", "cpu1", "steering"}, ValueKind::kXdp, "", "cpus=1", ""));
    auto text = render(m);
    for (const char* dev : {"cpu0", "cpub", "sysctl"}) {
        CHECK(value(text, "rxtune_drift_corrections_total{interface=\"" + std::string(dev) + "\",setting=\"rps_cpus\"}") == 1);
        CHECK(value(text, "rxtune_drift_corrections_total{interface=\"" + std::string(dev) + "\",setting=\"napi_kthreads\"}") == 1);
    }
    CHECK(value(text, "rxtune_drift_corrections_total{interface=\"\",setting=\"governor\"}") == 1);
    CHECK(value(text, "rxtune_drift_corrections_total{interface=\"cpu1\",setting=\"steering\"}") == 1);
}

TEST_CASE("reloads: counted by result, the last one's outcome, when the one in force was loaded", "[metrics]") {
    Metrics m("t");
    m.recordStartConfig(1700000000);
    auto text = render(m);
    CHECK(value(text, "rxtune_config_last_reload_successful") == 1);
    CHECK(value(text, "rxtune_config_last_reload_success_timestamp_seconds") == Approx(1700000000));
    CHECK(value(text, "rxtune_config_reload_total{result=\"success\"}") == 0);  // the start is not a reload
    CHECK(value(text, "rxtune_config_reload_total{result=\"failure\"}") == 0);
    m.recordReload(true, 1700000010, 0.004);
    m.recordReload(false, 1700000020, 0.001);
    text = render(m);
    CHECK(value(text, "rxtune_config_reload_total{result=\"success\"}") == 1);
    CHECK(value(text, "rxtune_config_reload_total{result=\"failure\"}") == 1);
    CHECK(value(text, "rxtune_config_last_reload_successful") == 0);
    CHECK(value(text, "rxtune_config_last_reload_success_timestamp_seconds") == Approx(1700000010));  // the one in force
    CHECK(value(text, "rxtune_config_last_reload_duration_seconds") == Approx(0.001));
}

TEST_CASE("CPU idle share over the last interval, from /proc/stat totals", "[metrics]") {
    Metrics m("t");
    m.updateCpuIdle({{0, {100, 1000, 0}}, {1, {900, 1000, 0}}});
    CHECK(render(m).find("rxtune_cpu_idle_ratio{") == std::string::npos);  // one reading: no interval yet
    m.updateCpuIdle({{0, {110, 1100, 0}}, {1, {990, 1100, 0}}});
    auto text = render(m);
    CHECK(value(text, "rxtune_cpu_idle_ratio{cpu=\"0\"}") == Approx(0.9));
    CHECK(value(text, "rxtune_cpu_idle_ratio{cpu=\"1\"}") == Approx(0.1));
}
