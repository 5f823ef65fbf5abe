// XdpSteering: XDP cpumap flow steering on one device, pinned in bpffs so it outlives rxtune.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/cpuset.hpp"
#include "core/result.hpp"

namespace rxtune {

enum class XdpMode { kGeneric, kNative };

// What is (or should be) installed on a device: "cpus=0-3 mode=generic qsize=2048".
struct XdpSpec {
    CpuSet cpus;
    XdpMode mode = XdpMode::kGeneric;
    std::uint32_t qsize = 2048;  // cpumap queue per target CPU

    std::string str() const;
    static Result<XdpSpec> parse(const std::string& text);  // "" is an error; callers treat "" as none
    bool operator==(const XdpSpec& o) const { return cpus == o.cpus && mode == o.mode && qsize == o.qsize; }
};

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
