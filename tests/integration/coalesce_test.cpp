// Interrupt coalescing against the kernel's ethtool netlink: a TAP (whose driver offers rx-frames
// alone: tun's rx_batched) is set, verified, found drifted and reverted; a veth (no coalescing ops)
// is skipped with the kernel's answer.
#include <catch2/catch.hpp>

#include <map>

#include <nlohmann/json.hpp>

#include "support.hpp"

using nlohmann::json;
using namespace rxtune::itest;

namespace {

// `ethtool -c DEV`'s value of one parameter ("rx-frames"), as the ethtool tool shows it.
std::string ethtoolShows(NetNs& ns, const std::string& dev, const std::string& param) {
    Run r = ns.exec({"ethtool", "-c", dev});
    REQUIRE(r.status == 0);
    const auto at = r.out.find("\n" + param + ":");
    REQUIRE(at != std::string::npos);
    const auto from = r.out.find_first_not_of(" \t", at + param.size() + 2);
    return r.out.substr(from, r.out.find('\n', from) - from);
}

}  // namespace

TEST_CASE("coalescing on a real TAP: set, verified, drift found, reverted; a veth skipped with the kernel's answer", "[integration][coalesce]") {
    NetNs ns;
    ns.ip({"tuntap", "add", "dev", "ct0", "mode", "tap"});
    ns.ip({"link", "add", "cv0", "type", "veth", "peer", "name", "cv0p"});
    Scratch s;
    const std::string before = ethtoolShows(ns, "ct0", "rx-frames");
    const std::string prof = s.profile("coalesce", "match:\n  interfaces: [ct0, cv0]\n  virtual: include\nsteering:\n  mode: none\n"
                                                   "nic:\n  coalesce:\n    rx_frames: 8\n    rx_usecs: 20\n");

    // detect: the TAP's one parameter, the veth's refusal.
    auto ifs = json::parse(ns.exec({rxtuneBin(), "detect", "--json", "-i", "ct0", "-i", "cv0"}).out)["interfaces"];
    for (const auto& i : ifs) {
        if (i["name"] == "ct0") {
            CHECK(std::to_string(i["coalesce"]["rx_frames"].get<unsigned>()) == before);
            CHECK(i["coalesce"]["rx_usecs"].is_null());
        } else {
            CHECK(i["coalesce"]["supported"] == false);
            CHECK(i["coalesce"]["error"] == "Operation not supported");
        }
    }

    Run plan = ns.exec(s.args({"plan", "--json", "--profile", prof}));
    INFO(plan.out << plan.err);
    CHECK(plan.status == 2);
    const json p = json::parse(plan.out);
    REQUIRE(p["settings"].size() == 1);
    CHECK(p["settings"][0]["id"] == "ct0 coalesce rx_frames");
    CHECK(p["settings"][0]["desired"] == "8");
    std::map<std::string, std::string> skipped;
    for (const auto& k : p["skipped"]) skipped[k["id"]] = k["reason"];
    CHECK(skipped["ct0 coalesce rx_usecs"] == "the driver does not offer rx_usecs (ethtool -c shows it n/a)");
    CHECK(skipped["cv0 coalesce rx_frames"] == "the driver has no coalescing to set (Operation not supported)");
    CHECK(skipped["cv0 coalesce rx_usecs"] == "the driver has no coalescing to set (Operation not supported)");

    Run apply = ns.exec(s.args({"apply", "--profile", prof}));
    INFO(apply.out << apply.err);
    REQUIRE(apply.status == 0);
    CHECK(ethtoolShows(ns, "ct0", "rx-frames") == "8");
    CHECK(ns.exec(s.args({"apply", "--profile", prof})).out.find("nothing to do") != std::string::npos);
    CHECK(ns.exec(s.args({"verify"})).status == 0);

    // Someone else sets it: verify names it.
    ns.exec({"ethtool", "-C", "ct0", "rx-frames", "4"});
    Run drift = ns.exec(s.args({"verify"}));
    CHECK(drift.status == 3);
    CHECK(drift.out.find("ct0 coalesce rx_frames") != std::string::npos);

    Run revert = ns.exec(s.args({"revert"}));
    INFO(revert.out << revert.err);
    REQUIRE(revert.status == 0);
    CHECK(ethtoolShows(ns, "ct0", "rx-frames") == before);

    // A value the profile cannot hold: refused with file, line and key; the TAP as it was.
    const std::string bad = s.profile("bad", "match:\n  interfaces: [ct0]\n  virtual: include\nnic:\n  coalesce:\n    adaptive_rx: maybe\n");
    Run refused = ns.exec(s.args({"apply", "--profile", bad}));
    CHECK(refused.status != 0);
    CHECK(refused.err.find("bad.yaml:6:18: nic.coalesce.adaptive_rx: expected true or false, got 'maybe'") != std::string::npos);
    CHECK(ethtoolShows(ns, "ct0", "rx-frames") == before);
}
