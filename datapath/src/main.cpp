// rxtune-dp: the DPDK poll-mode path for NICs that cannot do multiqueue. See rxtune-dp(8).
#include <sched.h>

#include <iostream>

#include <CLI/CLI.hpp>
#include <systemd/sd-daemon.h>

#include "config.hpp"
#include "datapath.hpp"
#include "fanout.hpp"
#include "inventory/snapshot.hpp"
#include "sys/file_tree.hpp"

using namespace rxtune;
using namespace rxtune::dp;

namespace {

CpuSet allowedCpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    CpuSet out;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
    for (unsigned i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) out.add(i);
    return out;
}

// The command line, as given (empty: not given; the Option pointers say whether a number was).
struct CliOptions {
    std::string configFile, nic, tapName, tapMac, txMode, workerCpus, weights, prefetch, exceptionDevice, tapBackend;
    std::vector<std::string> addresses, eal;
    unsigned rxCpu = 0, idleSleep = 0;
    bool fix = false, check = false;
    CLI::Option *rxOpt = nullptr, *fixOpt = nullptr, *idleOpt = nullptr;
};

void addOptions(CLI::App& app, CliOptions& o) {
    app.add_option("-c,--config", o.configFile, "YAML configuration (command-line options override it)");
    app.add_option("--nic", o.nic, "NIC port: a vdev such as net_af_packet0,iface=eth1, or a PCI address");
    o.rxOpt = app.add_option("--rx-cpu", o.rxCpu, "CPU of the RX core");
    app.add_option("--worker-cpus", o.workerCpus, "CPU list of the workers, one TAP queue each (e.g. 2-5)");
    app.add_option("--weights", o.weights, "Share of flows per worker, comma separated (default equal)");
    app.add_option("--tap", o.tapName, "Name of the TAP interface the gateway serves from");
    app.add_option("--tap-mac", o.tapMac, "MAC of the TAP (default: derived from its name, stable across restarts)");
    app.add_option("--tap-address", o.addresses, "Address/prefix to put on the TAP (repeatable)");
    app.add_option("--tap-device", o.exceptionDevice, "A vdev instead of the TAP (virtio_user...,path=/dev/vhost-net; net_null for benchmarks)");
    app.add_option("--tap-backend", o.tapBackend, "The kernel side: auto (virtio-user where vhost-net works, else TAP), tap or virtio-user")
        ->check(CLI::IsMember({"auto", "tap", "virtio-user"}));
    app.add_option("--tx-mode", o.txMode, "How workers share the NIC's TX queue: lock (default: a spinlock around the transmit) or ring (drained by the RX core)")
        ->check(CLI::IsMember({"ring", "lock"}));
    o.fixOpt = app.add_flag("--fix-checksums", o.fix, "Recompute TCP/UDP checksums of frames from the NIC");
    app.add_option("--prefetch-next-mbufs", o.prefetch,
                   "Prefetch for ownership the mbufs the next receive takes: auto (on when a worker does not share the RX core's last-level cache), on or off")
        ->check(CLI::IsMember({"auto", "on", "off"}));
    o.idleOpt = app.add_option("--idle-sleep-us", o.idleSleep, "Sleep this long after idle polls (0: busy poll)");
    app.add_flag("--check", o.check, "Validate the configuration and the NIC interface, print the result, and exit");
    app.add_option("eal", o.eal, "EAL arguments, after --");
}

// --weights: integers from 0 to 1000, comma separated.
Result<std::vector<unsigned>> parseWeights(const std::string& text) {
    std::vector<unsigned> out;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t comma = text.find(',', pos);
        std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        try {
            size_t used = 0;
            unsigned long v = std::stoul(part, &used);
            if (used != part.size() || v > 1000) throw std::invalid_argument(part);
            out.push_back(static_cast<unsigned>(v));
        } catch (const std::exception&) {
            return fail(EINVAL, "parse", "--weights", "expected integers from 0 to 1000, got '" + part + "'");
        }
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return out;
}

Result<std::vector<unsigned>> parseCpus(const std::string& key, const std::string& text) {
    auto set = CpuSet::parseList(text);
    if (!set) return failWith(set.error().withContext(key));
    return set->cpus();
}

// The configuration file, then the options given on top of it.
Result<DpConfig> configOf(const CliOptions& o) {
    DpConfig c;
    if (!o.configFile.empty()) {
        auto loaded = loadDpConfig(o.configFile);
        if (!loaded) return failWith(loaded.error());
        c = std::move(*loaded);
    }
    if (!o.nic.empty()) c.nic = o.nic;
    if (o.rxOpt->count()) c.rxCpu = o.rxCpu;
    if (!o.workerCpus.empty()) {
        auto v = parseCpus("--worker-cpus", o.workerCpus);
        if (!v) return failWith(v.error());
        c.workerCpus = *v;
    }
    if (!o.weights.empty()) {
        auto v = parseWeights(o.weights);
        if (!v) return failWith(v.error());
        c.weights = *v;
    }
    if (!o.tapName.empty()) c.tapName = o.tapName;
    if (!o.tapMac.empty()) c.tapMac = o.tapMac;
    if (!o.addresses.empty()) c.tapAddresses = o.addresses;
    if (!o.exceptionDevice.empty()) c.exceptionDevice = o.exceptionDevice;
    if (!o.tapBackend.empty())
        c.tapBackend = o.tapBackend == "tap" ? TapBackend::kTap : o.tapBackend == "virtio-user" ? TapBackend::kVirtioUser : TapBackend::kAuto;
    if (!o.txMode.empty()) c.txMode = o.txMode == "ring" ? TxMode::kRing : TxMode::kLock;
    if (o.fixOpt->count()) c.fixChecksums = o.fix;
    if (o.idleOpt->count()) c.idleSleepUs = o.idleSleep;
    if (!o.prefetch.empty()) c.prefetchNextMbufs = *parsePrefetch(o.prefetch);
    c.eal.insert(c.eal.end(), o.eal.begin(), o.eal.end());
    return c;
}

// --check: what would run, as YAML.
void printCheck(const DpConfig& c, const CpuSet& rxLlc) {
    auto reta = buildReta(c.weights, c.retaSize);
    std::cout << "nic: " << c.nic << "\nrx_cpu: " << *c.rxCpu << "\nrx_llc: " << (rxLlc.empty() ? "unknown" : rxLlc.toList())
              << "\nworkers:";
    auto shares = retaShares(*reta, static_cast<unsigned>(c.workerCpus.size()));
    for (size_t i = 0; i < c.workerCpus.size(); ++i) {
        std::cout << "\n  - {queue: " << i << ", cpu: " << c.workerCpus[i] << ", reta_entries: " << shares[i];
        if (!rxLlc.empty()) std::cout << ", shares_rx_llc: " << (rxLlc.contains(c.workerCpus[i]) ? "true" : "false");
        std::cout << "}";
    }
    std::cout << "\ntap: {name: " << c.tapName << ", mac: " << c.tapMac << ", queues: " << c.workerCpus.size() << "}\n";
    std::cout << "tx_mode: " << (c.txMode == TxMode::kRing ? "ring" : "lock") << "\n";
    const PrefetchChoice pf = choosePrefetch(c, rxLlc, cpuHasPrefetchw());
    std::cout << "prefetch_next_mbufs: " << (pf.on ? "on" : "off") << " (" << pf.why << ")\n";
    if (auto w = acrossLlcWarning(c, rxLlc); !w.empty()) std::cerr << "rxtune-dp: " << w << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"rxtune-dp: poll a single-queue NIC and fan its flows out to a multi-queue TAP"};
    CliOptions o;
    addOptions(app, o);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    auto c = configOf(o);
    if (!c) {
        std::cerr << "rxtune-dp: " << c.error().message() << "\n";
        return 1;
    }
    if (auto ok = validateDpConfig(*c, allowedCpus()); !ok) {
        std::cerr << "rxtune-dp: " << (c->file.empty() ? "" : c->file + ": ") << ok.error().message() << "\n";
        return 1;
    }
    // The CPUs sharing the RX core's last-level cache; unknown (empty) without sysfs cacheinfo.
    auto llc = readLlc(FileTree("/"), *c->rxCpu);
    const CpuSet rxLlc = llc ? *llc : CpuSet{};
    if (!llc) std::cerr << SD_NOTICE "rxtune-dp: the RX core's last-level cache is unknown: " << llc.error().message() << std::endl;
    if (o.check) {
        printCheck(*c, rxLlc);
        return 0;
    }
    if (auto w = acrossLlcWarning(*c, rxLlc); !w.empty()) std::cerr << SD_WARNING "rxtune-dp: " << w << std::endl;
    auto rc = runDatapath(*c, choosePrefetch(*c, rxLlc, cpuHasPrefetchw()));
    if (!rc) {
        std::cerr << "rxtune-dp: " << rc.error().message() << "\n";
        return 1;
    }
    return *rc;
}
