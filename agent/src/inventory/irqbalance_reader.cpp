#include "inventory/irqbalance_reader.hpp"

#include <optional>

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

std::vector<int> irqbalanceAskingRxtune(const FileTree& fs) {
    std::vector<int> out;
    auto procs = irqbalanceProcesses(fs);
    if (!procs) return out;
    for (const auto& p : *procs) {
        if (!p.args) continue;
        IrqbalanceFacts f;
        applyIrqbalanceConfig({}, *p.args, CpuSet{}, f);
        std::string script = f.policyScript;
        while (script.size() > 1 && script.back() == '/') script.pop_back();
        if (script.empty() || script.front() != '/') continue;  // a relative path: whose cwd?
        if (script.ends_with("/rxtune-policy") || fs.exists(script.substr(1) + "/rxtune-policy")) out.push_back(std::stoi(p.pid));
    }
    return out;
}

}  // namespace rxtune
