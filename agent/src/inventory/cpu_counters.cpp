// /proc/stat and /proc/net/softnet_stat, read and parsed (inventory/snapshot.hpp).
#include "inventory/snapshot.hpp"

namespace rxtune {

Result<std::map<unsigned, CpuJiffies>> readProcStat(const FileTree& fs) {
    auto text = fs.read("proc/stat");
    if (!text) return failWith(text.error());
    return parseProcStat(*text);
}

Result<std::map<unsigned, SoftnetRow>> readSoftnetStat(const FileTree& fs, const std::vector<unsigned>& onlineCpus) {
    auto text = fs.read("proc/net/softnet_stat");
    if (!text) return failWith(text.error());
    return parseSoftnetStat(*text, onlineCpus);
}

Result<void> readSoftnetInto(const FileTree& fs, HostSnapshot& snap) {
    if (softnetOf(snap) || !fs.exists("proc/net/softnet_stat")) return {};
    auto rows = readSoftnetStat(fs, snap.host.online.cpus());
    if (!rows) return failWith(rows.error());
    SoftnetByCpu counts;
    for (const auto& [cpu, row] : *rows) counts[cpu] = {row.dropped, row.timeSqueeze};
    snap.facts.set(kSoftnetFacts, std::move(counts));
    return {};
}

}  // namespace rxtune
