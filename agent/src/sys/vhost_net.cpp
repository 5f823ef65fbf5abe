#include "sys/vhost_net.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdint>

#include "sys/unique_fd.hpp"

namespace rxtune {

namespace {
// From <linux/vhost.h>, which does not compile as C++ (its virtio_ring.h converts void*).
constexpr unsigned kVhostVirtio = 0xAF;
constexpr unsigned long kVhostGetFeatures = _IOR(kVhostVirtio, 0x00, std::uint64_t);
}  // namespace

Result<void> probeVhostNet(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) {
        const int e = errno;
        if (e == ENOENT) return fail(e, "open", path, "no such device node (the vhost_net module is not loaded: modprobe vhost_net)");
        if (e == ENODEV || e == ENXIO) return fail(e, "open", path, "the node has no driver behind it (modprobe vhost_net)");
        return fail(e, "open", path);
    }
    std::uint64_t features = 0;
    if (::ioctl(fd.get(), kVhostGetFeatures, &features) != 0) {
        const int e = errno;
        // ENOSYS: what qemu-user answers for an ioctl it does not translate (the arm64 unit tests).
        return fail(e, "VHOST_GET_FEATURES", path, e == ENOTTY || e == ENOSYS ? "not a vhost device" : "");
    }
    return {};
}

}  // namespace rxtune
