#include <catch2/catch.hpp>

#include "core/mountinfo.hpp"

using namespace rxtune;

namespace {

// Lines as this VM's kernel writes them (proc(5)): optional fields end at "-".
constexpr const char* kMountinfo =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
    "25 22 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "36 25 0:31 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:15 master:3 - cgroup cgroup rw,cpuset\n"
    "40 25 0:39 / /sys/fs/bpf rw,relatime - bpf bpf rw,mode=700\n"
    "41 22 0:40 /sub\\040dir /mnt/with\\040space rw - tmpfs none rw\n";

}  // namespace

TEST_CASE("mountinfo lines give root, mount point, type, options and device", "[mountinfo]") {
    auto m = parseMountinfo(kMountinfo);
    REQUIRE(m.size() == 5);
    CHECK(m[0].mountPoint == "/");
    CHECK(m[0].fsType == "ext4");
    CHECK(m[0].device == "8:1");
    CHECK(m[2].mountPoint == "/sys/fs/cgroup/cpuset");  // two optional fields before "-"
    CHECK(m[2].fsType == "cgroup");
    CHECK(m[2].superOptions == "rw,cpuset");
    CHECK(m[3].fsType == "bpf");  // no optional field at all
    CHECK(m[3].superOptions == "rw,mode=700");
    CHECK(m[4].root == "/sub dir");
    CHECK(m[4].mountPoint == "/mnt/with space");
}

TEST_CASE("lines that are not mountinfo lines are skipped", "[mountinfo]") {
    auto m = parseMountinfo(
        "\n"
        "garbage\n"
        "1 2 3 4 5 6\n"                              // too short
        "1 2 0:1 / /x rw shared:1 ext4 /dev/a rw\n"   // no separator
        "1 2 0:1 / /x rw - ext4 /dev/a\n"            // separator, then too few fields
        "40 25 0:39 / /sys/fs/bpf rw - bpf bpf rw\n");
    REQUIRE(m.size() == 1);
    CHECK(m[0].mountPoint == "/sys/fs/bpf");
    CHECK(parseMountinfo("").empty());
}

TEST_CASE("a bpf filesystem is found by its device, not by its path", "[mountinfo]") {
    CHECK(mountinfoHasBpf(kMountinfo, 0, 39));
    CHECK_FALSE(mountinfoHasBpf(kMountinfo, 0, 23));  // sysfs at that device
    CHECK_FALSE(mountinfoHasBpf(kMountinfo, 0, 3));   // 0:3 is not 0:39's prefix match
    CHECK_FALSE(mountinfoHasBpf("", 0, 39));
}
