// libFuzzer target: softnet_stat, /proc/softirqs, snmp/snmp6/netstat and uevent parsers never crash on any input.
#include <cstdint>
#include <string_view>

#include "inventory/softnet.hpp"
#include "inventory/stack_counters.hpp"
#include "sys/events.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)rxtune::parseSoftnetStat(text, {0, 1, 2, 3});
    (void)rxtune::parseNetRxSoftirqs(text);
    (void)rxtune::stackCounters(text, text, text);
    rxtune::Uevent ev;
    (void)rxtune::parseUevent(text.data(), text.size(), ev);
    return 0;
}
