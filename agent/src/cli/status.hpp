// rxtune status: where receive work happens now (per CPU), what rxtune steers and how, and whether
// the host is as the journal says. Sampling reads /proc, sysfs, the journal and, when the daemon
// runs, its <run-dir>/status.json; the model and its rendering are pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/counters.hpp"

namespace rxtune {

struct StatusOptions {
    unsigned intervalMs = 1000;
    bool watch = false;  // redraw in place every interval until interrupted (or `count` samples)
    bool json = false;   // one JSON document per sample, one per line
    unsigned count = 0;  // samples to take; 0: one, or unbounded with --watch
    std::string stateDir = "/var/lib/rxtune";
    std::string runDir = "/run/rxtune";
    std::string bpfDir = "/sys/fs/bpf/rxtune";
};

int runStatus(const StatusOptions& o);  // 0, or 1 on error

// Counters at one moment.
struct StatusRaw {
    double at = 0;  // seconds, monotonic
    std::map<unsigned, CpuJiffies> cpu;
    std::map<unsigned, SoftnetRow> softnet;
    std::map<std::string, std::uint64_t> rxPackets;  // the steered interfaces'
};

struct CpuStatus {
    unsigned cpu = 0;
    double busy = 0, softirq = 0;  // shares of the interval
    std::optional<double> netRx;   // NET_RX share from the daemon's BPF accounting
    double packets = 0, drops = 0, squeezes = 0;  // per second (softnet_stat)
    std::string cpuClass;                          // big, middle, little; "" where the CPUs are alike
    std::string capacity;                          // "capacity 512", "core type atom", or ""
};

struct IfaceStatus {
    std::string name, mode, autoState, targets, decision;
    double rxPps = 0;
    // mode auto's trials in the daemon's order: "rps 1.90x predicted, 1.74x measured; xdp 1.90x predicted; skipped: napi"
    std::string trials;
};

struct StatusSample {
    double interval = 0;
    std::vector<CpuStatus> cpus;
    std::optional<unsigned> hot;  // the CPU doing the most receive work, if any does much
    std::vector<IfaceStatus> ifaces;
    std::string profile;          // empty: nothing applied
    std::string appliedAt;
    std::optional<std::size_t> drifted;  // settings not as applied; nullopt: no journal
    std::optional<long> daemonPid;
};

// What the journal, the daemon's status and two readings say, as one sample.
struct StatusInputs {
    std::string profile, appliedAt;
    std::optional<std::size_t> drifted;
    // Steered interfaces from the journal's applied settings: mode ("rps", "xdp") and target CPUs.
    std::map<std::string, std::pair<std::string, std::string>> steered;
    std::optional<nlohmann::json> daemon;  // its status.json, when it runs
    // Per CPU: its class and capacity where the host has big and little cores (cpuClasses).
    std::map<unsigned, std::pair<std::string, std::string>> classes;
};
StatusSample makeStatus(const StatusRaw& a, const StatusRaw& b, const StatusInputs& in);

// At most `width` columns; bars where a share says more than a number.
std::string renderStatus(const StatusSample& s, unsigned width = 80);
nlohmann::json statusJson(const StatusSample& s);

}  // namespace rxtune
