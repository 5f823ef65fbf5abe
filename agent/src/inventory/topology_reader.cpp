#include <algorithm>
#include <charconv>
#include <optional>

#include "core/paths.hpp"
#include "inventory/snapshot.hpp"
#include "core/mountinfo.hpp"
#include "core/text.hpp"

namespace rxtune {

namespace {

const char kCpuRoot[] = "sys/devices/system/cpu";

Result<CpuSet> readList(const FileTree& fs, const std::string& rel, bool optional) {
    auto text = fs.read(rel);
    if (!text) {
        if (optional && text.error().code == ENOENT) return CpuSet{};
        return failWith(text.error());
    }
    std::string t = trimmed(*text);
    if (t == "(null)") return CpuSet{};  // nohz_full when not configured
    auto set = CpuSet::parseList(t);
    if (!set) return fail(EINVAL, "parse", fs.full(rel), "'" + t + "' is not a cpulist: " + set.error().detail);
    return set;
}

bool hasOption(const std::string& opts, const std::string& want) {
    for (const auto& o : splitOn(opts, ','))
        if (o == want) return true;
    return false;
}

std::string joinCg(const MountEntry& m, const std::string& cgPath) {
    std::string rel = cgPath;
    if (m.root != "/" && rel.starts_with(m.root)) rel = rel.substr(m.root.size());
    std::string p = m.mountPoint + "/" + rel;
    std::string out;
    for (char c : p)
        if (!(c == '/' && !out.empty() && out.back() == '/')) out += c;
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    if (!out.empty() && out.front() == '/') out.erase(0, 1);
    return out;
}

// One level's limit: v2 "cpu.max" ("max 100000" or "50000 100000"), v1 cfs_quota_us (-1 when
// unlimited) with cfs_period_us. nullopt: this level does not limit.
Result<std::optional<CpuQuota>> quotaAt(const FileTree& fs, const std::string& version, const std::string& dir) {
    std::int64_t quota = -1, period = 0;
    std::string source;
    if (version == "v2") {
        source = dir + "/cpu.max";
        if (!fs.exists(source)) return std::optional<CpuQuota>();
        auto text = fs.read(source);
        if (!text) return failWith(text.error());
        auto f = splitFields(*text);
        if (f.size() != 2 || !parseSigned(f[1], period) || period <= 0 || (f[0] != "max" && (!parseSigned(f[0], quota) || quota <= 0)))
            return fail(EINVAL, "parse", fs.full(source), "'" + trimmed(*text) + "' is not '<quota|max> <period>'");
    } else {
        source = dir + "/cpu.cfs_quota_us";
        const std::string periodFile = dir + "/cpu.cfs_period_us";
        if (!fs.exists(source) || !fs.exists(periodFile)) return std::optional<CpuQuota>();
        auto q = fs.read(source), p = fs.read(periodFile);
        if (!q) return failWith(q.error());
        if (!p) return failWith(p.error());
        if (!parseSigned(trimmed(*q), quota)) return fail(EINVAL, "parse", fs.full(source), "'" + trimmed(*q) + "' is not a number");
        if (!parseSigned(trimmed(*p), period) || period <= 0)
            return fail(EINVAL, "parse", fs.full(periodFile), "'" + trimmed(*p) + "' is not a period");
    }
    if (quota <= 0) return std::optional<CpuQuota>();
    CpuQuota c;
    c.limited = true;
    c.quotaUs = quota;
    c.periodUs = period;
    c.cpus = static_cast<double>(quota) / static_cast<double>(period);
    c.source = fs.full(source);
    return std::optional<CpuQuota>(c);
}

// The tightest limit from `dir` up to `root` (each level's quota caps everything below it).
Result<CpuQuota> tightestQuota(const FileTree& fs, const std::string& version, const std::string& root, const std::string& dir) {
    CpuQuota best;
    for (std::string d = dir;; d = d.substr(0, d.rfind('/'))) {
        auto q = quotaAt(fs, version, d);
        if (!q) return failWith(q.error());
        if (*q && (!best.limited || (*q)->cpus < best.cpus)) best = **q;
        if (d.size() <= root.size() || d.rfind('/') == std::string::npos) break;
    }
    return best;
}

// rxtune's own cgroup and effective cpuset, v2 (unified) or v1 (cpuset hierarchy).
Result<void> readCgroup(const FileTree& fs, Topology& t) {
    t.cgroupVersion = "none";
    t.cgroupCpus = t.online;
    t.cgroupCpusSource = "online";
    auto cg = fs.read("proc/self/cgroup");
    if (!cg) return cg.error().code == ENOENT ? Result<void>{} : failWith(cg.error());
    std::string v1Path, v1CpuPath, v2Path;
    bool haveV2 = false;
    for (const auto& line : splitLines(*cg)) {
        auto first = line.find(':');
        auto second = line.find(':', first == std::string::npos ? 0 : first + 1);
        if (first == std::string::npos || second == std::string::npos)
            return fail(EINVAL, "parse", fs.full("proc/self/cgroup"), "line '" + line + "' is not id:controllers:path");
        std::string id = line.substr(0, first), ctl = line.substr(first + 1, second - first - 1),
                    path = line.substr(second + 1);
        if (id == "0" && ctl.empty()) {
            haveV2 = true;
            v2Path = path;
        } else {
            if (hasOption(ctl, "cpuset")) v1Path = path;
            if (hasOption(ctl, "cpu")) v1CpuPath = path;
        }
    }
    auto mi = fs.read("proc/self/mountinfo");
    std::vector<MountEntry> mounts = mi ? parseMountinfo(*mi) : std::vector<MountEntry>{};
    if (!v1Path.empty()) {
        t.cgroupVersion = "v1";
        t.cgroupPath = v1Path;
        std::string dir = "sys/fs/cgroup/cpuset/" + v1Path;
        t.cgroupRoot = "sys/fs/cgroup/cpuset";
        for (const auto& m : mounts)
            if (m.fsType == "cgroup" && hasOption(m.superOptions, "cpuset")) {
                dir = joinCg(m, v1Path);
                t.cgroupRoot = joinCg(m, m.root);
            }
        for (std::string d = dir;; d = d.substr(0, d.rfind('/'))) {
            std::string file = d + "/cpuset.effective_cpus";
            if (fs.exists(file)) {
                auto set = readList(fs, file, false);
                if (!set) return failWith(set.error());
                t.cgroupCpus = *set;
                t.cgroupCpusSource = fs.full(file);
                break;
            }
            if (d.find('/') == std::string::npos || d == "sys/fs/cgroup") break;
        }
        if (!v1CpuPath.empty()) {
            // The cpu controller is a hierarchy of its own in v1 (often co-mounted with cpuacct).
            t.cgroupCpuPath = v1CpuPath;
            t.cgroupCpuRoot = "sys/fs/cgroup/cpu";
            std::string cpuDir = "sys/fs/cgroup/cpu/" + v1CpuPath;
            for (const auto& m : mounts)
                if (m.fsType == "cgroup" && hasOption(m.superOptions, "cpu")) {
                    cpuDir = joinCg(m, v1CpuPath);
                    t.cgroupCpuRoot = joinCg(m, m.root);
                }
            auto q = tightestQuota(fs, "v1", t.cgroupCpuRoot, joinCg(MountEntry{"/", "/" + cpuDir, "", "", ""}, "/"));
            if (!q) return failWith(q.error());
            t.cgroupQuota = *q;
        }
        return {};
    }
    if (haveV2) {
        t.cgroupVersion = "v2";
        t.cgroupPath = v2Path;
        std::string base = "sys/fs/cgroup";
        for (const auto& m : mounts)
            if (m.fsType == "cgroup2") base = joinCg(m, "/");
        t.cgroupRoot = base;
        std::string dir = joinCg(MountEntry{"/", "/" + base, "", "", ""}, v2Path);
        // cpuset.cpus.effective exists only where the cpuset controller is enabled; walk up.
        for (std::string d = dir; d.size() >= base.size(); d = d.substr(0, d.rfind('/'))) {
            std::string file = d + "/cpuset.cpus.effective";
            if (fs.exists(file)) {
                auto set = readList(fs, file, false);
                if (!set) return failWith(set.error());
                t.cgroupCpus = *set;
                t.cgroupCpusSource = fs.full(file);
                break;
            }
            if (d == base || d.rfind('/') == std::string::npos) break;
        }
        t.cgroupCpuRoot = base;
        t.cgroupCpuPath = v2Path;
        auto q = tightestQuota(fs, "v2", base, dir);
        if (!q) return failWith(q.error());
        t.cgroupQuota = *q;
    }
    return {};
}

}  // namespace

Result<CpuSet> cgroupCpus(const FileTree& fs, const Topology& t, const std::string& cgroupPath) {
    if (t.cgroupVersion == "none" || t.cgroupRoot.empty())
        return fail(ENOENT, "cgroup", cgroupPath, "no cpuset cgroup hierarchy is mounted");
    if (!cgroupPath.starts_with("/") || cgroupPath.find("..") != std::string::npos)
        return fail(EINVAL, "cgroup", cgroupPath, "must be absolute without '..'");
    const std::string dir = joinCg(MountEntry{"/", "/" + t.cgroupRoot, "", "", ""}, cgroupPath);
    if (!fs.exists(dir)) return fail(ENOENT, "cgroup", cgroupPath, "does not exist (" + fs.full(dir) + ")");
    const char* file = t.cgroupVersion == "v1" ? "/cpuset.effective_cpus" : "/cpuset.cpus.effective";
    for (std::string d = dir;; d = d.substr(0, d.rfind('/'))) {
        if (fs.exists(d + file)) return readList(fs, d + file, false);
        if (d.size() <= t.cgroupRoot.size() || d.rfind('/') == std::string::npos) break;
    }
    return t.online;
}

Result<CpuQuota> cgroupQuota(const FileTree& fs, const Topology& t, const std::string& cgroupPath) {
    if (t.cgroupVersion == "none" || t.cgroupCpuRoot.empty()) return CpuQuota{};
    if (!cgroupPath.starts_with("/") || cgroupPath.find("..") != std::string::npos)
        return fail(EINVAL, "cgroup", cgroupPath, "must be absolute without '..'");
    const std::string dir = joinCg(MountEntry{"/", "/" + t.cgroupCpuRoot, "", "", ""}, cgroupPath);
    if (!fs.exists(dir)) return CpuQuota{};  // no such cgroup in the cpu hierarchy: nothing limits it there
    return tightestQuota(fs, t.cgroupVersion, t.cgroupCpuRoot, dir);
}

Result<void> addSysctls(const FileTree& fs, Topology& t, const std::vector<std::string>& keys) {
    for (const auto& key : keys) {
        bool known = false;
        for (const auto& v : t.sysctls) known = known || v.key == key;
        if (known) continue;
        if (auto ok = validateSysctlKey(key); !ok) return failWith(ok.error());
        SysctlValue v{key, false, false, true, {}};
        if (auto text = fs.read(paths::sysctl(key))) {
            v.present = true;
            v.writable = fs.writable(paths::sysctl(key));
            v.value = joinFields(*text);
        } else if (text.error().code != ENOENT) {
            return failWith(text.error());
        }
        t.sysctls.push_back(std::move(v));
    }
    return {};
}

Result<CpuSet> readLlc(const FileTree& fs, unsigned cpu) {
    const std::string dir = paths::cpuDir(cpu) + "/cache";
    auto entries = fs.list(dir);
    if (!entries) {
        if (entries.error().code == ENOENT) return CpuSet{};  // no cacheinfo (some VMs, non-x86 firmware)
        return failWith(entries.error());
    }
    unsigned bestLevel = 0;
    std::string best;
    for (const auto& e : *entries) {
        if (!e.starts_with("index")) continue;
        auto type = fs.read(dir + "/" + e + "/type");
        auto level = fs.read(dir + "/" + e + "/level");
        if (!type || !level) continue;  // an index without them describes nothing usable
        unsigned l = 0;
        if (!parseUnsigned(trimmed(*level), l))
            return fail(EINVAL, "parse", fs.full(dir + "/" + e + "/level"), "'" + trimmed(*level) + "' is not a cache level");
        if (trimmed(*type) == "Instruction" || l <= bestLevel) continue;
        bestLevel = l;
        best = dir + "/" + e + "/shared_cpu_list";
    }
    if (best.empty()) return CpuSet{};
    auto shared = readList(fs, best, false);
    if (!shared) return failWith(shared.error());
    return shared->empty() ? CpuSet::of({cpu}) : *shared;
}

Result<Topology> readTopology(const FileTree& fs) {
    Topology t;
    const std::string root = kCpuRoot;
    auto online = readList(fs, root + "/online", false);
    if (!online) return failWith(online.error());
    t.online = *online;
    auto possible = readList(fs, root + "/possible", true);
    if (!possible) return failWith(possible.error());
    t.possible = possible->empty() ? t.online : *possible;
    auto isolated = readList(fs, root + "/isolated", true);
    if (!isolated) return failWith(isolated.error());
    t.isolated = *isolated;
    auto nohz = readList(fs, root + "/nohz_full", true);
    if (!nohz) return failWith(nohz.error());
    t.nohzFull = *nohz;

    for (unsigned cpu : t.online.cpus()) {
        auto sib = readList(fs, paths::cpuDir(cpu) + "/topology/thread_siblings_list", true);
        if (!sib) return failWith(sib.error());
        t.smtSiblings[cpu] = sib->empty() ? CpuSet::of({cpu}) : *sib;
    }
    // Each last-level cache is read once, from its first CPU: the daemon takes a snapshot every
    // metrics interval, and each read is a directory listing and a few files per CPU.
    for (unsigned cpu : t.online.cpus()) {
        if (t.llc.contains(cpu)) continue;
        auto llc = readLlc(fs, cpu);
        if (!llc) return failWith(llc.error());
        if (llc->empty()) continue;  // no cacheinfo for this CPU
        t.llc[cpu] = *llc;
        for (unsigned shared : (*llc & t.online).cpus()) t.llc[shared] = *llc;
    }

    // Big and little cores: cpu_capacity (arm64, riscv), else x86 hybrid's PMU devices.
    for (unsigned cpu : t.online.cpus()) {
        const std::string file = paths::cpuDir(cpu) + "/cpu_capacity";
        auto text = fs.read(file);
        if (!text) {
            if (text.error().code == ENOENT) continue;
            return failWith(text.error());
        }
        unsigned c = 0;
        if (!parseUnsigned(trimmed(*text), c))
            return fail(EINVAL, "parse", fs.full(file), "'" + trimmed(*text) + "' is not a capacity");
        t.capacity[cpu] = c;
    }
    for (const char* type : {"core", "atom"}) {
        auto cpus = readList(fs, std::string("sys/devices/cpu_") + type + "/cpus", true);
        if (!cpus) return failWith(cpus.error());
        for (unsigned cpu : (*cpus & t.online).cpus()) t.coreType[cpu] = type;
    }

    if (auto nodes = fs.list("sys/devices/system/node"); nodes) {
        for (const auto& n : *nodes) {
            unsigned id = 0;
            if (!n.starts_with("node") || !parseUnsigned(n.substr(4), id)) continue;
            auto cpus = readList(fs, paths::nodeDir(id) + "/cpulist", false);
            if (!cpus) return failWith(cpus.error());
            t.numaNodes[id] = *cpus;
        }
    }
    if (t.numaNodes.empty()) t.numaNodes[0] = t.online;  // kernel without CONFIG_NUMA

    for (unsigned cpu : t.online.cpus()) {
        auto gov = fs.read(paths::cpuDir(cpu) + "/cpufreq/scaling_governor");
        if (!gov) {
            if (gov.error().code == ENOENT) continue;
            return failWith(gov.error());
        }
        t.cpufreq = true;
        t.governors[cpu] = trimmed(*gov);
    }
    if (t.cpufreq) {
        unsigned first = t.governors.begin()->first;
        if (auto av = fs.read(paths::cpuDir(first) + "/cpufreq/scaling_available_governors"); av)
            t.availableGovernors = splitFields(*av);
    }

    if (auto r = readCgroup(fs, t); !r) return failWith(r.error());

    // Host-global knobs exist only in the initial network namespace: their presence is the test.
    t.initialNetns = fs.exists(paths::sysctl("net.core.netdev_max_backlog"));
    for (const auto& spec : managedSysctls()) {
        SysctlValue v{spec.key, spec.hostGlobal, false, true, {}};
        auto text = fs.read(paths::sysctl(spec.key));
        if (text) {
            v.present = true;
            v.writable = fs.writable(paths::sysctl(spec.key));
            v.value = joinFields(*text);
        } else if (text.error().code != ENOENT) {
            return failWith(text.error());
        }
        t.sysctls.push_back(std::move(v));
    }
    return t;
}

}  // namespace rxtune
