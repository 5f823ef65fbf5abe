#include "sys/bpffs.hpp"

#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/mountinfo.hpp"

namespace rxtune {

namespace {

constexpr long kBpfFsMagic = 0xcafe4a11;

bool onBpfFs(const std::string& dir) {
    struct statfs st {};
    return ::statfs(dir.c_str(), &st) == 0 && static_cast<long>(st.f_type) == kBpfFsMagic;
}

}  // namespace

Result<void> ensureBpfFs(const std::string& root) {
    const std::string parent = std::filesystem::path(root).parent_path().string();
    if (!onBpfFs(parent)) {
        if (parent != "/sys/fs/bpf")
            return fail(ENOTSUP, "bpffs", parent, "not a bpf filesystem: XDP steering pins its link there");
        if (::mount("bpf", parent.c_str(), "bpf", 0, "mode=0700") != 0)
            return fail(errno, "mount bpffs", parent, "XDP steering pins its link there so it outlives rxtune");
    }
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec) return fail(ec.value(), "mkdir", root);
    return {};
}

Result<void> requireDurableBpfFs(const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return fail(errno, "stat", dir);
    std::ifstream in("/proc/1/mountinfo");
    std::stringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) return {};  // PID 1's view is hidden from us: nothing to compare with
    if (mountinfoHasBpf(text.str(), major(st.st_dev), minor(st.st_dev))) return {};
    return fail(EXDEV, "xdp pin", dir,
                "this bpffs exists only in this process's private mount namespace (ip netns exec makes one), so "
                "the XDP steering pinned there would vanish when rxtune exits; give --bpf-dir (bpf_dir:) a "
                "directory on a bpffs mounted in the host's mount namespace (e.g. mount -t bpf bpf /sys/fs/bpf "
                "on the host, then --bpf-dir /sys/fs/bpf/rxtune)");
}

unsigned netnsInode() {
    struct stat st {};
    return ::stat("/proc/self/ns/net", &st) == 0 ? static_cast<unsigned>(st.st_ino) : 0;
}

Result<void> removePins(const std::string& dir, const std::vector<std::string>& names) {
    for (const auto& name : names) {
        const std::string p = dir + "/" + name;
        if (::unlink(p.c_str()) != 0 && errno != ENOENT) return fail(errno, "unpin", p);
    }
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return fail(errno, "rmdir", dir);
    return {};
}

}  // namespace rxtune
