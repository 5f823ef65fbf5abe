#include "inventory/softnet.hpp"

#include <charconv>
#include <vector>

#include "core/cpuset.hpp"
#include "core/text.hpp"

namespace rxtune {

Result<std::map<unsigned, SoftnetRow>> parseSoftnetStat(std::string_view text, const std::vector<unsigned>& onlineCpus) {
    std::map<unsigned, SoftnetRow> out;
    unsigned row = 0;
    for (const auto& line : splitLines(text)) {
        const std::string where = "/proc/net/softnet_stat line " + std::to_string(row + 1);
        auto f = splitFields(line);
        if (f.size() < 11) return fail(EINVAL, "parse", where, "expected at least 11 columns, got " + std::to_string(f.size()));
        std::vector<std::uint32_t> v;
        for (const auto& x : f) {
            std::uint32_t n = 0;
            auto [p, ec] = std::from_chars(x.data(), x.data() + x.size(), n, 16);
            if (ec != std::errc() || p != x.data() + x.size() || x.size() > 8)
                return fail(EINVAL, "parse", where, "'" + x + "' is not a 32-bit hex counter");
            v.push_back(n);
        }
        unsigned cpu = 0;
        if (v.size() >= 13) {
            cpu = v[12];
        } else {
            if (row >= onlineCpus.size()) return fail(EINVAL, "parse", where, "more rows than online CPUs");
            cpu = onlineCpus[row];
        }
        SoftnetRow r;
        r.processed = v[0];
        r.dropped = v[1];
        r.timeSqueeze = v[2];
        r.receivedRps = v[9];
        r.flowLimitCount = v[10];
        r.backlogLen = v.size() >= 12 ? v[11] : 0;
        if (!out.emplace(cpu, r).second) return fail(EINVAL, "parse", where, "CPU " + std::to_string(cpu) + " twice");
        ++row;
    }
    return out;
}

Result<std::map<unsigned, std::uint64_t>> parseNetRxSoftirqs(std::string_view text) {
    auto lines = splitLines(text);
    if (lines.empty()) return fail(EINVAL, "parse", "/proc/softirqs", "empty");
    std::vector<unsigned> cpus;
    for (const auto& h : splitFields(lines[0])) {
        unsigned id = 0;
        if (!h.starts_with("CPU") || !parseUnsigned(std::string_view(h).substr(3), id))
            return fail(EINVAL, "parse", "/proc/softirqs line 1", "header column '" + h + "' is not CPUn");
        cpus.push_back(id);
    }
    for (size_t i = 1; i < lines.size(); ++i) {
        auto f = splitFields(lines[i]);
        if (f.empty() || f[0] != "NET_RX:") continue;
        if (f.size() != cpus.size() + 1)
            return fail(EINVAL, "parse", "/proc/softirqs line " + std::to_string(i + 1), "NET_RX has the wrong column count");
        std::map<unsigned, std::uint64_t> out;
        for (size_t c = 0; c < cpus.size(); ++c) {
            std::uint64_t n = 0;
            if (!parseUnsigned(f[c + 1], n))
                return fail(EINVAL, "parse", "/proc/softirqs line " + std::to_string(i + 1), "'" + f[c + 1] + "' is not a count");
            out[cpus[c]] = n;
        }
        return out;
    }
    return fail(EINVAL, "parse", "/proc/softirqs", "no NET_RX line");
}

Result<std::map<unsigned, CpuJiffies>> parseProcStat(std::string_view text) {
    std::map<unsigned, CpuJiffies> out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
        auto fields = splitFields(line);
        unsigned cpu = 0;
        std::uint64_t v[10] = {};
        if (fields.size() < 8 || !parseUnsigned(std::string_view(fields[0]).substr(3), cpu) || cpu >= CpuSet::kMaxCpus)
            return fail(EINVAL, "parse", "/proc/stat", "bad cpu line '" + std::string(line.substr(0, 40)) + "'");
        for (size_t i = 1; i < fields.size() && i <= 10; ++i)
            if (!parseUnsigned(fields[i], v[i - 1])) return fail(EINVAL, "parse", "/proc/stat", "bad number in cpu" + std::to_string(cpu));
        // user nice system idle iowait irq softirq steal guest guest_nice; guest is inside user.
        CpuJiffies j;
        j.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
        j.busy = j.total - v[3] - v[4];
        j.softirq = v[6];
        out[cpu] = j;
    }
    if (out.empty()) return fail(EINVAL, "parse", "/proc/stat", "no per-CPU lines");
    return out;
}

}  // namespace rxtune
