#include <catch2/catch.hpp>

#include <prometheus/text_serializer.h>

#include "daemon/bpf_control.hpp"

using namespace rxtune;

namespace {

// Stands in for the BPF programs: counts what the governor does to them.
class FakeSource final : public SoftirqSource {
public:
    Result<std::map<unsigned, CpuSoftirq>> read() const override {
        ++reads;
        return std::map<unsigned, CpuSoftirq>{{0, CpuSoftirq{}}};
    }
    void pause() override { attached_ = false; }
    Result<void> resume() override {
        attached_ = true;
        return {};
    }
    bool attached() const override { return attached_; }
    mutable int reads = 0;

private:
    bool attached_ = true;
};

std::string scrape(Metrics& m, const std::string& series) {
    const std::string text = prometheus::TextSerializer().Serialize(m.registry()->Collect());
    auto at = text.find(series + " ");
    return at == std::string::npos ? "" : text.substr(at + series.size() + 1, text.find('\n', at) - at - series.size() - 1);
}

}  // namespace

TEST_CASE("bpf_accounting: off loads nothing and says so", "[daemon][bpf]") {
    Metrics metrics("test");
    bool loaded = false;
    BpfControl c(metrics, [&]() -> Result<std::unique_ptr<SoftirqSource>> {
        loaded = true;
        return std::unique_ptr<SoftirqSource>(new FakeSource());
    });
    DaemonConfig cfg;
    cfg.bpfAccounting = BpfAccounting::kOff;
    c.start(cfg);
    CHECK_FALSE(loaded);
    CHECK_FALSE(c.sample({{0, 100}}, 1).has_value());
    CHECK(scrape(metrics, "rxtune_bpf_info{program=\"softirq\",state=\"disabled\"}") == "1");
}

TEST_CASE("the governor detaches the programs under a softirq storm and brings them back when calm", "[daemon][bpf]") {
    Metrics metrics("test");
    auto* src = new FakeSource();
    BpfControl c(metrics, [&]() -> Result<std::unique_ptr<SoftirqSource>> { return std::unique_ptr<SoftirqSource>(src); });
    DaemonConfig cfg;
    cfg.bpfAccounting = BpfAccounting::kAuto;
    cfg.bpfMaxSoftirqRate = 1000;
    c.start(cfg);
    REQUIRE(c.attached());
    // Read while attached; 5000 NET_RX softirqs/s on CPU 0 is above the limit: paused.
    CHECK(c.sample({{0, 0}}, 0).has_value());
    CHECK(c.sample({{0, 5000}}, 1).has_value());  // the interval was measured; then the governor acts
    CHECK_FALSE(c.attached());
    CHECK(scrape(metrics, "rxtune_bpf_info{program=\"softirq\",state=\"paused\"}") == "1");
    // Paused programs measure nothing: no reading is offered for those intervals.
    const int reads = src->reads;
    for (int t = 2; t < 8 && !c.attached(); ++t) CHECK_FALSE(c.sample({{0, 5000 + 10 * static_cast<unsigned>(t)}}, t).has_value());
    CHECK(src->reads == reads);
    CHECK(c.attached());  // calm for a few samples: back
    // A reload to `on` with the programs paused attaches them at once.
    DaemonConfig on = cfg;
    on.bpfAccounting = BpfAccounting::kOn;
    src->pause();
    c.reconfigure(cfg, on);
    CHECK(c.attached());
    // off/on waits for the next start.
    DaemonConfig off = on;
    off.bpfAccounting = BpfAccounting::kOff;
    c.reconfigure(on, off);
    CHECK(off.bpfAccounting == BpfAccounting::kOn);
}
