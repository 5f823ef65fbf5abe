// XdpSteering: XDP cpumap flow steering on one device, pinned in bpffs so it outlives rxtune.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "bpf/xdp_spec.hpp"
#include "core/result.hpp"

namespace rxtune {

class XdpSteering {
public:
    // Pins live in <pinRoot>/<netns inode>_<ifname>/ (link, slots, cpu_map, redirected).
    explicit XdpSteering(std::string pinRoot = "/sys/fs/bpf/rxtune");

    // The spec installed on ifname now, "" when none, or "detached" when pins remain but the
    // link no longer holds the device (it was deleted and re-created).
    Result<std::string> current(const std::string& ifname) const;
    // Replaces whatever rxtune had on the device. Mounts bpffs if needed.
    Result<void> install(const std::string& ifname, const XdpSpec& spec);
    // Detaches and removes the pins; nothing installed is not an error.
    Result<void> remove(const std::string& ifname);
    // Frames steered to each target CPU since install.
    Result<std::map<unsigned, std::uint64_t>> redirected(const std::string& ifname) const;

private:
    std::string dirFor(const std::string& ifname) const;
    std::string pinRoot_;
};

}  // namespace rxtune
