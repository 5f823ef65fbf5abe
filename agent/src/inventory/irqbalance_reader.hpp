// irqbalance on this host: its process (command line, environment), config file and package.
#pragma once

#include "core/irqbalance.hpp"
#include "core/topology.hpp"
#include "sys/file_tree.hpp"

namespace rxtune {

// Read-only. Where irqbalance runs, what its process was started with is what is in force (the
// service reads the file at start); else what the config file says it would use.
Result<IrqbalanceFacts> readIrqbalance(const FileTree& fs, const Topology& host);

// The irqbalance processes that ask rxtune's policy script: started with --policyscript / -l
// naming a file called rxtune-policy, or a directory holding one (irqbalance runs each script in a
// directory). These are the ones to tell when <run_dir>/pinned-irqs changes.
std::vector<int> irqbalanceAskingRxtune(const FileTree& fs);

}  // namespace rxtune
