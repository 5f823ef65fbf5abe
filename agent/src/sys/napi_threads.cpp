#include "sys/napi_threads.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "core/text.hpp"

namespace rxtune {

namespace {

// /proc/<pid>/stat as "pid (comm) state ppid ...": the comm may hold spaces and parentheses, so
// the fields count from the last ')'; fields[0] is the 3rd field (state). nullopt: not that shape.
struct TaskStat {
    std::string comm;
    std::vector<std::string> fields;
};
std::optional<TaskStat> splitTaskStat(const std::string& text) {
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
    return TaskStat{text.substr(open + 1, close - open - 1), splitFields(text.substr(close + 1))};
}

// "Name:\tvalue" lines of /proc/<pid>/status.
std::string statusField(const std::string& text, std::string_view key) {
    for (const auto& line : splitOn(text, '\n')) {
        if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ':') continue;
        return trimmed(line.substr(key.size() + 1));
    }
    return {};
}

}  // namespace

Result<CpuSet> readTaskAffinity(const FileTree& fs, int pid) {
    auto text = fs.read("proc/" + std::to_string(pid) + "/status");
    if (!text) return failWith(text.error());
    const std::string mask = statusField(*text, "Cpus_allowed");
    auto set = CpuSet::parseMask(mask);
    if (!set) return fail(EINVAL, "parse", fs.full("proc/" + std::to_string(pid) + "/status"), "no Cpus_allowed mask");
    return *set;
}

std::optional<double> readTaskCpuSeconds(const FileTree& fs, int pid) {
    auto text = fs.read("proc/" + std::to_string(pid) + "/stat");
    if (!text) return std::nullopt;
    auto st = splitTaskStat(*text);
    std::uint64_t utime = 0, stime = 0;
    if (!st || st->fields.size() < 13 || !parseUnsigned(st->fields[11], utime) || !parseUnsigned(st->fields[12], stime)) return std::nullopt;
    static const long hz = ::sysconf(_SC_CLK_TCK);
    return static_cast<double>(utime + stime) / static_cast<double>(hz > 0 ? hz : 100);
}

Result<std::vector<PinnedBusyThread>> readPinnedBusyThreads(const FileTree& fs, double minShare, double minAgeSeconds) {
    std::vector<PinnedBusyThread> out;
    if (!fs.exists("proc/uptime")) return out;  // no procfs under this tree (a fixture): no thread to see
    auto up = fs.read("proc/uptime");
    if (!up) return failWith(up.error());
    const auto upFields = splitFields(*up);
    char* end = nullptr;
    const double uptime = upFields.empty() ? 0 : std::strtod(upFields[0].c_str(), &end);
    if (upFields.empty() || end == upFields[0].c_str() || uptime <= 0) return fail(EINVAL, "parse", fs.full("proc/uptime"));
    static const long clk = ::sysconf(_SC_CLK_TCK);
    const double hz = clk > 0 ? static_cast<double>(clk) : 100.0;
    auto pids = fs.list("proc");
    if (!pids) return failWith(pids.error());
    for (const auto& pidName : *pids) {
        std::uint64_t pid = 0;
        if (!parseUnsigned(pidName, pid) || pid == 0 || pid > 0x3fffffff) continue;
        auto tids = fs.list("proc/" + pidName + "/task");
        if (!tids) continue;  // gone since the listing
        for (const auto& tidName : *tids) {
            std::uint64_t tid = 0;
            if (!parseUnsigned(tidName, tid) || tid == 0) continue;
            const std::string dir = "proc/" + pidName + "/task/" + tidName;
            auto stat = fs.read(dir + "/stat");
            if (!stat) continue;
            // flags is the 9th field, utime/stime the 14th/15th, starttime the 22nd (fields[6], [11], [12], [19]).
            auto st = splitTaskStat(*stat);
            if (!st) continue;
            const auto& f = st->fields;
            std::uint64_t flags = 0, utime = 0, stime = 0, start = 0;
            if (f.size() < 20 || !parseUnsigned(f[6], flags) || !parseUnsigned(f[11], utime) || !parseUnsigned(f[12], stime) ||
                !parseUnsigned(f[19], start))
                continue;
            constexpr std::uint64_t kPfKthread = 0x00200000;  // include/linux/sched.h
            if (flags & kPfKthread) continue;
            const double age = uptime - static_cast<double>(start) / hz;
            if (age < minAgeSeconds) continue;
            const double share = static_cast<double>(utime + stime) / hz / age;
            if (share < minShare) continue;
            auto status = fs.read(dir + "/status");
            if (!status) continue;
            auto allowed = CpuSet::parseList(statusField(*status, "Cpus_allowed_list"));
            if (!allowed || allowed->count() != 1) continue;
            out.push_back({static_cast<int>(pid), static_cast<int>(tid), std::move(st->comm), allowed->cpus().front(),
                           std::min(share, 1.0)});
        }
    }
    std::sort(out.begin(), out.end(), [](const PinnedBusyThread& a, const PinnedBusyThread& b) { return std::tie(a.cpu, a.tid) < std::tie(b.cpu, b.tid); });
    return out;
}

Result<std::vector<NapiInfo>> scanNapiThreads(const FileTree& fs, const std::string& ifname) {
    std::vector<NapiInfo> out;
    auto pids = fs.list("proc");
    if (!pids) return failWith(pids.error());
    const std::string want = "napi/" + ifname + "-";
    for (const auto& name : *pids) {
        std::uint64_t pid = 0;
        if (!parseUnsigned(name, pid) || pid == 0 || pid > 0x3fffffff) continue;
        auto comm = fs.read("proc/" + name + "/comm");
        if (!comm) continue;  // gone since the listing
        const std::string c = trimmed(*comm);
        std::uint64_t id = 0;  // 0: cut off
        const bool cut = c.size() == 15;
        if (c.size() > want.size() && c.starts_with(want)) {
            if (!parseUnsigned(c.substr(want.size()), id)) {
                if (!cut) continue;
                id = 0;
            }
        } else if (!(cut && want.starts_with(c))) {
            continue;
        }
        // Kernel threads are kthreadd's children.
        auto status = fs.read("proc/" + name + "/status");
        if (!status || statusField(*status, "PPid") != "2") continue;
        NapiInfo n;
        n.id = static_cast<unsigned>(id);
        n.pid = static_cast<int>(pid);
        out.push_back(n);
    }
    std::sort(out.begin(), out.end(), [](const NapiInfo& a, const NapiInfo& b) { return std::tie(a.id, a.pid) < std::tie(b.id, b.pid); });
    return out;
}

Result<std::vector<NapiInfo>> napiInstances(const FileTree& fs, NetlinkSource& nl, const std::string& ifname, int ifindex,
                                            std::string* source, bool threadedMaybeOn) {
    std::vector<NapiInfo> out;
    auto viaNl = nl.napis(ifindex);
    if (!viaNl) return failWith(viaNl.error().withContext("interface " + ifname));
    if (*viaNl) {
        out = std::move(**viaNl);
        if (source) *source = "netdev-genl";
    }
    // napi-get lists only NAPIs with an id: a TX NAPI has none (virtio-net's, a TAP's IFF_NAPI
    // one), yet it has its kthread once threaded. Where threaded may be on, the kthreads named
    // after the device in /proc count too, those napi-get did not list added (on 6.12, virtio-net's
    // TX NAPI kthread was otherwise left on every CPU).
    if (!*viaNl || threadedMaybeOn) {
        auto scanned = scanNapiThreads(fs, ifname);
        if (!scanned) return failWith(scanned.error());
        if (!*viaNl || out.empty()) {
            if (!scanned->empty() || !*viaNl) {
                out = std::move(*scanned);
                if (source) *source = "proc";
            }
        } else {
            for (auto& k : *scanned)
                if (k.pid > 0 && std::none_of(out.begin(), out.end(), [&](const NapiInfo& n) { return n.pid == k.pid; })) {
                    out.push_back(std::move(k));
                    if (source) *source = "netdev-genl+proc";
                }
        }
    }
    for (auto& n : out) {
        if (n.pid <= 0) continue;
        // A kthread that stopped since (threaded turned off) has no affinity to show.
        if (auto a = readTaskAffinity(fs, n.pid)) n.affinity = *a;
        n.cpuSeconds = readTaskCpuSeconds(fs, n.pid);
    }
    return out;
}

Result<std::vector<NapiInfo>> SystemNapiThreads::of(const std::string& ifname) {
    auto idx = fs_.read("sys/class/net/" + ifname + "/ifindex");
    if (!idx) return failWith(idx.error());
    std::uint64_t ifindex = 0;
    if (!parseUnsigned(trimmed(*idx), ifindex)) return fail(EINVAL, "parse", fs_.full("sys/class/net/" + ifname + "/ifindex"));
    auto all = napiInstances(fs_, nl_, ifname, static_cast<int>(ifindex));
    if (!all) return failWith(all.error());
    std::erase_if(*all, [](const NapiInfo& n) { return n.pid <= 0 || !n.affinity; });
    return all;
}

Result<void> SystemNapiThreads::setAffinity(int pid, const CpuSet& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c : cpus.cpus())
        if (c < CPU_SETSIZE) CPU_SET(c, &set);
    if (::sched_setaffinity(pid, sizeof set, &set) != 0)
        return fail(errno, "sched_setaffinity", "pid " + std::to_string(pid), "CPUs " + cpus.toList());
    return {};
}

}  // namespace rxtune
