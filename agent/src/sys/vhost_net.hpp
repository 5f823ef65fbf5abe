// Whether a vhost-net device can serve DPDK's virtio-user exception path (rxtune-dp).
#pragma once

#include <string>

#include "core/result.hpp"

namespace rxtune {

// Opens `path` read-write and asks it for its vhost features (VHOST_GET_FEATURES), as
// virtio-user's vhost-kernel backend will: an error names the path and says what is missing
// (no node: vhost_net not loaded; a node with no driver; a file that is not a vhost device).
Result<void> probeVhostNet(const std::string& path);

}  // namespace rxtune
