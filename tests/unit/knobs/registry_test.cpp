#include <catch2/catch.hpp>

#include "../support/families.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "apply/apply.hpp"
#include "knobs/registry.hpp"
#include "core/services.hpp"
#include "profile/section.hpp"

using namespace rxtune;
namespace fs = std::filesystem;

namespace {

KnobKey queue(const std::string& dev, bool tx, int q, const std::string& file) {
    KnobKey k{"queue", dev, file};
    k.queue = q;
    k.tx = tx;
    return k;
}

KnobKey irq(const std::string& dev, int n, const std::string& action) {
    KnobKey k{"irq", dev, action};
    k.irq = n;
    return k;
}

KnobKey governor(int cpu) {
    KnobKey k{"governor", "", "governor"};
    k.cpu = cpu;
    return k;
}

}  // namespace

TEST_CASE("the families' profile keys register themselves", "[knobs][profile]") {
    std::set<std::string> paths;
    for (const auto& s : profileSections()) CHECK(paths.insert(s.path()).second);
    // Those of the build before the families registered themselves are there (a later family adds its own).
    for (const char* p : {"cpu.governor", "irq.cpus", "nic.coalesce", "nic.gro_flush_timeout", "nic.napi_defer_hard_irqs", "nic.rings", "sysctl"})
        CHECK(paths.count(p));
}

TEST_CASE("ids and paths as plans and journals have always shown them", "[knobs]") {
    // Each family's keys round trip in the conformance suite (tests/unit/knobs/conformance/).
    CHECK(test::family("queue").id(queue("eth0", false, 3, "rps_cpus")) == "eth0 rx-3 rps_cpus");
    CHECK(test::family("queue").path(queue("eth0", true, 1, "xps_cpus")) == "sys/class/net/eth0/queues/tx-1/xps_cpus");
    CHECK(test::family("governor").id(governor(5)) == "cpu5 governor");
    CHECK(test::family("xdp").path({"xdp", "fb", "steering"}) == "sys/fs/bpf/rxtune/fb");
    CHECK(test::family("rps_default_mask").id({}) == "sysctl net.core.rps_default_mask");
    CHECK(test::family("irq").id(irq("enp1s0", 77, "enp1s0-TxRx-0")) == "enp1s0 irq 77 enp1s0-TxRx-0");
    CHECK(test::family("irq").path(irq("enp1s0", 77, "enp1s0-TxRx-0")) == "proc/irq/77/smp_affinity_list");
    // An IRQ's number alone is not its identity: without the owner the journal entry is a plain file.
    CHECK(keyOfPath("proc/irq/77/smp_affinity_list").family == "file");
}

TEST_CASE("a path no family built is a plain file; near misses are not claimed", "[knobs]") {
    for (const char* p : {"sys/class/net/eth0/mtu", "sys/class/net/eth0/queues/rx-x/rps_cpus", "sys/class/net/eth0/queues/rx-0/other",
                          "sys/class/net/eth0/queues/rx-0/rps_cpus/more", "sys/fs/bpf/rxtune/a/b", "sys/fs/bpf/rxtune/",
                          "sys/devices/system/cpu/cpuX/cpufreq/scaling_governor", "proc/sys/", "sys/x"}) {
        INFO(p);
        const KnobKey k = keyOfPath(p);
        CHECK(k.family == "file");
        CHECK(familyOf(k).path(k) == p);
    }
}

TEST_CASE("the registry lists each family once, host-wide ones before devices' before CPUs'", "[knobs]") {
    std::set<std::string> seen;
    for (const KnobFamily* f : knobFamilies()) CHECK(seen.insert(std::string(f->name())).second);
    CHECK(&test::family("file") == &fileFamily());
}

namespace {

// One key of every family that writes, as the registry test above builds them.
std::vector<KnobKey> oneOfEach() {
    return {{"sysctl", "", "net.core.rmem_max"},
            {"rps_default_mask", "", "net.core.rps_default_mask"},
            queue("enp2s0", false, 0, "rps_cpus"),
            queue("enp2s0", false, 0, "rps_flow_cnt"),
            queue("enp2s0", true, 1, "xps_cpus"),
            {"xdp", "enp2s0", "steering"},
            {"napi", "enp2s0", "threaded"},
            {"napi", "enp2s0", "napi-kthreads"},
            {"napi_defer", "enp2s0", "gro_flush_timeout"},
            governor(3),
            irq("enp2s0", 130, "enp2s0"),
            {"rings", "enp2s0", "rx"}};
}

}  // namespace

TEST_CASE("the journal stores each knob's typed key, and reads a journal of the build before by its paths", "[knobs][journal]") {
    // Written by the build before typed keys: 01ecf3a's own JournalStore::save, compiled from that
    // commit (ids and paths only).
    const fs::path before = fs::path(std::getenv("RXTUNE_SOURCE")) / "tests" / "fixtures" / "journals" / "before-typed-keys.json";
    std::ifstream in(before);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    auto old = parseJournal(text.str(), std::nullopt, before.string());
    REQUIRE(old);
    for (const auto& o : old->originals) CHECK(o.key.family.empty());  // none stored
    REQUIRE(recoverKeys(*old));
    const auto keys = oneOfEach();
    REQUIRE(old->originals.size() == keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
        INFO(old->originals[i].id);
        CHECK(old->originals[i].key == keys[i]);
        CHECK(old->applied[i].key == keys[i]);
    }

    // This build writes the keys; they come back as they were, without a look at the path.
    const fs::path dir = fs::temp_directory_path() / ("rxtune-keys-" + std::to_string(getpid()));
    fs::create_directories(dir);
    JournalStore store(dir.string());
    REQUIRE(store.save(*old));
    std::ifstream written(store.path());
    std::stringstream w;
    w << written.rdbuf();
    CHECK(w.str().find("\"key\": {\"family\": \"irq\", \"device\": \"enp2s0\", \"name\": \"enp2s0\", \"irq\": 130}") != std::string::npos);
    auto back = parseJournal(w.str(), std::nullopt, store.path());
    REQUIRE(back);
    for (size_t i = 0; i < keys.size(); ++i) CHECK(back->originals[i].key == keys[i]);
    // A stored key that its family does not build the stored path from is not trusted: the path
    // is what revert writes, and the key is the one that path says.
    auto edited = w.str();
    const std::string from = "\"irq\": 130}", to = "\"irq\": 131}";
    edited.replace(edited.find(from), from.size(), to);
    auto tampered = parseJournal(edited, std::nullopt, store.path());
    REQUIRE(tampered);
    REQUIRE(recoverKeys(*tampered));
    for (size_t i = 0; i < keys.size(); ++i) CHECK(tampered->originals[i].key == keys[i]);
    fs::remove_all(dir);
}

TEST_CASE("services are found by the type their users ask for", "[knobs]") {
    struct Base {
        virtual ~Base() = default;
    };
    struct Derived : Base {};
    Derived d;
    Services s;
    CHECK(s.get<Base>() == nullptr);
    s.with<Base>(&d);
    CHECK(s.get<Base>() == &d);
    CHECK(s.get<Derived>() == nullptr);  // put in as a Base, asked for as one
    s.with<Base>(nullptr);
    CHECK(s.get<Base>() == nullptr);
}

TEST_CASE("a journal entry of a family this build does not have is refused, not re-typed", "[knobs][journal]") {
    const fs::path dir = fs::temp_directory_path() / ("rxtune-unknown-" + std::to_string(getpid()));
    fs::create_directories(dir);
    JournalStore store(dir.string());
    Journal j;
    j.state = "applied";
    j.profile = "p";
    KnobKey future{"flow_limit_v9", "", "net.core.flow_limit_cpu_bitmap"};
    j.originals.push_back({"sysctl net.core.flow_limit_cpu_bitmap", "proc/sys/net/core/flow_limit_cpu_bitmap", ValueKind::kCpuMask, "0", future});
    REQUIRE(store.save(j));
    auto loaded = store.load();
    REQUIRE(loaded);
    REQUIRE(*loaded);
    auto r = recoverKeys(**loaded);
    REQUIRE_FALSE(r);
    const std::string m = r.error().message();
    INFO(m);
    CHECK(m.find("'sysctl net.core.flow_limit_cpu_bitmap'") != std::string::npos);
    CHECK(m.find("'flow_limit_v9'") != std::string::npos);
    CHECK(m.find(store.path()) != std::string::npos);
    // What uses the journal says the same and writes nothing.
    FileTree tree(dir.string());
    const Knobs knobs(tree, Services{});
    auto reverted = revertAll(knobs, store);
    REQUIRE_FALSE(reverted);
    CHECK(reverted.error().message().find("'flow_limit_v9'") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "proc"));
    CHECK(store.load().value());  // the journal is kept
    fs::remove_all(dir);
}

TEST_CASE("the registry: every family once, by rank; names are found, unknown ones are not", "[knobs]") {
    std::vector<std::string> names;
    for (const KnobFamily* f : knobFamilies()) names.push_back(std::string(f->name()));
    // The families of the build before plan in the order its table listed them (the golden
    // journals hold it too); a family added later goes where its rank puts it.
    const std::vector<std::string> before = {"sysctl", "rps_default_mask", "xdp", "queue", "napi", "napi_defer", "irq", "rings",
                                             "coalesce", "governor"};
    std::vector<std::string> kept;
    for (const auto& n : names)
        if (std::find(before.begin(), before.end(), n) != before.end()) kept.push_back(n);
    CHECK(kept == before);
    for (const KnobFamily* f : knobFamilies()) CHECK(findFamily(f->name()) == f);
    CHECK(findFamily("file") == &fileFamily());
    CHECK(findFamily("nope") == nullptr);
}
