#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "../support/temp_dir.hpp"
#include "../support/yaml_bomb.hpp"
#include "knobs/governor_profile.hpp"
#include "knobs/sysctl_profile.hpp"
#include "profile/profile.hpp"
#include "profile/section.hpp"
#include "profile/yaml_config.hpp"

using namespace rxtune;

namespace {

std::vector<std::string> shippedDirs() {
    const char* dir = std::getenv("RXTUNE_PROFILES");
    REQUIRE(dir != nullptr);
    return {dir};
}

std::string profileErrorOf(const std::string& yaml) {
    auto p = loadProfileText(yaml, "bad.yaml", shippedDirs());
    REQUIRE_FALSE(p);
    return p.error().message();
}

using test::TempDir;

}  // namespace

TEST_CASE("every shipped profile loads and validates", "[profile]") {
    for (const char* name : {"single-queue-gateway", "balanced", "throughput", "latency"}) {
        INFO(name);
        auto p = loadProfile(name, shippedDirs());
        REQUIRE(p);
        CHECK(p->name == name);
        CHECK_FALSE(p->description.empty());
    }
}

TEST_CASE("single-queue-gateway carries the story's values", "[profile]") {
    auto p = loadProfile("single-queue-gateway", shippedDirs()).value();
    CHECK(p.steering.mode == SteeringMode::kAuto);  // the story's RPS, when measurement says it helps
    CHECK(loadProfile("balanced", shippedDirs()).value().steering.mode == SteeringMode::kAuto);
    CHECK(p.steering.cpus.kind == CpuChoice::Kind::kAll);
    CHECK(p.steering.flowEntries == 32768);
    CHECK(sysctlsOf(p).at("net.core.netdev_max_backlog").values == std::vector<std::int64_t>{300000});
    CHECK(sysctlsOf(p).at("net.core.netdev_max_backlog").guard == Guard::kAtLeast);
    CHECK(sysctlsOf(p).at("net.core.rmem_max").values[0] == 256 * 1024 * 1024);
    CHECK(sysctlsOf(p).at("net.ipv4.tcp_rmem").values.size() == 3);
    CHECK(governorOf(p)->names == std::vector<std::string>{"performance"});
    CHECK(p.match.verdict == Verdict::kSingleQueue);
    CHECK_FALSE(p.match.includeVirtual);
}

TEST_CASE("include merges with later-wins semantics", "[profile]") {
    auto p = loadProfile("latency", shippedDirs()).value();
    REQUIRE(p.files.size() == 2);
    CHECK(p.files[0].ends_with("balanced.yaml"));
    CHECK(p.files[1].ends_with("latency.yaml"));
    CHECK(p.steering.cpus.kind == CpuChoice::Kind::kNumaLocal);  // inherited
    CHECK(sysctlsOf(p).at("net.core.netdev_max_backlog").guard == Guard::kAtMost);  // overridden
    CHECK(sysctlsOf(p).at("net.core.busy_poll").values[0] == 50);
    auto t = loadProfile("throughput", shippedDirs()).value();
    CHECK(sysctlsOf(t).count("net.core.rmem_max") == 1);  // from single-queue-gateway
    CHECK(sysctlsOf(t).at("net.core.netdev_budget").values[0] == 600);
}

TEST_CASE("steering.auto thresholds: fractions, percentages, durations; merged per key", "[profile]") {
    auto p = loadProfileText("include: single-queue-gateway\nsteering:\n  auto: {rx_share: 70%, min_spare: 0.3, window: 500ms, backoff: 2m, sustain: 5, "
                             "interval: 100ms}\n",
                             "a.yaml", shippedDirs()).value();
    const auto& t = p.steering.autoThresholds;
    CHECK(t.onRxShare == Approx(0.7));
    CHECK(t.minSpare == Approx(0.3));
    CHECK(t.windowSeconds == Approx(0.5));
    CHECK(t.backoffSeconds == Approx(120));
    CHECK(t.sustainSeconds == Approx(5));  // a plain number is seconds
    CHECK(t.intervalSeconds == Approx(0.1));
    CHECK(t.busyOn == Approx(0.9));  // default kept
    CHECK(AutoThresholds{}.sustainSeconds == Approx(2));
    CHECK(AutoThresholds{}.intervalSeconds == Approx(0.25));
    CHECK(profileErrorOf("steering:\n  auto: {rx_share: 1.5}\n").find("bad.yaml:2:20: steering.auto.rx_share: must be between 0 and 1") == 0);
    CHECK(profileErrorOf("steering:\n  auto: {window: 5h}\n").find("unknown unit 'h'") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  auto: {sustain: 0}\n").find("steering.auto.sustain") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  auto: {interval: 10ms}\n").find("steering.auto.interval: must be from 0.05 to 60 seconds") !=
          std::string::npos);
    CHECK(profileErrorOf("steering:\n  auto: {rx_shar: 0.5}\n").find("steering.auto.rx_shar: unknown key") != std::string::npos);
}

TEST_CASE("steering.auto.candidates: rps and xdp in the order given, each once; gain_margin", "[profile]") {
    const auto gateway = loadProfile("single-queue-gateway", shippedDirs()).value();
    const auto& d = gateway.steering.autoThresholds;
    CHECK(d.candidates == std::vector<SteeringMode>{SteeringMode::kRps, SteeringMode::kXdp});
    CHECK(d.gainMargin == Approx(0.05));
    auto p = loadProfileText("include: single-queue-gateway\nsteering:\n  auto:\n    candidates: [xdp]\n    gain_margin: 10%\n",
                             "a.yaml", shippedDirs()).value();
    CHECK(p.steering.autoThresholds.candidates == std::vector<SteeringMode>{SteeringMode::kXdp});
    CHECK(p.steering.autoThresholds.gainMargin == Approx(0.1));
    CHECK(p.steering.autoThresholds.onRxShare == Approx(0.4));  // the rest inherited
    auto bp = loadProfileText("include: single-queue-gateway\nsteering:\n  auto:\n    candidates: [busypoll, napi, rps]\n", "a.yaml",
                              shippedDirs()).value();
    CHECK(bp.steering.autoThresholds.candidates ==
          std::vector<SteeringMode>{SteeringMode::kBusyPoll, SteeringMode::kNapi, SteeringMode::kRps});
    CHECK(profileErrorOf("steering:\n  auto:\n    candidates: [auto]\n") ==
          "bad.yaml:3:18: steering.auto.candidates: expected rps, xdp, napi or busypoll, got 'auto'");
    CHECK(profileErrorOf("steering:\n  auto:\n    candidates: [rps, dpdk]\n") ==
          "bad.yaml:3:23: steering.auto.candidates: expected rps, xdp, napi or busypoll, got 'dpdk'");
    CHECK(profileErrorOf("steering:\n  auto:\n    candidates: [rps, rps]\n") == "bad.yaml:3:23: steering.auto.candidates: 'rps' is listed twice");
    CHECK(profileErrorOf("steering:\n  auto:\n    candidates: []\n").find("bad.yaml:3:17: steering.auto.candidates: expected a list") == 0);
    CHECK(profileErrorOf("steering:\n  auto:\n    candidates: rps\n").find("steering.auto.candidates: expected a list") != std::string::npos);
}

TEST_CASE("profile errors name file, line, column and key", "[profile]") {
    CHECK(profileErrorOf("steerng:\n  mode: rps\n") ==
          "bad.yaml:1:1: steerng: unknown key (expected one of: cpu, datapath, description, include, irq, match, nic, steering, sysctl)");
    CHECK(profileErrorOf("steering:\n  mode: fast\n") == "bad.yaml:2:9: steering.mode: expected rps, xdp, napi, busypoll, auto or none, got 'fast'");
    CHECK(profileErrorOf("steering:\n  rfs:\n    flow_entries: lots\n") ==
          "bad.yaml:3:19: steering.rfs.flow_entries: expected an integer from 0 to 1073741824, got 'lots'");
    CHECK(profileErrorOf("steering:\n  rfs:\n    flow_entries: -4\n").find("expected an integer from 0 to 1073741824, got '-4'") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  cpus: 0-3,x\n").find("bad.yaml:2:9: steering.cpus") == 0);
    CHECK(profileErrorOf("steering:\n  xps: maybe\n") == "bad.yaml:2:8: steering.xps: expected true or false, got 'maybe'");
    CHECK(profileErrorOf("sysctl:\n  kernel.panic: 1\n") ==
          "bad.yaml:2:3: sysctl.kernel.panic: only net.* and vm.* sysctls may be set by a profile");
    CHECK(profileErrorOf("sysctl:\n  net.core.rmem_max: big\n") == "bad.yaml:2:22: sysctl.net.core.rmem_max: expected an integer, got 'big'");
    CHECK(profileErrorOf("sysctl:\n  net.ipv4.tcp_rmem: 1 2\n").find("one number or three") != std::string::npos);
    CHECK(profileErrorOf("sysctl:\n  net/core: 1\n").find("is not a sysctl name") != std::string::npos);
    CHECK(profileErrorOf("match:\n  verdict: fast\n").find("bad.yaml:2:12: match.verdict") == 0);
    CHECK(profileErrorOf("include: no-such-profile\n").find("bad.yaml:1:10: include: profile no-such-profile: not found") == 0);
    CHECK(profileErrorOf("steering: [1, 2]\n") == "bad.yaml:1:11: steering: expected a mapping");
    CHECK(profileErrorOf("cpu:\n  governor: ../../x\n").find("is not a governor name") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  cpus: cgroup:relative\n").find("must be absolute") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  xdp:\n    mode: turbo\n") == "bad.yaml:3:11: steering.xdp.mode: expected generic or native, got 'turbo'");
    CHECK(profileErrorOf("steering:\n  xdp:\n    qsize: 1\n").find("steering.xdp.qsize: expected an integer from 8 to 16384, got '1'") != std::string::npos);
}

TEST_CASE("malformed YAML is located", "[profile]") {
    auto msg = profileErrorOf("steering:\n  mode: [rps\n");
    CHECK(msg.find("bad.yaml:") == 0);
    CHECK(msg.find("malformed YAML") != std::string::npos);
}

TEST_CASE("include cycles are found", "[profile]") {
    TempDir d("rxtune-prof");
    d.put("a.yaml", "include: b\n");
    d.put("b.yaml", "include: a\n");
    auto p = loadProfile("a", {d.path.string()});
    REQUIRE_FALSE(p);
    CHECK(p.error().message().find("include cycle") != std::string::npos);
    CHECK(p.error().message().find("b.yaml:1:10") != std::string::npos);
}

TEST_CASE("profiles are found by name along the search path, or by path", "[profile]") {
    TempDir d("rxtune-prof");
    d.put("mine.yaml", "include: balanced\nsteering:\n  cpus: '0'\n");
    auto p = loadProfile("mine", {d.path.string(), shippedDirs()[0]});
    REQUIRE(p);
    CHECK(p->steering.cpus.kind == CpuChoice::Kind::kList);
    CHECK(p->steering.excludeIrqCpus);  // from balanced
    CHECK(loadProfile((d.path / "mine.yaml").string(), shippedDirs()));
    CHECK_FALSE(loadProfile("../etc/passwd", shippedDirs()));
    CHECK_FALSE(loadProfile("nope", shippedDirs()));
}

TEST_CASE("profiles: an empty file, a key given twice, a non-finite number and YAML 1.1 booleans are errors", "[profile]") {
    CHECK(profileErrorOf("") == "bad.yaml: empty profile (no settings at all: a truncated write or a wrong path?)");
    CHECK(profileErrorOf("# just a comment\n\n") == "bad.yaml: empty profile (no settings at all: a truncated write or a wrong path?)");
    CHECK(profileErrorOf("sysctl:\n  net.core.somaxconn: 1\n  net.core.somaxconn: 2\n") ==
          "bad.yaml:3:3: sysctl.net.core.somaxconn: duplicate key: already given on line 2 (a key may appear once in a mapping)");
    CHECK(profileErrorOf("steering:\n  mode: rps\nsteering:\n  mode: none\n").find("bad.yaml:3:1: steering: duplicate key") == 0);
    CHECK(profileErrorOf("steering:\n  auto: {rx_share: nan}\n").find("steering.auto.rx_share: expected a fraction") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  auto: {busy: .nan}\n").find("steering.auto.busy: expected a fraction") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  auto: {window: inf}\n").find("steering.auto.window: expected a duration") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  auto: {backoff: -infs}\n").find("expected a duration") != std::string::npos);
    CHECK(profileErrorOf("steering:\n  xps: yes\n") == "bad.yaml:2:8: steering.xps: expected true or false, got 'yes'");
    // An included file that is empty is named.
    TempDir d("rxtune-prof");
    std::ofstream(d.path / "empty.yaml") << "";
    std::ofstream(d.path / "child.yaml") << "include: empty\n";
    auto p = loadProfile("child", {d.path.string()});
    REQUIRE_FALSE(p);
    CHECK(p.error().message() == (d.path / "empty.yaml").string() + ": empty profile (no settings at all: a truncated write or a wrong path?)");
}

TEST_CASE("a profile of nested aliases is refused at once, not expanded", "[profile][limits]") {
    // Ten anchors of nine aliases each hold 9^10 nodes; twenty, 9^20. Either is refused after at
    // most kMaxNodes visits.
    for (unsigned levels : {10u, 20u}) {
        INFO(levels << " levels");
        for (const auto& yaml : {test::aliasBomb(levels, "steering"), test::nestedAliasBomb(levels, "include"),
                                 test::nestedAliasBomb(levels, "sysctl")}) {
            const auto e = profileErrorOf(yaml);
            CHECK(e.rfind("bad.yaml:", 0) == 0);
            CHECK(e.find("more than 100000 nodes once its aliases are expanded") != std::string::npos);
        }
    }
    // The same bomb in an included file names that file.
    TempDir d("rxtune-prof");
    d.put("bomb.yaml", test::aliasBomb(10, "steering"));
    d.put("child.yaml", "include: bomb\nsteering:\n  mode: rps\n");
    auto p = loadProfile("child", {d.path.string()});
    REQUIRE_FALSE(p);
    CHECK(p.error().message().rfind((d.path / "bomb.yaml").string() + ":", 0) == 0);
}

TEST_CASE("aliases within the limits still work", "[profile][limits]") {
    auto p = loadProfileText("match:\n  interfaces: &names [eth0, eth1]\n  drivers: *names\n  virtual: include\n", "a.yaml", {});
    REQUIRE(p);
    CHECK(p->match.drivers == std::vector<std::string>{"eth0", "eth1"});
    // Four levels expand to some 16 thousand nodes: under the limit, and then refused for what
    // it is (an unknown key), not for its size.
    const auto e = profileErrorOf(test::aliasBomb(4, "steering"));
    CHECK(e.find("more than 100000 nodes") == std::string::npos);
    CHECK(e.find("unknown key") != std::string::npos);
}

TEST_CASE("a profile nested too deeply or too large is refused", "[profile][limits]") {
    std::string deep = "steering: " + std::string(70, '[') + std::string(70, ']') + "\n";
    CHECK(profileErrorOf(deep).find("nested more than 64 levels deep") != std::string::npos);
    const std::string big = "# " + std::string(1 << 20, 'x') + "\nsteering:\n  mode: rps\n";
    CHECK(profileErrorOf(big) == "bad.yaml: profile of 1048601 bytes: the limit is 1048576 bytes");
    // Read from a file, the text stops one byte past the limit, and the same error names the file.
    TempDir d("rxtune-prof");
    d.put("big.yaml", big);
    auto p = loadProfile((d.path / "big.yaml").string(), {});
    REQUIRE_FALSE(p);
    CHECK(p.error().message() == (d.path / "big.yaml").string() + ": profile of 1048577 bytes: the limit is 1048576 bytes");
}

TEST_CASE("an empty profile name or include is refused", "[profile]") {
    CHECK_FALSE(loadProfile("", shippedDirs()));
    CHECK(loadProfile("", shippedDirs()).error().message().find("got an empty one") != std::string::npos);
    CHECK(profileErrorOf("include: ''\n").find("bad.yaml:1:10: include: ") == 0);
}

TEST_CASE("a key given twice is found in a large mapping too", "[profile][limits]") {
    std::string yaml = "sysctl:\n";
    for (int i = 0; i < 200; ++i) yaml += "  net.core.k" + std::to_string(i) + ": 1\n";
    yaml += "  net.core.k150: 2\n";
    CHECK(profileErrorOf(yaml) == "bad.yaml:202:3: sysctl.net.core.k150: duplicate key: already given on line 152 (a key may appear once in a mapping)");
    // Within the first 32 keys, the linear look finds it.
    CHECK(profileErrorOf("sysctl:\n  net.core.a: 1\n  net.core.b: 1\n  net.core.a: 2\n") ==
          "bad.yaml:4:3: sysctl.net.core.a: duplicate key: already given on line 2 (a key may appear once in a mapping)");
}

namespace {
// A family's key under steering, registered as a family's profile file would register it.
struct SteeringExtra {
    long n = 0;
};
constexpr Slot<SteeringExtra> kSteeringExtra{"steering.test_extra"};
const SectionRegistration kSteeringExtraSection{{ProfileSection::of(kSteeringExtra, [](const YAML::Node& v, const Location&) {
    return SteeringExtra{yamlcfg::integer<long>(v, "steering.test_extra", 0, 9)};
})}};
}  // namespace

TEST_CASE("a family's section under steering is a steering key, placed and checked by its family", "[profile]") {
    auto p = loadProfileText("steering:\n  mode: rps\n  test_extra: 7\n", "ok.yaml", shippedDirs());
    REQUIRE(p);
    REQUIRE(p->section(kSteeringExtra) != nullptr);
    CHECK(p->section(kSteeringExtra)->n == 7);
    CHECK(profileErrorOf("steering:\n  test_extra: 12\n").find("bad.yaml:2:15: steering.test_extra: expected an integer from 0 to 9") == 0);
    const std::string unknown = profileErrorOf("steering:\n  test_extr: 1\n");
    CHECK(unknown.find("steering.test_extr: unknown key") != std::string::npos);
    CHECK(unknown.find("test_extra") != std::string::npos);
}
