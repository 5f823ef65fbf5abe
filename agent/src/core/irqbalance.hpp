// irqbalance as rxtune sees it: whether it runs, and which IRQs and CPUs its configuration bans.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpuset.hpp"

namespace rxtune {

struct IrqbalanceFacts {
    bool running = false;
    int pid = 0;
    std::string version;     // the installed package's (dpkg), "" when unknown
    std::string configFile;  // /etc/default/irqbalance (Debian) or /etc/sysconfig/irqbalance; "" none
    std::vector<unsigned> bannedIrqs;  // --banirq / -i
    CpuSet bannedCpus;
    std::string bannedCpusFrom;  // IRQBALANCE_BANNED_CPUS, IRQBALANCE_BANNED_CPULIST or "isolated/nohz_full"
    std::string policyScript;    // --policyscript / -l
    unsigned interval = 10;      // seconds between its balancing passes: --interval / -t (irqbalance's default 10)
    std::string argsFrom;        // "process" (the running one's command line and environment) or the file
    std::vector<std::string> notes;
};

// KEY=VALUE lines of a shell environment file (# comments, optional export, '' and "" quotes).
std::map<std::string, std::string> parseEnvironmentFile(std::string_view text);
// Whitespace-separated words of IRQBALANCE_ARGS or a NUL-separated command line, quotes removed.
std::vector<std::string> splitArguments(std::string_view text, char sep = ' ');

// What the configuration in force bans, per irqbalance's rules (irqbalance(1), cputree.c): a
// non-empty IRQBALANCE_BANNED_CPUS (a hex mask) wins over IRQBALANCE_BANNED_CPULIST, and either
// switches off irqbalance's own banning of isolated and nohz_full CPUs. args: its command line
// (--banirq=N, --banirq N, -i N, --policyscript=P, -l P, --interval=N, --interval N, -t N, -tN).
void applyIrqbalanceConfig(const std::map<std::string, std::string>& env, const std::vector<std::string>& args,
                           const CpuSet& isolatedOrNohz, IrqbalanceFacts& out);

}  // namespace rxtune
