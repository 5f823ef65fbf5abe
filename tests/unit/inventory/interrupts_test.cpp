#include <catch2/catch.hpp>

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
