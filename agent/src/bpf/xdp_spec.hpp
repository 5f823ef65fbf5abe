// XdpSpec: what XDP steering is (or should be) on a device, as the text plans and the journal hold.
#pragma once

#include <cstdint>
#include <string>

#include "core/cpuset.hpp"
#include "core/result.hpp"
#include "core/slots.hpp"

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

// rxtune's XDP steering on a device as the XDP family found it (a Nic fact): an XdpSpec's text, or
// "" where there is none.
inline constexpr Slot<std::string> kXdpInstalled{"xdp"};

}  // namespace rxtune
