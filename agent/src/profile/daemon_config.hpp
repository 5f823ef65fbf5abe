// DaemonConfig: /etc/rxtune/rxtune.yaml, validated like profiles (file:line:col errors).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/interface_selection.hpp"
#include "core/result.hpp"

namespace rxtune {

// BPF softirq accounting: auto = on, paused while a CPU's NET_RX softirq rate is above
// bpfMaxSoftirqRate (its cost would show); on = always; off = not loaded.
enum class BpfAccounting { kAuto, kOn, kOff };

struct DaemonConfig {
    std::string file;    // where it came from; empty for defaults
    std::string digest;  // of its text (core/digest.hpp); empty for defaults
    std::string profile = "single-queue-gateway";
    std::vector<std::string> interfaces;  // overrides the profile's match when not empty
    std::string listen = "0.0.0.0:9867";  // Prometheus scrape endpoint
    std::chrono::milliseconds driftInterval{30000};
    std::chrono::milliseconds metricsInterval{5000};
    bool revertOnStop = false;  // on_stop: keep (default) | revert
    std::string stateDir = "/var/lib/rxtune";
    std::string runDir = "/run/rxtune";
    std::string bpfDir = "/sys/fs/bpf/rxtune";
    // Where the host's /proc/sys is: a container has it mounted elsewhere (the DaemonSet:
    // /host/proc/sys), since runc mounts nothing inside /proc and its own /proc/sys is read-only.
    std::string procSys = "/proc/sys";
    BpfAccounting bpfAccounting = BpfAccounting::kAuto;
    std::uint64_t bpfMaxSoftirqRate = 100000;
    std::size_t httpMaxConnections = 4096;         // scrape endpoint: open connections at most
    std::chrono::milliseconds httpTimeout{10000};  // to send a request and take the answer
    // The scrape endpoint's TLS and basic auth: an exporter-toolkit web config file (web/web_config.hpp);
    // empty: plain HTTP, open to anyone who reaches `listen`. `--web.config.file` overrides it.
    std::string webConfig;
    // rxtune-dp telemetry sockets to export as rxtune_datapath_* (an absent one shows up = 0).
    std::vector<std::string> datapaths = {"/var/run/dpdk/rxtune-dp/dpdk_telemetry.v2"};
    // metrics_interfaces: managed (default) | all | [globs]: which devices are read each
    // metrics interval and get rxtune_interface_* series.
    InterfaceSelection metricsInterfaces;
};

// A missing file at the default path means defaults; a missing file given explicitly is an error.
Result<DaemonConfig> loadDaemonConfig(const std::string& path, bool mustExist);
Result<DaemonConfig> parseDaemonConfig(const std::string& text, const std::string& file);

}  // namespace rxtune
