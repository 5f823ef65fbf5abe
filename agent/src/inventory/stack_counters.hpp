// What the network stack of this namespace delivered and lost, from /proc/net/snmp, snmp6 and
// netstat: the figure mode auto judges steering by, whatever a driver counts as "received".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/counters.hpp"
#include "core/result.hpp"

namespace rxtune {

// "Udp" -> {"InDatagrams" -> n, ...} from the header/value line pairs of /proc/net/snmp and
// /proc/net/netstat. Values are signed (Tcp MaxConn is -1).
using MibTable = std::map<std::string, std::map<std::string, std::int64_t>>;
Result<MibTable> parseMibPairs(std::string_view text, const std::string& file);
// "Udp6InDatagrams 12" lines of /proc/net/snmp6.
Result<std::map<std::string, std::int64_t>> parseMibLines(std::string_view text, const std::string& file);

// snmp6 may be empty (IPv6 disabled); snmp and netstat may not.
Result<StackCounters> stackCounters(std::string_view snmp, std::string_view snmp6, std::string_view netstat);

}  // namespace rxtune
