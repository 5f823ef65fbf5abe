// /proc/<pid>/mountinfo, parsed: the one reader for cgroup mounts and bpffs checks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rxtune {

struct MountEntry {
    std::string root, mountPoint, fsType, superOptions;
    std::string device;  // "major:minor"
};

// Lines that are not mountinfo lines are skipped.
std::vector<MountEntry> parseMountinfo(std::string_view text);

// Whether a bpf filesystem with this device is among the mounts.
bool mountinfoHasBpf(std::string_view mountinfo, unsigned majorNo, unsigned minorNo);

}  // namespace rxtune
