#include "inventory/irqbalance_reader.hpp"

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
    auto pids = fs.list("proc");
    if (!pids) return failWith(pids.error());
    for (const auto& name : *pids) {
        unsigned pid = 0;
        if (!parseUnsigned(name, pid)) continue;
        auto comm = fs.read("proc/" + name + "/comm");
        if (!comm || trimmed(*comm) != "irqbalance") continue;
        f.running = true;
        f.pid = static_cast<int>(pid);
        // What the process was started with is what is in force.
        if (auto cmd = fs.read("proc/" + name + "/cmdline")) {
            auto words = splitArguments(*cmd, '\0');
            if (!words.empty()) words.erase(words.begin());
            args = words;
            f.argsFrom = "process";
        }
        if (auto e = fs.read("proc/" + name + "/environ")) {
            std::map<std::string, std::string> penv;
            for (const auto& kv : splitArguments(*e, '\0'))
                if (auto eq = kv.find('='); eq != std::string::npos && kv.starts_with("IRQBALANCE_")) penv[kv.substr(0, eq)] = kv.substr(eq + 1);
            env = penv;
        }
        break;
    }
    applyIrqbalanceConfig(env, args, host.isolated | host.nohzFull, f);
    return f;
}

std::vector<int> irqbalanceAskingRxtune(const FileTree& fs) {
    std::vector<int> out;
    auto pids = fs.list("proc");
    if (!pids) return out;
    for (const auto& name : *pids) {
        unsigned pid = 0;
        if (!parseUnsigned(name, pid)) continue;
        auto comm = fs.read("proc/" + name + "/comm");
        if (!comm || trimmed(*comm) != "irqbalance") continue;
        auto cmd = fs.read("proc/" + name + "/cmdline");
        if (!cmd) continue;
        auto words = splitArguments(*cmd, '\0');
        if (!words.empty()) words.erase(words.begin());
        IrqbalanceFacts f;
        applyIrqbalanceConfig({}, words, CpuSet{}, f);
        std::string script = f.policyScript;
        while (script.size() > 1 && script.back() == '/') script.pop_back();
        if (script.empty() || script.front() != '/') continue;  // a relative path: whose cwd?
        const bool named = script.ends_with("/rxtune-policy");
        if (named || fs.exists(script.substr(1) + "/rxtune-policy")) out.push_back(static_cast<int>(pid));
    }
    return out;
}

}  // namespace rxtune
