// The one place where procfs/sysfs paths are built, only from parts that passed validation.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace rxtune {

// The kernel's dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or whitespace.
Result<std::string> validateIfName(std::string_view name);
// A sysctl key such as "net.core.rmem_max": dot-separated [a-z0-9_-] parts, no empty part.
Result<std::string> validateSysctlKey(std::string_view key);
// A directory or file given by a user (config key, command-line option): not empty, absolute
// (a relative one would depend on the daemon's working directory), no NUL.
Result<std::string> validateAbsolutePath(std::string_view path);

// Paths are relative to a FileTree root ("sys/...", "proc/...").
namespace paths {

enum class QueueDir { kRx, kTx };

std::string netClass();                                                       // sys/class/net
std::string netDev(const std::string& ifname);                                // sys/class/net/<if>
std::string netDevFile(const std::string& ifname, std::string_view file);    // sys/class/net/<if>/<file>
std::string queuesDir(const std::string& ifname);                             // sys/class/net/<if>/queues
std::string queueFile(const std::string& ifname, QueueDir dir, unsigned index, std::string_view file);
// The same, relative to the device's directory (netDev): "queues/rx-3/rps_cpus".
std::string queueRel(QueueDir dir, unsigned index, std::string_view file);
std::string sysctl(const std::string& key);                                   // proc/sys/net/core/rmem_max
std::string irqFile(unsigned irq, std::string_view file);                     // proc/irq/<n>/<file>
std::string sysKernelIrqFile(unsigned irq, std::string_view file);            // sys/kernel/irq/<n>/<file>
std::string cpuDir(unsigned cpu);                                             // sys/devices/system/cpu/cpu<n>
std::string nodeDir(unsigned node);                                           // sys/devices/system/node/node<n>

}  // namespace paths
}  // namespace rxtune
