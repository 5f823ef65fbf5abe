// HostSnapshot: what inventory/ read of a host at one moment (topology, sysctls, NICs).
#pragma once

#include <vector>

#include "core/nic.hpp"
#include "core/topology.hpp"

namespace rxtune {

struct HostSnapshot {
    Topology host;
    std::vector<Nic> nics;
};

}  // namespace rxtune
