#include "daemon/daemon.hpp"

#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <ctime>
#include <iostream>
#include <memory>
#include <map>
#include <optional>
#include <thread>
#include <set>

#include <prometheus/text_serializer.h>

#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "bpf/softirq_accounting.hpp"
#include "inventory/softnet.hpp"
#include "metrics/metrics.hpp"
#include "metrics/datapath_metrics.hpp"
#include "bpf/governor.hpp"
#include "planner/auto_steer.hpp"
#include "inventory/dp_telemetry.hpp"
#include "profile/daemon_config.hpp"
#include "state/journal.hpp"
#include "sys/capabilities.hpp"
#include "sys/events.hpp"
#include "sys/link_watch.hpp"
#include "sys/netlink.hpp"
#include "sys/scrape_server.hpp"

#ifndef RXTUNE_VERSION
#define RXTUNE_VERSION "0.0.0"
#endif

namespace rxtune {

namespace {

using Clock = std::chrono::steady_clock;

// How long events that concern no device of the profile gather before they are read (see run()).
constexpr auto kNoiseBatch = std::chrono::milliseconds(2);

// journald keeps the level when a line starts with <N> (sd-daemon.h's SD_ERR ... SD_DEBUG).
void logLine(const char* prio, const std::string& msg) { std::cerr << prio << "rxtune: " << msg << std::endl; }
#define LOG_E(m) logLine(SD_ERR, m)
#define LOG_W(m) logLine(SD_WARNING, m)
#define LOG_N(m) logLine(SD_NOTICE, m)
#define LOG_I(m) logLine(SD_INFO, m)

double epochSeconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string isoNow() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// Says once, at start, which capability is missing and what breaks without it.
void checkCapabilities(const DaemonConfig& cfg) {
    auto caps = Capabilities::effective();
    if (!caps) {
        LOG_W("cannot read capabilities: " + caps.error().message());
        return;
    }
    auto has = [&](int cap) { return caps->has(cap); };
    if (!has(CAP_NET_ADMIN))
        LOG_W("missing CAP_NET_ADMIN: writing rps_cpus, rps_flow_cnt, xps_cpus and net.* sysctls will fail");
    if (!has(CAP_SYS_ADMIN) && (!has(CAP_BPF) || !has(CAP_PERFMON)))
        LOG_W("missing CAP_BPF/CAP_PERFMON: exact softirq accounting (BPF) will be off");
    if (geteuid() != 0 && !has(CAP_DAC_OVERRIDE))
        LOG_W("not root and missing CAP_DAC_OVERRIDE: root-owned sysfs/procfs knobs and the journal cannot be written");
    auto colon = cfg.listen.rfind(':');
    if (colon != std::string::npos && std::atoi(cfg.listen.c_str() + colon + 1) < 1024 && !has(CAP_NET_BIND_SERVICE))
        LOG_W("missing CAP_NET_BIND_SERVICE: cannot listen on " + cfg.listen);
}

struct Loaded {
    DaemonConfig config;
    Profile profile;
};

Result<Loaded> loadAll(const std::string& path, bool given) {
    auto cfg = loadDaemonConfig(path, given);
    if (!cfg) return failWith(cfg.error());
    auto prof = loadProfile(cfg->profile, profileSearchPath());
    if (!prof) return failWith(prof.error().withContext("profile " + cfg->profile));
    return Loaded{std::move(*cfg), std::move(*prof)};
}

class Agent {
public:
    Agent(Loaded loaded, std::string configPath, bool configGiven, FileTree& fs, NetlinkSource& nl, Metrics& metrics)
        : cfg_(std::move(loaded.config)),
          profile_(std::move(loaded.profile)),
          configPath_(std::move(configPath)),
          configGiven_(configGiven),
          fs_(fs),
          nl_(nl),
          metrics_(metrics),
          store_(cfg_.stateDir),
          xdp_(cfg_.bpfDir),
          datapaths_(*metrics.registry()) {}

    int run();

private:
    enum class Why { kStart, kEvent, kDrift, kReload, kAuto };
    // devices: an event's, the only ones read and answered for; null: the whole host.
    bool reconcile(Why why, const std::set<std::string>* devices = nullptr);  // false: nothing was planned or applied (logged)
    // An event about `name` (of link kind `linkKind`) is worth reading the device for.
    bool concerns(const std::string& name, const std::function<std::string()>& linkKind) const;
    void sampleMetrics();
    void stepAuto(const HostSnapshot& snap, const std::map<unsigned, SoftnetRow>& softnet,
                  const std::map<unsigned, CpuSoftirq>* bpf, const std::optional<StackCounters>& stack);
    void logAuto(const std::string& name, const AutoSteer& machine, const AutoDecision& d, const AutoScope& scope);
    void reload();
    void loadBpf();
    void setGovernor();  // from cfg_: a fresh governor for bpf_accounting: auto, none otherwise
    void governBpf(const std::map<unsigned, std::uint64_t>& netRxCounts);

    DaemonConfig cfg_;
    Profile profile_;
    std::string configPath_;
    bool configGiven_;
    FileTree& fs_;
    NetlinkSource& nl_;
    Metrics& metrics_;
    JournalStore store_;
    UniqueFd driftTimer_, metricsTimer_;
    std::unique_ptr<SoftirqAccounting> bpf_;  // null where BPF is not available or switched off
    std::unique_ptr<BpfGovernor> governor_;   // bpf_accounting: auto (a pointer: GCC 12 misreads an optional map)
    XdpSteering xdp_;
    std::optional<Clock::time_point> firstEvent_;  // the oldest event of the pending burst
    DatapathMetrics datapaths_;
    // steering: mode: auto: one state machine per steered interface, and what they decided.
    std::map<std::string, AutoSteer> auto_;
    AutoInputs autoIn_;
    std::optional<AutoRaw> lastRaw_;
    std::vector<std::string> steered_;  // the interfaces planned, by the last full reconcile and events since
    std::set<std::string> dueDevices_;  // named by events since the last reconcile
    bool fullDue_ = false;              // an event that names no device (lost events): look at all
    std::map<std::string, bool> datapathUp_;  // to log changes only
};

bool Agent::concerns(const std::string& name, const std::function<std::string()>& linkKind) const {
    if (std::find(steered_.begin(), steered_.end(), name) != steered_.end()) return true;  // ours: gone, reset, renamed
    if (!cfg_.interfaces.empty()) return std::find(cfg_.interfaces.begin(), cfg_.interfaces.end(), name) != cfg_.interfaces.end();
    if (!mayMatch(profile_.match, name, "")) return false;
    return profile_.match.includeVirtual || mayMatch(profile_.match, name, linkKind());
}

bool Agent::reconcile(Why why, const std::set<std::string>* devices) {
    const bool autoMode = profile_.steering.mode == SteeringMode::kAuto;
    const std::vector<std::string> scope = devices ? std::vector<std::string>(devices->begin(), devices->end()) : std::vector<std::string>();
    auto prepared = preparePlan(profile_, fs_, nl_, cfg_.interfaces, true, &xdp_, autoMode ? &autoIn_ : nullptr, false,
                                devices ? &scope : nullptr);
    if (!prepared) {
        // A device that vanished between the listing and the reading: its DELLINK event follows.
        LOG_W("reconcile: " + prepared.error().message());
        metrics_.recordApply({profile_.name, "failed", epochSeconds(), 0, 0});
        return false;
    }
    const Plan& plan = prepared->plan;
    if (devices) {
        std::erase_if(steered_, [&](const std::string& n) { return devices->count(n) > 0; });
        steered_.insert(steered_.end(), plan.interfaces.begin(), plan.interfaces.end());
    } else {
        steered_ = plan.interfaces;
    }
    Knobs knobs(fs_, &xdp_);
    auto applied = applyPlan(plan, knobs, store_, isoNow(), devices);
    if (!applied) {
        LOG_E("apply failed, its writes were undone: " + applied.error().message());
        metrics_.recordApply({profile_.name, "failed", epochSeconds(), 0, plan.pendingCount()});
        return false;
    }
    if (applied->resumedInterrupted) LOG_N("adopted the journal of an interrupted apply; originals kept");
    for (const auto& s : applied->written) {
        LOG_I((why == Why::kDrift ? "corrected drift: " : "set: ") + s.id + " " + normalise(s.kind, s.current) + " -> " + s.desired);
        if (why == Why::kDrift) metrics_.countDriftCorrection(s.id);
    }
    if (why == Why::kEvent && firstEvent_ && !applied->written.empty())
        metrics_.observeReapplyLatency(Clock::now() - *firstEvent_);
    // "drifted": what the last drift check found changed by someone else (and has set again).
    const size_t total = plan.settings.size();
    const size_t drifted = why == Why::kDrift ? applied->written.size() : 0;
    metrics_.recordApply(
        {plan.profile, applied->written.empty() ? "unchanged" : "changed", epochSeconds(), total - drifted, drifted});
    // An event's snapshot holds its devices only: the interface metrics wait for the next sample.
    if (devices) return true;
    if (!applied->written.empty()) {
        if (auto snap = takeSnapshot(fs_, nl_, {})) metrics_.updateSnapshot(*snap);
    } else {
        metrics_.updateSnapshot(prepared->snapshot);
    }
    return true;
}

void Agent::sampleMetrics() {
    for (const auto& socket : cfg_.datapaths) {
        auto stats = readDatapathTelemetry(socket);
        const bool up = stats.has_value();
        auto [it, first] = datapathUp_.emplace(socket, up);
        if ((first && up) || (!first && it->second != up)) {
            if (up) LOG_N("datapath: reading rxtune-dp (TAP " + stats->tap + ") at " + socket);
            else LOG_N("datapath: " + stats.error().message());
        }
        it->second = up;
        datapaths_.update(socket, stats);
    }
    // One snapshot serves both: its CPU list maps old-style softnet_stat rows, and its NICs feed
    // the interface metrics.
    auto snap = takeSnapshot(fs_, nl_, {});
    if (!snap) {
        LOG_W("metrics: " + snap.error().message());  // a device that vanished mid-read: next interval
        return;
    }
    metrics_.updateSnapshot(*snap);
    auto softnetText = fs_.read("proc/net/softnet_stat");
    auto softirqText = fs_.read("proc/softirqs");
    if (!softnetText || !softirqText) {
        LOG_W("metrics: " + (!softnetText ? softnetText.error().message() : softirqText.error().message()));
        return;
    }
    auto softnet = parseSoftnetStat(*softnetText, snap->host.online.cpus());
    auto netRx = parseNetRxSoftirqs(*softirqText);
    if (!softnet || !netRx) {
        LOG_W("metrics: " + (!softnet ? softnet.error().message() : netRx.error().message()));
        return;
    }
    metrics_.updateSoftnet(*softnet, *netRx);
    auto stack = readStackCounters(fs_);
    if (!stack) LOG_W("metrics: " + stack.error().message());
    else if (*stack) metrics_.updateStack(**stack);
    // Read only while attached, and before the governor acts: the interval that ends now was wholly
    // attached. Paused programs count nothing, so two readings in a row always span attached time,
    // and auto's samples fall back to /proc/stat for any interval that is not.
    std::optional<std::map<unsigned, CpuSoftirq>> bpfNow;
    if (bpf_ && bpf_->attached()) {
        if (auto v = bpf_->read()) {
            metrics_.updateBpf(*v);
            bpfNow = std::move(*v);
        } else {
            LOG_W("metrics: " + v.error().message());
        }
    }
    if (bpf_ && governor_) governBpf(*netRx);
    if (profile_.steering.mode == SteeringMode::kAuto && stack)
        stepAuto(*snap, *softnet, bpfNow ? &*bpfNow : nullptr, *stack);
}

void Agent::loadBpf() {
    if (cfg_.bpfAccounting == BpfAccounting::kOff) {
        metrics_.setBpfState("softirq", BpfAvailability::kDisabled);
        LOG_N("BPF softirq accounting off (bpf_accounting: off); /proc/stat softirq time stands in");
        return;
    }
    // Exact softirq accounting where BPF is available; said once, and every other metric works without it.
    if (auto acc = SoftirqAccounting::load()) {
        bpf_ = std::move(*acc);
        metrics_.setBpfState("softirq", BpfAvailability::kAvailable);
        setGovernor();
    } else {
        const bool unsupported = acc.error().code == ENOTSUP;
        metrics_.setBpfState("softirq", unsupported ? BpfAvailability::kNotSupported : BpfAvailability::kError);
        LOG_W("BPF softirq accounting unavailable, other metrics unaffected: " + acc.error().message());
    }
}

void Agent::setGovernor() {
    governor_ = cfg_.bpfAccounting == BpfAccounting::kAuto
                    ? std::make_unique<BpfGovernor>(static_cast<double>(cfg_.bpfMaxSoftirqRate))
                    : nullptr;
}

void Agent::governBpf(const std::map<unsigned, std::uint64_t>& netRxCounts) {
    const double at = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    const GovernorStep g = governor_->step(at, netRxCounts, bpf_->attached());
    if (g.action == GovernorStep::Action::kPause) {
        bpf_->pause();
        metrics_.setBpfState("softirq", BpfAvailability::kPaused);
        LOG_N("BPF softirq accounting: " + g.detail);
    } else if (g.action == GovernorStep::Action::kResume) {
        if (auto ok = bpf_->resume(); !ok) {
            LOG_W("BPF softirq accounting stays paused: " + ok.error().message());
            return;
        }
        metrics_.setBpfState("softirq", BpfAvailability::kAvailable);
        LOG_N("BPF softirq accounting: " + g.detail);
    }
}

void Agent::stepAuto(const HostSnapshot& snap, const std::map<unsigned, SoftnetRow>& softnet,
                     const std::map<unsigned, CpuSoftirq>* bpf, const std::optional<StackCounters>& stack) {
    auto raw = readAutoRaw(fs_, snap, &softnet, &stack);
    if (!raw) {
        LOG_W("auto: " + raw.error().message());
        return;
    }
    if (bpf)
        for (const auto& [cpu, v] : *bpf) raw->netRxNs[cpu] = v.netRxNs;
    std::map<std::string, AutoScope> changed;  // interfaces whose steering changes now
    if (lastRaw_) {
        PlanOptions opts;
        if (auto ok = addCgroupCpus(profile_, fs_, snap.host, opts); !ok) {
            LOG_W("auto: " + ok.error().message());
            return;
        }
        for (const auto& name : steered_) {
            auto nic = std::find_if(snap.nics.begin(), snap.nics.end(), [&](const Nic& n) { return n.name == name; });
            if (nic == snap.nics.end()) continue;
            const AutoSample sample = autoSample(*lastRaw_, *raw, name);
            auto scope = autoScope(profile_, snap.host, *nic, opts, sample);
            if (!scope) {
                LOG_W("auto " + name + ": " + scope.error().message());
                continue;
            }
            auto& machine = auto_.try_emplace(name, profile_.steering.autoThresholds).first->second;
            const AutoDecision d = machine.step(sample, scope->rxCpu, scope->candidates, scope->siblings);
            logAuto(name, machine, d, *scope);
            if (d.changed) changed.emplace(name, *scope);
        }
    }
    lastRaw_ = std::move(*raw);
    if (changed.empty()) return;
    // A candidate that cannot be put in place (someone else's XDP program on the device, no BPF)
    // fails the whole apply, whose writes are undone: those machines move on, and the plan is tried
    // again, up to once per candidate.
    const double at = lastRaw_->at;
    for (size_t attempt = 0; attempt <= profile_.steering.autoThresholds.candidates.size(); ++attempt) {
        for (const auto& [name, scope] : changed) {
            autoIn_.targets[name] = auto_.at(name).targets();
            autoIn_.modes[name] = auto_.at(name).mode();
        }
        if (reconcile(Why::kAuto)) return;
        bool retry = false;
        for (const auto& [name, scope] : changed) {
            auto& machine = auto_.at(name);
            const AutoDecision d = machine.failed(at, "the apply failed (see above)");
            logAuto(name, machine, d, scope);
            retry = retry || d.changed;
        }
        if (!retry) return;
    }
}

void Agent::logAuto(const std::string& name, const AutoSteer& machine, const AutoDecision& d, const AutoScope& scope) {
    if (!d.decision.empty()) {
        const bool was = d.decision != "enable" && d.decision != "hold" && d.decision != "retry";  // judged against the CPU it started from
        LOG_N("auto " + name + ": " + d.decision + " (" + d.reason + "): " + d.detail + " [receive CPU " +
              std::to_string(was ? machine.rxCpuAtEnable() : scope.rxCpu) + ", " + scope.rxCpuSource + "]");
        metrics_.countSteeringDecision(name, d.decision, d.reason);
        if (d.decision == "enable") metrics_.setTrialDelivered(name, "none", machine.baselinePps());
        for (const auto& t : machine.trials())
            if (t.samples > 0 || t.failed) metrics_.setTrialDelivered(name, candidateName(t.mode), t.failed ? 0 : t.deliveredPps);
    }
    metrics_.setAutoState(name, toString(machine.state()), machine.targets().count(), candidateName(machine.mode()));
}

void Agent::reload() {
    auto next = loadAll(configPath_, configGiven_);
    if (!next) {
        LOG_E("reload rejected, the running configuration stays: " + next.error().message());
        return;
    }
    if (next->config.listen != cfg_.listen) LOG_W("listen address changes take effect at the next start");
    next->config.listen = cfg_.listen;
    if (next->config.stateDir != cfg_.stateDir || next->config.runDir != cfg_.runDir)
        LOG_W("state_dir/run_dir changes take effect at the next start");
    next->config.stateDir = cfg_.stateDir;
    next->config.runDir = cfg_.runDir;
    const bool wasOff = cfg_.bpfAccounting == BpfAccounting::kOff, isOff = next->config.bpfAccounting == BpfAccounting::kOff;
    if (wasOff != isOff) {
        LOG_W("bpf_accounting: off/on changes take effect at the next start");
        next->config.bpfAccounting = cfg_.bpfAccounting;
    }
    const bool bpfChanged = next->config.bpfAccounting != cfg_.bpfAccounting ||
                            next->config.bpfMaxSoftirqRate != cfg_.bpfMaxSoftirqRate;
    cfg_ = std::move(next->config);
    if (bpf_ && bpfChanged) {
        // auto <-> on, or a new rate: the governor starts over; `on` attaches paused programs.
        setGovernor();
        if (!governor_ && !bpf_->attached()) {
            if (auto ok = bpf_->resume()) metrics_.setBpfState("softirq", BpfAvailability::kAvailable);
            else LOG_W("BPF softirq accounting stays paused: " + ok.error().message());
        }
    }
    profile_ = std::move(next->profile);
    if (profile_.steering.mode == SteeringMode::kAuto) {
        // New thresholds apply from the next sample; what each machine decided stays.
        for (auto& [name, machine] : auto_) machine.setThresholds(profile_.steering.autoThresholds);
    } else if (!auto_.empty()) {
        // No longer auto: the static plan decides; the machines and their state gauges go.
        for (const auto& [name, machine] : auto_) metrics_.setAutoState(name, "", 0, "");
        auto_.clear();
        autoIn_ = AutoInputs{};
    }
    setTimer(driftTimer_, cfg_.driftInterval);
    setTimer(metricsTimer_, cfg_.metricsInterval);
    LOG_N("reloaded: profile " + profile_.name);
    reconcile(Why::kReload);
}

int Agent::run() {
    auto sig = openSignalFd({SIGTERM, SIGINT, SIGHUP});
    auto drift = openTimerFd(cfg_.driftInterval);
    auto metricsT = openTimerFd(cfg_.metricsInterval);
    auto links = LinkWatch::open();
    auto uevents = openUeventMonitor();
    for (const Result<UniqueFd>* r : {&sig, &drift, &metricsT, &uevents})
        if (!*r) {
            LOG_E("start: " + r->error().message());
            return 1;
        }
    if (!links) {
        LOG_E("start: " + links.error().message());
        return 1;
    }
    driftTimer_ = std::move(*drift);
    metricsTimer_ = std::move(*metricsT);
    std::optional<UniqueFd> watchdog;
    std::uint64_t wdUsec = 0;
    if (sd_watchdog_enabled(0, &wdUsec) > 0 && wdUsec > 0) {
        auto w = openTimerFd(std::chrono::milliseconds(std::max<std::uint64_t>(1, wdUsec / 2000)));
        if (w) watchdog = std::move(*w);
    }

    UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
    auto watchFd = [&](int fd) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev);
    };
    auto watch = [&](const UniqueFd& fd) { watchFd(fd.get()); };
    watch(*sig);
    watch(driftTimer_);
    watch(metricsTimer_);
    watchFd((*links)->fd());
    watch(*uevents);
    if (watchdog) watch(*watchdog);

    loadBpf();
    reconcile(Why::kStart);
    sampleMetrics();
    sd_notify(0, ("READY=1\nSTATUS=keeping profile " + profile_.name + " applied").c_str());
    LOG_N("running: profile " + profile_.name + ", metrics on " + cfg_.listen);

    std::array<epoll_event, 16> events{};
    while (true) {
        int n = epoll_wait(ep.get(), events.data(), static_cast<int>(events.size()), -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            LOG_E("epoll_wait: " + std::string(std::strerror(errno)));
            return 1;
        }
        bool driftDue = false, metricsDue = false, reloadDue = false, stop = false, otherWork = false;
        for (int i = 0; i < n; ++i) {
            const int fd = events[static_cast<size_t>(i)].data.fd;
            if (fd == sig->get()) {
                for (auto s = readSignal(*sig); s && *s; s = readSignal(*sig)) {
                    if (*s == SIGHUP) reloadDue = true;
                    else stop = true;
                }
            } else if (fd == driftTimer_.get()) {
                readTimer(driftTimer_);
                driftDue = true;
            } else if (fd == metricsTimer_.get()) {
                readTimer(metricsTimer_);
                metricsDue = true;
            } else if (fd == (*links)->fd()) {
                // Each event names its device: only the ones the profile may want are read at all.
                for (const auto& c : (*links)->read()) {
                    if (c.kind == LinkChange::Kind::kResync) fullDue_ = true;
                    else if (concerns(c.name, [&] { return c.linkKind; })) dueDevices_.insert(c.name);
                }
            } else if (fd == uevents->get()) {
                for (const auto& u : readUevents(*uevents)) {
                    if (u.action == "resync") {
                        fullDue_ = true;
                        continue;
                    }
                    const std::string name = ueventDevice(u);
                    // The name alone settles most (a glob, a list); the kind is looked up only if needed.
                    if (!name.empty() && concerns(name, [&] {
                            const auto cached = (*links)->find(name);
                            return cached ? cached->kind : std::string();
                        }))
                        dueDevices_.insert(name);
                }
            } else if (watchdog && fd == watchdog->get()) {
                readTimer(*watchdog);
                sd_notify(0, "WATCHDOG=1");
                otherWork = true;
            }
        }
        const bool eventDue = fullDue_ || !dueDevices_.empty();
        // A wake-up for events about devices that concern nobody (a node's pods churning): let the
        // next ones gather in the sockets for a moment, so that they are read in batches, not
        // one wake-up each. An event that matters waits at most this long behind them.
        const bool noise = !eventDue && !driftDue && !metricsDue && !reloadDue && !stop && !otherWork;
        if (eventDue && !firstEvent_) firstEvent_ = Clock::now();
        if (stop) break;
        // Events only mark work as due; one reconcile per burst, of the devices the burst named.
        // The drift timer and a reload look at everything, and so does an event that names nothing.
        if (reloadDue) {
            reload();
        } else if (fullDue_ || driftDue) {
            reconcile(eventDue ? Why::kEvent : Why::kDrift);
        } else if (!dueDevices_.empty()) {
            reconcile(Why::kEvent, &dueDevices_);
        }
        fullDue_ = false;
        dueDevices_.clear();
        firstEvent_.reset();
        if (metricsDue) sampleMetrics();
        if (noise) std::this_thread::sleep_for(kNoiseBatch);
    }

    sd_notify(0, "STOPPING=1");
    if (cfg_.revertOnStop) {
        Knobs knobs(fs_, &xdp_);
        auto r = revertAll(knobs, store_);
        if (!r) {
            LOG_E("revert on stop failed, journal kept: " + r.error().message());
            return 1;
        }
        LOG_N("stopped and reverted " + std::to_string(r->restored.size()) + " setting(s)");
    } else {
        LOG_N("stopped; settings kept (on_stop: keep)");
    }
    return 0;
}

}  // namespace

int runDaemon(const std::string& configPath, bool configGiven) {
    // Block the signals before any thread exists (the scrape server's): threads inherit
    // the mask, so TERM/INT/HUP reach only the signalfd of the event loop.
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    auto loaded = loadAll(configPath, configGiven);
    if (!loaded) {
        LOG_E(loaded.error().message());
        return 1;
    }
    checkCapabilities(loaded->config);
    // Scrape clients are connections: take the hard descriptor limit (systemd's LimitNOFILE) as ours.
    if (rlimit lim{}; ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &lim);
    }
    auto lock = StateLock::acquire(loaded->config.runDir);
    if (!lock) {
        LOG_E(lock.error().message());
        return 1;
    }
    Metrics metrics(RXTUNE_VERSION);
    // One non-blocking thread serves scrapes: idle or slow clients cannot hold it (sys/scrape_server).
    ScrapeServerOptions http;
    http.listen = loaded->config.listen;
    http.maxConnections = loaded->config.httpMaxConnections;
    http.requestTimeout = loaded->config.httpTimeout;
    auto registry = metrics.registry();
    auto server = ScrapeServer::start(http, [registry] { return prometheus::TextSerializer().Serialize(registry->Collect()); });
    if (!server) {
        LOG_E("cannot listen on " + loaded->config.listen + ": " + server.error().message());
        return 1;
    }
    FileTree fs("/");
    auto nl = Netlink::open();
    if (!nl) {
        LOG_E(nl.error().message());
        return 1;
    }
    Agent agent(std::move(*loaded), configPath, configGiven, fs, **nl, metrics);
    return agent.run();
}

}  // namespace rxtune
