#include "inventory/irqbalance_reader.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "core/text.hpp"

namespace rxtune {

namespace {

// The installed package's version from dpkg's status file.
std::string packageVersion(const FileTree& fs) {
    if (!fs.exists("var/lib/dpkg/status")) return "";
    auto text = fs.read("var/lib/dpkg/status");
    if (!text) return "";
    bool inBlock = false;
    for (const auto& line : splitOn(*text, '\n')) {
        if (line.empty()) inBlock = false;
        else if (line == "Package: irqbalance") inBlock = true;
        else if (inBlock && line.starts_with("Version: ")) return trimmed(line.substr(9));
    }
    return "";
}

// The running irqbalance processes, by pid: their command line's arguments (after argv[0]),
// nullopt where it could not be read.
struct IrqbalanceProcess {
    std::string pid;
    std::optional<std::vector<std::string>> args;
};

Result<std::vector<IrqbalanceProcess>> irqbalanceProcesses(const FileTree& fs) {
    auto pids = fs.list("proc");
    if (!pids) return failWith(pids.error());
    std::vector<IrqbalanceProcess> out;
    for (const auto& name : *pids) {
        unsigned pid = 0;
        if (!parseUnsigned(name, pid)) continue;
        auto comm = fs.read("proc/" + name + "/comm");
        if (!comm || trimmed(*comm) != "irqbalance") continue;
        IrqbalanceProcess p{name, std::nullopt};
        if (auto cmd = fs.read("proc/" + name + "/cmdline")) {
            auto words = splitArguments(*cmd, '\0');
            if (!words.empty()) words.erase(words.begin());
            p.args = std::move(words);
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace

Result<IrqbalanceFacts> readIrqbalance(const FileTree& fs, const Topology& host) {
    IrqbalanceFacts f;
    f.version = packageVersion(fs);
    for (const char* file : {"etc/default/irqbalance", "etc/sysconfig/irqbalance"})
        if (fs.exists(file)) {
            f.configFile = "/" + std::string(file);
            break;
        }
    std::map<std::string, std::string> env;
    std::vector<std::string> args;
    if (!f.configFile.empty()) {
        auto text = fs.read(f.configFile.substr(1));
        if (!text) return failWith(text.error());
        env = parseEnvironmentFile(*text);
        if (auto a = env.find("IRQBALANCE_ARGS"); a != env.end()) args = splitArguments(a->second);
        // perftune.py wrote a key Debian's service never reads, and its bans were silently ignored.
        if (env.count("IRQBALANCE_OPTS"))
            f.notes.push_back(f.configFile + " sets IRQBALANCE_OPTS, which irqbalance's service does not read (the key is IRQBALANCE_ARGS)");
        f.argsFrom = f.configFile;
    }
    auto procs = irqbalanceProcesses(fs);
    if (!procs) return failWith(procs.error());
    if (!procs->empty()) {
        const IrqbalanceProcess& p = procs->front();
        f.running = true;
        f.pid = std::stoi(p.pid);
        // What the process was started with is what is in force.
        if (p.args) {
            args = *p.args;
            f.argsFrom = "process";
        }
        if (auto e = fs.read("proc/" + p.pid + "/environ")) {
            std::map<std::string, std::string> penv;
            for (const auto& kv : splitArguments(*e, '\0'))
                if (auto eq = kv.find('='); eq != std::string::npos && kv.starts_with("IRQBALANCE_")) penv[kv.substr(0, eq)] = kv.substr(eq + 1);
            env = penv;
        }
    }
    applyIrqbalanceConfig(env, args, host.isolated | host.nohzFull, f);
    return f;
}

double IrqbalanceAsking::rescanIgnoredFor() const {
    if (loopAge >= 0) return std::max(0.0, interval + 1.5 - loopAge);
    if (age >= 0) return std::max(0.0, interval + 2.0 - age);
    return 0;
}

bool IrqbalanceAsking::young() const {
    return loopAge >= 0 ? loopAge < interval + 10.0 : age >= 0 && age < interval + 12.0;
}

namespace {

// Seconds since process `pid` started: its start time (/proc/PID/stat field 22, clock ticks since
// boot; the command name in field 2 may hold spaces and parentheses) against /proc/uptime.
double processAge(const FileTree& fs, const std::string& pid) {
    auto stat = fs.read("proc/" + pid + "/stat");
    auto uptime = fs.read("proc/uptime");
    if (!stat || !uptime) return -1;
    const auto close = stat->rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream fields(stat->substr(close + 1));
    std::string f;
    unsigned long long start = 0;
    for (int field = 3; fields >> f; ++field)
        if (field == 22) {
            if (!parseUnsigned(f, start)) return -1;
            break;
        }
    double up = 0;
    std::istringstream u(*uptime);
    if (!(u >> up) || start == 0) return -1;
    const long ticks = sysconf(_SC_CLK_TCK);
    return std::max(0.0, up - static_cast<double>(start) / static_cast<double>(ticks > 0 ? ticks : 100));
}

}  // namespace

std::vector<IrqbalanceAsking> irqbalanceAskingRxtune(const FileTree& fs) {
    std::vector<IrqbalanceAsking> out;
    auto procs = irqbalanceProcesses(fs);
    if (!procs) return out;
    for (const auto& p : *procs) {
        if (!p.args) continue;
        IrqbalanceFacts f;
        applyIrqbalanceConfig({}, *p.args, CpuSet{}, f);
        std::string script = f.policyScript;
        while (script.size() > 1 && script.back() == '/') script.pop_back();
        if (script.empty() || script.front() != '/') continue;  // a relative path: whose cwd?
        if (script.ends_with("/rxtune-policy") || fs.exists(script.substr(1) + "/rxtune-policy"))
        {
            IrqbalanceAsking a{std::stoi(p.pid), f.interval, processAge(fs, p.pid)};
            if (auto made = fs.modifiedAt("run/irqbalance/irqbalance" + p.pid + ".sock")) {
                timespec now{};
                clock_gettime(CLOCK_REALTIME, &now);
                a.loopAge = std::max(0.0, static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9 - *made);
                // Older than the process: an earlier irqbalance's file under a reused pid (this
                // one then fell back to an abstract socket).
                if (a.age >= 0 && a.loopAge > a.age + 1) a.loopAge = -1;
            }
            out.push_back(a);
        }
    }
    return out;
}

}  // namespace rxtune
