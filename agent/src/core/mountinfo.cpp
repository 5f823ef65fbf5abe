#include "core/mountinfo.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace rxtune {

std::vector<MountEntry> parseMountinfo(std::string_view text) {
    std::vector<MountEntry> out;
    for (const auto& line : splitLines(text)) {
        // "36 35 0:39 / /sys/fs/bpf rw,... shared:17 - bpf bpf rw": the optional fields end at "-".
        auto f = splitFields(line);
        auto dash = std::find(f.begin() + std::min<std::ptrdiff_t>(6, static_cast<std::ptrdiff_t>(f.size())), f.end(), "-");
        if (f.size() < 7 || dash == f.end() || std::distance(dash, f.end()) < 4) continue;
        out.push_back({unescapeMount(f[3]), unescapeMount(f[4]), *(dash + 1), *(dash + 3), f[2]});
    }
    return out;
}

bool mountinfoHasBpf(std::string_view mountinfo, unsigned majorNo, unsigned minorNo) {
    const std::string dev = std::to_string(majorNo) + ":" + std::to_string(minorNo);
    const auto mounts = parseMountinfo(mountinfo);
    return std::any_of(mounts.begin(), mounts.end(), [&](const MountEntry& m) { return m.device == dev && m.fsType == "bpf"; });
}

}  // namespace rxtune
