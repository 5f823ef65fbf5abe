// The kernel's uevents, for the daemon's loop (links: sys/link_watch; signals and timers: sd-event).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "sys/unique_fd.hpp"

namespace rxtune {

struct Uevent {
    std::string action, devpath, subsystem;
};

// Kernel uevent socket (NETLINK_KOBJECT_UEVENT, group 1).
Result<UniqueFd> openUeventMonitor();
std::vector<Uevent> readUevents(const UniqueFd& fd);
// Parses one kernel uevent datagram ("add@/devices/...\0ACTION=add\0SUBSYSTEM=queues\0...").
bool parseUevent(const char* data, size_t len, Uevent& out);
// The network device a "net" or "queues" uevent is about ("/devices/virtual/net/veth0/queues/rx-1"
// -> "veth0"); empty for any other.
std::string ueventDevice(const Uevent& u);

}  // namespace rxtune
