// prepare: snapshot the host for a profile (its extra sysctls, its cgroup) and plan it.
#pragma once

#include <string>
#include <vector>

#include "inventory/snapshot.hpp"
#include "bpf/xdp_steering.hpp"
#include "planner/planner.hpp"
#include "profile/profile.hpp"

namespace rxtune {

struct Prepared {
    HostSnapshot snapshot;
    Plan plan;
};

// interfaces: an explicit list wins over the profile's match; with skipMissing, names that are not
// there (yet) are left out instead of being an error, as the daemon waits for them to appear.
// xdp: reads what XDP steering rxtune has on each device (mode xdp); may be null otherwise.
Result<Prepared> preparePlan(const Profile& profile, const FileTree& fs, NetlinkSource& nl,
                             const std::vector<std::string>& interfaces, bool skipMissing,
                             const XdpSteering* xdp = nullptr);

}  // namespace rxtune
