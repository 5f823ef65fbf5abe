#include "sys/events.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string_view>

namespace rxtune {

namespace {

// A non-blocking netlink socket bound to multicast groups, with room for bursts of hundreds of
// events (a batch of link changes must not overrun it).
Result<UniqueFd> openNetlinkListener(int type, int protocol, std::uint32_t groups, const char* what) {
    int fd = ::socket(AF_NETLINK, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
    if (fd < 0) return fail(errno, "socket", what);
    UniqueFd out(fd);
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    sa.nl_groups = groups;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return fail(errno, "bind", what);
    int rcvbuf = 1 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    return out;
}

}  // namespace

Result<UniqueFd> openUeventMonitor() {
    // Group 1: the kernel's events, not udev's re-broadcasts.
    return openNetlinkListener(SOCK_DGRAM, NETLINK_KOBJECT_UEVENT, 1, "uevent");
}

bool parseUevent(const char* data, size_t len, Uevent& out) {
    out = Uevent{};
    size_t pos = 0;
    bool first = true;
    while (pos < len) {
        size_t end = pos;
        while (end < len && data[end] != '\0') ++end;
        std::string field(data + pos, end - pos);
        if (first) {
            if (field.find('@') == std::string::npos) return false;  // libudev datagram, not the kernel's
            first = false;
        } else if (field.starts_with("ACTION=")) {
            out.action = field.substr(7);
        } else if (field.starts_with("DEVPATH=")) {
            out.devpath = field.substr(8);
        } else if (field.starts_with("SUBSYSTEM=")) {
            out.subsystem = field.substr(10);
        }
        pos = end + 1;
    }
    return !out.action.empty() && !out.devpath.empty();
}

std::string ueventDevice(const Uevent& u) {
    std::string_view p = u.devpath;
    if (u.subsystem == "queues") {
        // .../net/<dev>/queues/rx-0
        const auto q = p.rfind('/');
        if (q == std::string_view::npos) return {};
        p = p.substr(0, q);
        if (!p.ends_with("/queues")) return {};
        p.remove_suffix(7);
    } else if (u.subsystem != "net") {
        return {};
    }
    const auto slash = p.rfind('/');
    if (slash == std::string_view::npos) return {};
    return std::string(p.substr(slash + 1));
}

std::vector<Uevent> readUevents(const UniqueFd& fd) {
    std::vector<Uevent> out;
    std::array<char, 8192> buf{};
    while (true) {
        ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
        if (n < 0) {
            if (errno == ENOBUFS) {
                out.push_back(Uevent{"resync", "", "queues"});
                continue;
            }
            break;
        }
        Uevent ev;
        if (parseUevent(buf.data(), static_cast<size_t>(n), ev)) out.push_back(std::move(ev));
    }
    return out;
}

}  // namespace rxtune
