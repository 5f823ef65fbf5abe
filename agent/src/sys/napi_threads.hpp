// NAPI kthreads (threaded NAPI): which serve a device, and the CPUs each may run on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cpuset.hpp"
#include "core/nic.hpp"
#include "core/result.hpp"
#include "sys/file_tree.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

class NapiThreads {
public:
    virtual ~NapiThreads() = default;
    // The device's NAPI instances that have a kthread now, by NAPI id; none when threaded is off.
    virtual Result<std::vector<NapiInfo>> of(const std::string& ifname) = 0;
    virtual Result<void> setAffinity(int pid, const CpuSet& cpus) = 0;
};

// Kthreads named napi/<dev>-<id> in /proc (the fallback where napi-get is absent). The kernel
// cuts a task's name at 15 bytes: a cut name counts when it is a prefix of napi/<dev>-.
Result<std::vector<NapiInfo>> scanNapiThreads(const FileTree& fs, const std::string& ifname);
// Cpus_allowed of /proc/<pid>/status.
Result<CpuSet> readTaskAffinity(const FileTree& fs, int pid);
// utime + stime of /proc/<pid>/stat in seconds; nullopt where it cannot be read (the task is gone).
std::optional<double> readTaskCpuSeconds(const FileTree& fs, int pid);
// A thread of an application (not a kernel thread) allowed on one CPU only that has kept it busy:
// `share` of that CPU over the thread's life (utime + stime over the time since it started), a
// one-look estimate with no sampling: a thread that turned busy late in a long life shows less.
struct PinnedBusyThread {
    int pid = 0, tid = 0;
    std::string comm;
    unsigned cpu = 0;
    double share = 0;
};
// Every such thread in /proc (each process's task/ directory) with at least `minShare` that has
// run `minAgeSeconds` or more, by CPU then tid. Reads every thread's stat, and the status of the
// busy ones only; none where the tree has no proc/uptime (a fixture without procfs).
Result<std::vector<PinnedBusyThread>> readPinnedBusyThreads(const FileTree& fs, double minShare = 0.5, double minAgeSeconds = 1.0);

// napi-get where the kernel has it, else the /proc scan; each kthread's affinity filled in.
// Where threaded may be on, /proc is scanned too and the kthreads napi-get did not list are
// added (a TX NAPI has no id, yet a kthread: virtio-net's, a TAP's IFF_NAPI one): a scan reads
// every task's name, so a caller that knows `threaded` is 0 (no kthread can exist) says so.
// source: "netdev-genl", "proc", or "netdev-genl+proc".
Result<std::vector<NapiInfo>> napiInstances(const FileTree& fs, NetlinkSource& nl, const std::string& ifname, int ifindex,
                                            std::string* source = nullptr, bool threadedMaybeOn = true);

// The real thing: napiInstances, and sched_setaffinity(2).
class SystemNapiThreads final : public NapiThreads {
public:
    SystemNapiThreads(const FileTree& fs, NetlinkSource& nl) : fs_(fs), nl_(nl) {}
    Result<std::vector<NapiInfo>> of(const std::string& ifname) override;
    Result<void> setAffinity(int pid, const CpuSet& cpus) override;

private:
    const FileTree& fs_;
    NetlinkSource& nl_;
};

}  // namespace rxtune
