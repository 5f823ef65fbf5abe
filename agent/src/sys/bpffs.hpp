// bpffs for XDP steering's pins: mounted where it must be, durable beyond this process, and the
// network namespace the pins belong to.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace rxtune {

// The pins must live on a bpffs that outlives rxtune: the host's /sys/fs/bpf (systemd mounts it;
// rxtune mounts it when it is missing), or a bpffs given with --bpf-dir. Creates `root`.
Result<void> ensureBpfFs(const std::string& root);

// Pins are only as durable as the bpffs they are on: refuses one that PID 1's mount namespace
// does not have (`ip netns exec` makes a private one), instead of reporting success for steering
// that vanishes when this process exits.
Result<void> requireDurableBpfFs(const std::string& dir);

// The inode of this process's network namespace (0 if unknown): pins are kept per namespace.
unsigned netnsInode();

// A pin directory's pins (names in it) and then the directory unlinked; absent ones are fine.
Result<void> removePins(const std::string& dir, const std::vector<std::string>& names);

}  // namespace rxtune
