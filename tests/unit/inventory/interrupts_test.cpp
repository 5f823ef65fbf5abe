#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "inventory/interrupts.hpp"

using namespace rxtune;

namespace {
// Taken from a 2-CPU virtio VM, plus a shared line and an IO-APIC level line.
const char* kSample =
    "           CPU0       CPU1       \n"
    " 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n"
    " 38:          0        832 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n"
    " 39:        841          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n"
    " 16:          5          6   IO-APIC  16-fasteoi   ehci_hcd:usb1, uhci_hcd:usb2\n"
    " 50:          7          8  PCI-MSI 524288-edge\n"
    "NMI:          0          0   Non-maskable interrupts\n"
    "LOC:      24161      27847   Local timer interrupts\n"
    "ERR:          0\n"
    "MIS:          0\n";
}  // namespace

TEST_CASE("/proc/interrupts parses counts, chips and actions", "[interrupts]") {
    auto t = parseInterrupts(kSample);
    REQUIRE(t);
    CHECK(t->cpus == std::vector<unsigned>{0, 1});
    REQUIRE(t->lines.size() == 9);
    const auto& rx = t->lines[1];
    CHECK(rx.numeric);
    CHECK(rx.irq == 38);
    CHECK(rx.counts == std::vector<std::uint64_t>{0, 832});
    CHECK(rx.chip == "PCI-MSIX-0000:00:03.0 1-edge");
    CHECK(rx.actions == std::vector<std::string>{"virtio2-input.0"});
    CHECK(t->lines[3].actions == std::vector<std::string>{"ehci_hcd:usb1", "uhci_hcd:usb2"});
    CHECK(t->lines[4].actions.empty());
    CHECK_FALSE(t->lines[5].numeric);
    CHECK(t->lines[5].id == "NMI");
    CHECK(t->lines[5].actions.empty());
    CHECK(t->lines[7].counts == std::vector<std::uint64_t>{0});
}

TEST_CASE("/proc/interrupts with more than 64 CPUs", "[interrupts]") {
    std::string text = "  ";
    for (int c = 0; c < 96; ++c) text += " CPU" + std::to_string(c);
    text += "\n 99:";
    for (int c = 0; c < 96; ++c) text += " " + std::to_string(c);
    text += "  PCI-MSI 1-edge  eth0-TxRx-0\n";
    auto t = parseInterrupts(text);
    REQUIRE(t);
    REQUIRE(t->lines.size() == 1);
    CHECK(t->lines[0].counts.size() == 96);
    CHECK(t->lines[0].counts[95] == 95);
    CHECK(t->lines[0].actions == std::vector<std::string>{"eth0-TxRx-0"});
}

TEST_CASE("garbage in /proc/interrupts is a located error", "[interrupts]") {
    CHECK_FALSE(parseInterrupts(""));
    CHECK_FALSE(parseInterrupts("hello world\n"));
    auto e = parseInterrupts("   CPU0  CPU1\n 24: 1 x IO-APIC 5-edge a\n");
    REQUIRE_FALSE(e);
    CHECK(e.error().message().find("line 2") != std::string::npos);
    CHECK_FALSE(parseInterrupts("   CPU0\n no colon here\n"));
}

TEST_CASE("/proc/interrupts of every architecture: the trigger column in any case, arm64's Edge/Level, microvm's fasteoi", "[interrupts]") {
    // Lines as kernel/irq/proc.c prints them: x86 joins the flow handler to the hwirq; arm64
    // (GENERIC_IRQ_SHOW_LEVEL) prints Edge or Level as a column of its own, then the actions.
    const char* text =
        "           CPU0       CPU1       CPU2       CPU3       \n"
        // arm64 virt, GICv3 with ITS: virtio-net-pci's MSI-X vectors
        " 18:          0          0          0          0 ITS-PCI-MSIX-0000:00:01.0   0 Edge      virtio0-config\n"
        " 19:         27          0        391          0 ITS-PCI-MSIX-0000:00:01.0   1 Edge      virtio0-input.0\n"
        " 20:          0          3          0          0 ITS-PCI-MSIX-0000:00:01.0   2 Edge      virtio0-output.0\n"
        // arm64: a wired SPI (virtio-mmio's one interrupt) and the arch timer (PPI, Level)
        " 13:        412          0          0          0     GICv3  79 Edge      virtio0\n"
        " 11:       9317       8214       7730       7921     GICv3  27 Level     arch_timer\n"
        // arm64 with a flow handler's name after the trigger
        " 14:          1          0          0          0     GICv3  80 Level     -fasteoi  uart-pl011\n"
        // x86 microvm: virtio-mmio behind the IO-APIC
        " 49:          0         12          0          0   IO-APIC  23-fasteoi   virtio0\n"
        // x86 q35: MSI-X with interrupt remapping, and the legacy timer
        " 26:          0          0         74          0  IR-PCI-MSIX-0000:00:02.0    1-edge      eth1-rx-0\n"
        "  0:         41          0          0          0   IO-APIC   2-edge      timer\n"
        // an action whose name ends like a trigger: the first trigger ends the chip
        " 60:          0          0          0          0   PCI-MSI 1-edge      probe-edge\n"
        "IPI0:      1123       1201       1090       1144       Rescheduling interrupts\n";
    auto t = parseInterrupts(text);
    REQUIRE(t);
    auto lineOf = [&](unsigned irq) {
        for (const auto& l : t->lines)
            if (l.numeric && l.irq == irq) return l;
        return InterruptLine{};
    };
    auto actions = [&](unsigned irq) { return lineOf(irq).actions; };
    auto chip = [&](unsigned irq) { return lineOf(irq).chip; };
    CHECK(actions(18) == std::vector<std::string>{"virtio0-config"});
    CHECK(actions(19) == std::vector<std::string>{"virtio0-input.0"});
    CHECK(actions(20) == std::vector<std::string>{"virtio0-output.0"});
    CHECK(chip(19) == "ITS-PCI-MSIX-0000:00:01.0 1 Edge");
    CHECK(actions(13) == std::vector<std::string>{"virtio0"});
    CHECK(actions(11) == std::vector<std::string>{"arch_timer"});
    CHECK(actions(14) == std::vector<std::string>{"uart-pl011"});
    CHECK(chip(14) == "GICv3 80 Level -fasteoi");
    CHECK(actions(49) == std::vector<std::string>{"virtio0"});
    CHECK(chip(49) == "IO-APIC 23-fasteoi");
    CHECK(actions(26) == std::vector<std::string>{"eth1-rx-0"});
    CHECK(actions(0) == std::vector<std::string>{"timer"});
    CHECK(actions(60) == std::vector<std::string>{"probe-edge"});
    for (const auto& l : t->lines)
        if (!l.numeric) CHECK(l.actions.empty());
}

TEST_CASE("/proc/interrupts captured from booted guests: every NIC vector's action is read", "[interrupts]") {
    const std::filesystem::path dir = std::filesystem::path(std::getenv("RXTUNE_SOURCE")) / "tests/fixtures/interrupts";
    auto read = [&](const char* name) {
        std::ifstream in(dir / name);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    auto actionsOf = [](const InterruptTable& t) {
        std::map<unsigned, std::vector<std::string>> out;
        for (const auto& l : t.lines)
            if (l.numeric) out[l.irq] = l.actions;
        return out;
    };
    auto q35 = parseInterrupts(read("x86-q35-debian12-6.1.txt"));
    REQUIRE(q35);
    const auto a = actionsOf(*q35);
    CHECK(a.at(24) == std::vector<std::string>{"virtio0-config"});
    CHECK(a.at(25) == std::vector<std::string>{"virtio0-input.0"});
    CHECK(a.at(27) == std::vector<std::string>{"eth1-rx-0"});
    CHECK(a.at(29) == std::vector<std::string>{"eth1"});
    CHECK(a.at(9) == std::vector<std::string>{"acpi"});
    auto microvm = parseInterrupts(read("x86-microvm-debian12-6.1.txt"));
    REQUIRE(microvm);
    const auto m = actionsOf(*microvm);
    CHECK(m.at(49) == std::vector<std::string>{"virtio0"});
    CHECK(m.at(50) == std::vector<std::string>{"virtio1"});
    CHECK(m.at(48) == std::vector<std::string>{"ACPI:Ged"});
    // arm64 virt, GICv3 with ITS (the arm64 lab's guest): Edge/Level a column of its own.
    auto arm = parseInterrupts(read("arm64-virt-debian12-6.1.txt"));
    REQUIRE(arm);
    const auto r = actionsOf(*arm);
    CHECK(r.at(11) == std::vector<std::string>{"arch_timer"});
    CHECK(r.at(36) == std::vector<std::string>{"virtio0"});           // virtio-mmio NIC, a wired SPI
    CHECK(r.at(38) == std::vector<std::string>{"virtio3-input.0"});   // virtio-net-pci through the ITS
    CHECK(r.at(39) == std::vector<std::string>{"virtio3-output.0"});
    CHECK(r.at(35) == std::vector<std::string>{"GPIO Key Poweroff"});  // an action name with spaces
}
