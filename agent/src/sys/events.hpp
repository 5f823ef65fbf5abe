// Event sources for the daemon's epoll loop: signalfd, timerfd, uevents (links: sys/link_watch).
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "sys/unique_fd.hpp"

namespace rxtune {

// Blocks the given signals for the process and delivers them through a file descriptor.
Result<UniqueFd> openSignalFd(std::initializer_list<int> signals);
Result<int> readSignal(const UniqueFd& fd);  // signal number, or 0 if none pending

// A periodic CLOCK_MONOTONIC timer; readTimer returns how many periods expired.
Result<UniqueFd> openTimerFd(std::chrono::milliseconds period);
Result<void> setTimer(const UniqueFd& fd, std::chrono::milliseconds period);
std::uint64_t readTimer(const UniqueFd& fd);

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
