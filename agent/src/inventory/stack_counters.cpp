#include "inventory/stack_counters.hpp"

#include <vector>

#include "core/text.hpp"

namespace rxtune {

namespace {

// A counter the kernel may not have (older kernels, IPv6 off) reads as 0; a negative one
// (a gauge such as MaxConn) is never summed.
std::uint64_t get(const MibTable& t, const std::string& group, const std::string& name) {
    auto g = t.find(group);
    if (g == t.end()) return 0;
    auto v = g->second.find(name);
    return v == g->second.end() || v->second < 0 ? 0 : static_cast<std::uint64_t>(v->second);
}

std::uint64_t get6(const std::map<std::string, std::int64_t>& t, const std::string& name) {
    auto v = t.find(name);
    return v == t.end() || v->second < 0 ? 0 : static_cast<std::uint64_t>(v->second);
}

}  // namespace

Result<MibTable> parseMibPairs(std::string_view text, const std::string& file) {
    MibTable out;
    auto lines = splitLines(text);
    for (size_t i = 0; i < lines.size(); i += 2) {
        const std::string where = file + " line " + std::to_string(i + 1);
        if (i + 1 >= lines.size()) return fail(EINVAL, "parse", where, "a header line without its values");
        auto names = splitFields(lines[i]), values = splitFields(lines[i + 1]);
        if (names.empty() || !names[0].ends_with(':') || values.empty() || values[0] != names[0])
            return fail(EINVAL, "parse", where, "expected 'Group: names' followed by 'Group: values'");
        if (names.size() != values.size())
            return fail(EINVAL, "parse", where, names[0] + " has " + std::to_string(names.size() - 1) + " names and " +
                                                    std::to_string(values.size() - 1) + " values");
        const std::string group = names[0].substr(0, names[0].size() - 1);
        if (out.count(group)) return fail(EINVAL, "parse", where, group + " twice");
        auto& row = out[group];
        for (size_t k = 1; k < names.size(); ++k) {
            std::int64_t v = 0;
            if (!parseSigned(values[k], v)) return fail(EINVAL, "parse", where, "'" + values[k] + "' is not a number");
            row[names[k]] = v;
        }
    }
    return out;
}

Result<std::map<std::string, std::int64_t>> parseMibLines(std::string_view text, const std::string& file) {
    std::map<std::string, std::int64_t> out;
    unsigned n = 0;
    for (const auto& line : splitLines(text)) {
        ++n;
        auto f = splitFields(line);
        if (f.empty()) continue;
        std::int64_t v = 0;
        if (f.size() != 2 || !parseSigned(f[1], v))
            return fail(EINVAL, "parse", file + " line " + std::to_string(n), "expected 'Name value'");
        out[f[0]] = v;
    }
    return out;
}

Result<StackCounters> stackCounters(std::string_view snmp, std::string_view snmp6, std::string_view netstat) {
    auto v4 = parseMibPairs(snmp, "/proc/net/snmp");
    if (!v4) return failWith(v4.error());
    if (!v4->count("Udp") || !v4->count("Tcp") || !v4->count("Ip"))
        return fail(EINVAL, "parse", "/proc/net/snmp", "no Ip, Tcp or Udp counters");
    auto v6 = parseMibLines(snmp6, "/proc/net/snmp6");
    if (!v6) return failWith(v6.error());
    auto ext = parseMibPairs(netstat, "/proc/net/netstat");
    if (!ext) return failWith(ext.error());
    StackCounters c;
    // UDP InDatagrams counts at recvmsg(): what the application read, so a starved reader (receive
    // livelock) shows as nothing delivered and its full socket buffer as InErrors.
    c.delivered = get(*v4, "Tcp", "InSegs") + get(*v4, "Udp", "InDatagrams") + get(*v4, "Udp", "NoPorts") +
                  get(*v4, "UdpLite", "InDatagrams") + get(*v4, "UdpLite", "NoPorts") + get(*v4, "Ip", "ForwDatagrams") +
                  get6(*v6, "Udp6InDatagrams") + get6(*v6, "Udp6NoPorts") + get6(*v6, "UdpLite6InDatagrams") +
                  get6(*v6, "UdpLite6NoPorts") + get6(*v6, "Ip6OutForwDatagrams");
    c.lost = get(*v4, "Udp", "InErrors") + get(*v4, "UdpLite", "InErrors") + get(*v4, "Ip", "InDiscards") +
             get6(*v6, "Udp6InErrors") + get6(*v6, "UdpLite6InErrors") + get6(*v6, "Ip6InDiscards") +
             get(*ext, "TcpExt", "TCPBacklogDrop") + get(*ext, "TcpExt", "ListenDrops") + get(*ext, "TcpExt", "TCPRcvQDrop");
    return c;
}

}  // namespace rxtune
