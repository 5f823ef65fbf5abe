// Which interfaces get rxtune_interface_* series (the daemon's metrics_interfaces): on a node of
// thousands of pod veths, reading and exporting every one each interval was the agent's largest
// idle cost and a cardinality problem (node_exporter's --collector.netdev.device-include/exclude).
#pragma once

#include <string>
#include <vector>

namespace rxtune {

struct InterfaceSelection {
    enum class Kind {
        kManaged,  // the devices rxtune steers or the config names, and physical NICs (the default)
        kAll,      // every device of the network namespace (what rxtune exported before 0.2)
        kGlobs,    // the devices whose names match one of the globs, whatever they are
    };
    Kind kind = Kind::kManaged;
    std::vector<std::string> globs;

    // managed: rxtune steers it or the config names it; physical: it has a device behind it.
    bool wants(const std::string& name, bool managed, bool physical) const;
    // Whether the answer is the name's alone (globs): managed and physical are not asked.
    bool byName() const { return kind == Kind::kGlobs; }
};

}  // namespace rxtune
