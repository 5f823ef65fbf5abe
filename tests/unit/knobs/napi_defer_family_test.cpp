// The NAPI deferral family per NAPI (netdev napi-set, where the kernel's policy takes it) and its
// fallback to the device's sysfs files.
#include <catch2/catch.hpp>

#include "../support/plans.hpp"

#include <fstream>

#include "../support/families.hpp"
#include "../support/fixture.hpp"
#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "core/text.hpp"
#include "knobs/registry.hpp"

using namespace rxtune;

namespace {



// The story's host on a kernel whose napi-set takes the deferral values (6.13+); `linked`: its
// queue-get names NAPI 8193 for RX and TX queue 0 (a driver that links them; veth does not).
void withNapiSet(const test::TempTree& tree, bool linked) {
    auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
    doc["napi_set"] = {{"threaded_max", 1}};
    for (auto& l : doc["links"]) {
        if (l["name"] != "enp2s0") continue;
        l["napis"][0]["irq_suspend_timeout"] = 0;
        if (linked) l["queues_netdev"] = {{{"id", 0}, {"tx", false}, {"napi_id", 8193}}, {{"id", 0}, {"tx", true}, {"napi_id", 8193}}};
        else l["queues_netdev"] = {{{"id", 0}, {"tx", false}}, {{"id", 0}, {"tx", true}}};
    }
    tree.put("netlink.json", doc.dump());
}

const char* kDeferProfile = "steering:\n  mode: none\nnic:\n  gro_flush_timeout: 20000\n  irq_suspend_timeout: 2000000\n";

}  // namespace

TEST_CASE("napi_defer: per NAPI through napi-set where the policy takes it, named by the queue it serves", "[knobs][napi_defer]") {
    test::TempTree tree{"story-20cpu-single-queue"};
    withNapiSet(tree, true);
    FileTree fs(tree.path().string());
    test::FakeNetlink nl(tree.path());
    auto plan = preparePlan(test::profileOf(kDeferProfile), fs, nl).value().plan;
    CHECK(test::planLines(plan) == std::vector<std::string>{"enp2s0 napi rx-0 gro_flush_timeout 0 -> 20000",
                                                  "enp2s0 napi rx-0 irq_suspend_timeout 0 -> 2000000"});
    CHECK(plan.settings[0].path == "sys/class/net/enp2s0/napi/rx-0/gro_flush_timeout");
    CHECK(plan.settings[0].why.find("through napi-set: NAPI 8193 (rx-0, the NAPI of that queue)") != std::string::npos);
    CHECK(plan.settings[0].key.queue == 0);
    CHECK_FALSE(plan.settings[0].key.tx);
    // The journal's edge: the path this family made names the same key.
    const KnobFamily& f = test::family("napi_defer");
    for (const auto& s : plan.settings) CHECK(f.keyOf(s.path, s.id) == std::optional<KnobKey>(s.key));

    test::TempTree state{"vm-no-cpufreq"};
    JournalStore store((state.path() / "state").string());
    const Knobs knobs(fs, Services().with<NetlinkSource>(&nl));
    auto r = applyPlan(plan, knobs, store, "t1");
    REQUIRE(r);
    CHECK(r->written.size() == 2);
    CHECK(nl.napiValue(8193, "gro_flush_timeout") == 20000u);
    CHECK(nl.napiValue(8193, "irq_suspend_timeout") == 2000000u);
    // The device's sysfs value is not touched: the NAPI's own is set.
    CHECK(trimmed(fs.read("sys/class/net/enp2s0/gro_flush_timeout").value()) == "0");
    auto again = applyPlan(preparePlan(test::profileOf(kDeferProfile), fs, nl).value().plan, knobs, store, "t2");
    REQUIRE(again);
    CHECK(again->written.empty());
    auto j = store.load().value().value();
    CHECK(verifyApplied(j, knobs).value().empty());

    // A device reset gives the NAPI a new id; its values stay (the kernel keeps them by queue).
    SECTION("revert after a reset reaches the NAPI under its new id") {
        nl.renumberNapi(8193, 8200);
        CHECK(verifyApplied(j, knobs).value().empty());
        auto back = revertAll(knobs, store);
        REQUIRE(back);
        CHECK(back->restored.size() == 2);
        CHECK(nl.napiValue(8200, "gro_flush_timeout") == 0u);
        CHECK(nl.napiValue(8200, "irq_suspend_timeout") == 0u);
    }
    SECTION("someone else's napi-set is drift, named by the NAPI's role") {
        NapiSettings s;
        s.groFlushTimeout = 5;
        REQUIRE(nl.napiSet(8193, s));
        auto drift = verifyApplied(j, knobs).value();
        REQUIRE(drift.size() == 1);
        CHECK(drift[0].id == "enp2s0 napi rx-0 gro_flush_timeout");
        CHECK(drift[0].where == "netdev napi-set of enp2s0 NAPI rx-0");
    }
    SECTION("a failed napi-set undoes the writes before it") {
        REQUIRE(revertAll(knobs, store));
        nl.failNapiSetAt = nl.napiSets + 2;
        auto bad = applyPlan(preparePlan(test::profileOf(kDeferProfile), fs, nl).value().plan, knobs, store, "t3");
        REQUIRE_FALSE(bad);
        CHECK(bad.error().message().find("enp2s0 napi rx-0 irq_suspend_timeout") != std::string::npos);
        CHECK(nl.napiValue(8193, "gro_flush_timeout") == 0u);
    }
}

TEST_CASE("napi_defer: a NAPI no queue names is keyed by its place; without napi-set the device's sysfs file", "[knobs][napi_defer]") {
    SECTION("veth-like: queue-get names no NAPI") {
        test::TempTree tree{"story-20cpu-single-queue"};
        withNapiSet(tree, false);
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        auto plan = preparePlan(test::profileOf(kDeferProfile), fs, nl).value().plan;
        CHECK(test::planLines(plan) == std::vector<std::string>{"enp2s0 napi napi-0 gro_flush_timeout 0 -> 20000",
                                                      "enp2s0 napi napi-0 irq_suspend_timeout 0 -> 2000000"});
        CHECK(plan.settings[0].key.napi == 0);
        CHECK(plan.settings[0].why.find("the kernel links no queue to it: its place in id order") != std::string::npos);
        const KnobFamily& f = test::family("napi_defer");
        CHECK(f.keyOf(plan.settings[0].path, plan.settings[0].id) == std::optional<KnobKey>(plan.settings[0].key));
    }
    SECTION("a kernel without napi-set: sysfs for the two that have a file, irq_suspend_timeout refused with why") {
        test::TempTree tree{"story-20cpu-single-queue"};
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        auto plan = preparePlan(test::profileOf(kDeferProfile), fs, nl).value().plan;
        CHECK(test::planLines(plan) == std::vector<std::string>{
                                 "enp2s0 gro_flush_timeout 0 -> 20000",
                                 "skip enp2s0 irq_suspend_timeout: irq_suspend_timeout is set per NAPI through netdev napi-set, "
                                 "which this kernel does not take (Linux 6.13+)"});
    }
    SECTION("napi-set, but the device has no NAPI now (veth without GRO): the device-wide file, for the NAPIs to come") {
        test::TempTree tree{"story-20cpu-single-queue"};
        withNapiSet(tree, true);
        auto doc = nlohmann::json::parse(std::ifstream(tree.path() / "netlink.json"));
        for (auto& l : doc["links"]) l["napis"] = nlohmann::json::array();
        tree.put("netlink.json", doc.dump());
        FileTree fs(tree.path().string());
        test::FakeNetlink nl(tree.path());
        auto plan = preparePlan(test::profileOf("steering:\n  mode: none\nnic:\n  gro_flush_timeout: 20000\n"), fs, nl).value().plan;
        CHECK(test::planLines(plan) == std::vector<std::string>{"enp2s0 gro_flush_timeout 0 -> 20000"});
    }
    SECTION("irq_suspend_timeout is validated like the others") {
        auto e = loadProfileText("nic:\n  irq_suspend_timeout: -1\n", "bad.yaml", {});
        REQUIRE_FALSE(e);
        CHECK(e.error().message().find("bad.yaml:2:24: nic.irq_suspend_timeout") == 0);
    }
}

TEST_CASE("NAPI roles: the lowest RX queue names a NAPI, a TX-only one its TX queue, the rest their place", "[knobs][napi_defer]") {
    std::vector<NapiInfo> napis(4);
    napis[0].id = 9000, napis[1].id = 8193, napis[2].id = 8194, napis[3].id = 8300;
    std::vector<NapiQueue> queues = {{1, false, 8194}, {0, false, 8193}, {2, false, 8194}, {0, true, 9000}, {1, true, 8194}};
    std::vector<std::string> got;
    for (const auto& [role, n] : napiRoles(napis, queues)) got.push_back(std::to_string(n->id) + " " + role.str());
    CHECK(got == std::vector<std::string>{"8193 rx-0", "8194 rx-1", "8300 napi-0", "9000 tx-0"});
}
