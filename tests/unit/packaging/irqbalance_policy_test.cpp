// The irqbalance policy script as irqbalance calls it (irqbalance(1), --policyscript): once per
// IRQ, with the device's sysfs path and the IRQ number as arguments; key=value lines on stdout;
// exit 0. It bans exactly the IRQs rxtune published in <run_dir>/pinned-irqs.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../support/fixture.hpp"

namespace fs = std::filesystem;

namespace {

struct Answer {
    int status = -1;
    std::string out;
};

Answer call(const fs::path& runDir, const std::string& device, const std::string& irq) {
    const fs::path script = fs::path(std::getenv("RXTUNE_SOURCE")) / "packaging/irqbalance/rxtune-policy";
    const std::string cmd = "RXTUNE_RUN_DIR='" + runDir.string() + "' '" + script.string() + "' '" + device + "' '" + irq + "'";
    Answer a;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[256];
    while (fgets(buf, sizeof buf, p)) a.out += buf;
    const int st = pclose(p);
    a.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return a;
}

}  // namespace

TEST_CASE("the irqbalance policy script bans the IRQs rxtune pins, and only those", "[packaging][irq]") {
    rxtune::test::TempTree dir{"vm-no-cpufreq"};
    const fs::path run = dir.path() / "run";
    const std::string dev = "/sys/devices/pci0000:00/0000:00:03.0";
    // No list yet (rxtune never applied, or its run dir is gone): nothing banned, exit 0.
    auto none = call(run, dev, "45");
    CHECK(none.status == 0);
    CHECK(none.out.empty());
    dir.put("run/pinned-irqs", "45\n130\n");
    auto banned = call(run, dev, "45");
    CHECK(banned.status == 0);
    CHECK(banned.out == "ban=true\n");
    CHECK(call(run, dev, "130").out == "ban=true\n");
    for (const char* other : {"4", "1300", "13", "", "45 ", "x"}) {
        INFO("irq '" << other << "'");
        auto a = call(run, dev, other);
        CHECK(a.status == 0);
        CHECK(a.out.empty());
    }
}
