// The golden journals: what an apply of the same two profiles on every fixture host journaled in
// the build of fbad312 (before the knob families registered themselves), kept as that build wrote
// the files (tests/fixtures/journals/fbad312/<host>-<variant>.json and its completion mark). Today's
// build must journal the same originals (id, path, key, kind, value) and the same applied settings,
// and must revert those files, as written then, to the byte-identical tree and the same driver
// state. These files are never regenerated: a later journal format adds a directory beside them.
#include <catch2/catch.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/fake_threads.hpp"
#include "../support/driver_state.hpp"
#include "../support/fixture.hpp"
#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "knobs/registry.hpp"
#include "profile/profile.hpp"

using namespace rxtune;
namespace fs = std::filesystem;

namespace {

// Every family that writes through a file or netlink: steering by RPS with RFS, sysctls, governors,
// the RX IRQ, deferral, rings and coalescing; and threaded NAPI.
constexpr const char* kEverything = R"(steering:
  mode: rps
  cpus: all
  rfs:
    flow_entries: 32768
sysctl:
  net.core.netdev_max_backlog: ">= 300000"
  net.core.rmem_max: ">= 268435456"
  net.ipv4.tcp_rmem: ">= 4096 131072 268435456"
cpu:
  governor: [performance]
irq:
  cpus: '1'
nic:
  rings: {rx: max, tx: max}
  gro_flush_timeout: 20000
  napi_defer_hard_irqs: 10
  coalesce: {rx_usecs: 50, adaptive_rx: true}
)";
constexpr const char* kNapi = "steering:\n  mode: napi\n";

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A fixture host as applied to: the tree, its fake driver and its NAPI kthreads.
struct JournalHost {
    explicit JournalHost(const std::string& name) : tree(name), fsys(tree.path().string()), nl(tree.path()), threads(tree) {
        // An IRQ's owner as /proc/irq/N/<action> shows it, for each IRQ the fixture names.
        if (!fs::exists(tree.path() / "proc" / "irq")) return;
        for (const auto& e : fs::directory_iterator(tree.path() / "proc" / "irq")) {
            if (!e.is_directory()) continue;
            // The list procfs prints back as written: the tree compares byte for byte after a revert.
            const auto list = tree.path() / "proc" / "irq" / e.path().filename() / "smp_affinity_list";
            if (fs::exists(list)) {
                std::string text = slurp(list);
                while (!text.empty() && text.back() == '\n') text.pop_back();
                tree.put(fs::relative(list, tree.path()).string(), text);
            }
        }
    }
    Knobs knobs() { return Knobs(fsys, Services().with<NetlinkSource>(&nl).with<NapiThreads>(&threads)); }
    test::TempTree tree;
    test::TempTree state{"vm-no-cpufreq"};
    FileTree fsys;
    test::FakeNetlink nl;
    test::FakeThreads threads;
    JournalStore store{(state.path() / "state").string()};
};

// The files that differ between two trees, for the failure's message.
std::string treeDiff(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
    std::ostringstream out;
    for (const auto& [k, v] : a)
        if (auto it = b.find(k); it == b.end() || it->second != v) out << k << ": [" << v << "] vs [" << (it == b.end() ? "(none)" : it->second) << "]\n";
    for (const auto& [k, v] : b)
        if (!a.count(k)) out << k << ": (none) vs [" << v << "]\n";
    return out.str();
}

std::string entries(const Journal& j) {
    std::ostringstream out;
    auto key = [](const KnobKey& k) {
        return k.family + "|" + k.device + "|" + k.name + "|" + std::to_string(k.queue) + "|" + std::to_string(k.tx) + "|" +
               std::to_string(k.cpu) + "|" + std::to_string(k.irq);
    };
    for (const auto& o : j.originals)
        out << "original " << o.id << " @" << o.path << " " << key(o.key) << " kind " << int(o.kind) << " = [" << o.value << "]\n";
    for (const auto& s : j.applied)
        out << "applied " << s.id << " @" << s.path << " " << key(s.key) << " kind " << int(s.kind) << " = [" << s.desired << "]\n";
    out << "profile " << j.profile << " state " << j.state << "\n";
    return out.str();
}

}  // namespace

TEST_CASE("journals of the build before read, hold and revert as they did", "[apply][journal][golden]") {
    const fs::path dir = fs::path(std::getenv("RXTUNE_SOURCE")) / "tests" / "fixtures" / "journals" / "fbad312";
    const bool update = std::getenv("RXTUNE_UPDATE_GOLDEN_JOURNALS") != nullptr;  // only to make the set once
    int compared = 0;
    for (const auto& host : test::fixtureHosts()) {
        for (const auto& [variant, text] : {std::pair<std::string, std::string>{"everything", kEverything}, {"napi", kNapi}}) {
            const std::string name = host + "-" + variant;
            INFO(name);
            JournalHost h(host);
            const auto before = test::contents(h.tree.path());
            const auto driverBefore = test::driverState(h.nl);
            auto profile = loadProfileText(text, name + ".yaml", {}).value();
            auto prepared = preparePlan(profile, h.fsys, h.nl);
            const fs::path file = dir / (name + ".json");
            if (!prepared) {
                INFO(prepared.error().message());
                CHECK_FALSE(fs::exists(file));  // it did not plan then either
                continue;
            }
            auto applied = applyPlan(prepared->plan, h.knobs(), h.store, "2026-12-05T00:00:00Z");
            if (!applied || !h.store.load().value()) {
                if (!applied) INFO(applied.error().message());
                CHECK_FALSE(fs::exists(file));
                continue;
            }
            if (update) {
                fs::create_directories(dir);
                fs::copy_file(h.store.path(), file, fs::copy_options::overwrite_existing);
                if (fs::exists(h.store.markPath()))
                    fs::copy_file(h.store.markPath(), dir / (name + ".applied"), fs::copy_options::overwrite_existing);
            }
            REQUIRE(fs::exists(file));
            // The same originals and applied settings as that build journaled.
            const fs::path mark = dir / (name + ".applied");
            const std::string markText = fs::exists(mark) ? slurp(mark) : "";
            auto then = parseJournal(slurp(file), fs::exists(mark) ? std::optional<std::string_view>(markText) : std::nullopt, file.string());
            REQUIRE(then);
            REQUIRE(recoverKeys(*then));
            auto now = h.store.load().value();
            REQUIRE(now);
            CHECK(entries(*now) == entries(*then));

            // That build's files in place of today's: verify finds the host in sync, and revert
            // gives the tree and the drivers back exactly.
            fs::copy_file(file, h.store.path(), fs::copy_options::overwrite_existing);
            fs::remove(h.store.markPath());
            if (fs::exists(dir / (name + ".applied")))
                fs::copy_file(dir / (name + ".applied"), h.store.markPath(), fs::copy_options::overwrite_existing);
            auto loaded = h.store.load().value();
            REQUIRE(loaded);
            auto drift = verifyApplied(*loaded, h.knobs());
            REQUIRE(drift);
            CHECK(drift->empty());
            auto reverted = revertAll(h.knobs(), h.store);
            REQUIRE(reverted);
            // The fake kernel's NAPI kthreads (proc/<pid>/) stay once threaded NAPI made them, as a
            // kernel's may: not the revert's to remove.
            auto after = test::contents(h.tree.path());
            std::erase_if(after, [&](const auto& e) {
                return !before.count(e.first) && e.first.rfind("proc/", 0) == 0 && std::isdigit(static_cast<unsigned char>(e.first[5]));
            });
            INFO(treeDiff(after, before));
            CHECK(after == before);
            CHECK(test::driverState(h.nl) == driverBefore);
            CHECK_FALSE(h.store.load().value());
            ++compared;
        }
    }
    CHECK(compared >= 12);
}
