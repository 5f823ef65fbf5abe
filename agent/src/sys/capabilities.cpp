#include "sys/capabilities.hpp"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rxtune {

Result<Capabilities> Capabilities::effective() {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &hdr, data) != 0) return fail(errno, "capget", "self");
    Capabilities c;
    c.bits_ = static_cast<std::uint64_t>(data[0].effective) | (static_cast<std::uint64_t>(data[1].effective) << 32);
    return c;
}

}  // namespace rxtune
