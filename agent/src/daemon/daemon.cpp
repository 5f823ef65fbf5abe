#include "daemon/daemon.hpp"

#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <prometheus/text_serializer.h>

#include "daemon/auto_control.hpp"
#include "daemon/bpf_control.hpp"
#include "daemon/datapath_watch.hpp"
#include "daemon/log.hpp"
#include "core/paths.hpp"
#include "daemon/reconciler.hpp"
#include "sys/files.hpp"
#include "sys/napi_threads.hpp"
#include "inventory/snapshot.hpp"
#include "inventory/softnet.hpp"
#include "metrics/datapath_metrics.hpp"
#include "metrics/metrics.hpp"
#include "profile/daemon_config.hpp"
#include "state/journal.hpp"
#include "sys/atomic_file.hpp"
#include "sys/capabilities.hpp"
#include "sys/dir_watch.hpp"
#include "sys/events.hpp"
#include "sys/link_watch.hpp"
#include "sys/netlink.hpp"
#include "web/web_server.hpp"

#ifndef RXTUNE_VERSION
#define RXTUNE_VERSION "0.0.0"
#endif

namespace rxtune {

namespace {

using Clock = std::chrono::steady_clock;
using Why = Reconciler::Why;

// How long events that concern no device of the profile gather before they are read (see onIdle).
constexpr auto kNoiseBatch = std::chrono::milliseconds(2);
// How long an event's reconcile waits for the rest of its burst.
constexpr auto kBurstSettle = std::chrono::microseconds(300);
// How long the configuration's directories must be quiet before a change on disk is reloaded.
constexpr auto kReloadDebounce = std::chrono::milliseconds(200);

// "TLS (client certificates: RequireAndVerifyClientCert), basic auth (2 users)", or "plain HTTP".
std::string describe(const WebEndpoint& web) {
    std::string s = web.tls ? std::string("TLS (client certificates: ") + toString(web.tls->clientAuth) + ")" : "plain HTTP";
    if (!web.users.empty()) s += ", basic auth (" + std::to_string(web.users.size()) + (web.users.size() == 1 ? " user)" : " users)");
    if (!web.file.empty()) s += " from " + web.file;
    return s;
}

double monotonicSeconds() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

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
    std::shared_ptr<const WebEndpoint> web;  // the scrape endpoint's TLS, users and headers
};

// Where the daemon's configuration comes from: its file, and the web config flag (which wins over
// the file's web_config key, as --web.config.file does for node_exporter).
struct Sources {
    std::string configPath;
    bool configGiven = false;
    std::string webConfigFlag;
};

Result<std::shared_ptr<const WebEndpoint>> loadWeb(const std::string& path) {
    if (path.empty()) return plainWebEndpoint();
    auto web = loadWebConfig(path);
    if (!web) return failWith(web.error());
    return prepareWebEndpoint(*web);
}

Result<Loaded> loadAll(const Sources& src) {
    auto cfg = loadDaemonConfig(src.configPath, src.configGiven);
    if (!cfg) return failWith(cfg.error());
    auto prof = loadProfile(cfg->profile, profileSearchPath());
    if (!prof) return failWith(prof.error().withContext("profile " + cfg->profile));
    if (!src.webConfigFlag.empty()) cfg->webConfig = src.webConfigFlag;
    auto web = loadWeb(cfg->webConfig);
    if (!web) return failWith(web.error().withContext("web config"));
    return Loaded{std::move(*cfg), std::move(*prof), std::move(*web)};
}

std::uint64_t usec(std::chrono::milliseconds d) { return static_cast<std::uint64_t>(d.count()) * 1000; }

// The composition root: owns the units, and an sd-event loop whose handlers only mark work as
// due; one idle-priority handler then does it, once per burst of events.
class Agent {
public:
    Agent(Loaded loaded, Sources sources, WebServer& web, FileTree& fs, NetlinkSource& nl, Metrics& metrics)
        : cfg_(std::move(loaded.config)),
          profile_(std::move(loaded.profile)),
          web_(std::move(loaded.web)),
          sources_(std::move(sources)),
          server_(web),
          fs_(fs),
          nl_(nl),
          metrics_(metrics),
          xdp_(cfg_.bpfDir),
          napi_(fs, nl),
          reconciler_(fs, nl, Services().with<XdpSteering>(&xdp_).with<NapiThreads>(&napi_), cfg_.stateDir, metrics),
          auto_(metrics),
          bpf_(metrics),
          datapathMetrics_(*metrics.registry()),
          datapaths_(datapathMetrics_) {
        if (auto note = keepAvailableCandidates(profile_, nl_, fs_); !note.empty()) LOG_N("mode auto: " + note);
        reconciler_.configure(&profile_, &cfg_.interfaces);
        reconciler_.setRunDir(cfg_.runDir);
    }
    ~Agent() {
        for (sd_event_source* s : {driftSrc_, metricsSrc_, autoSrc_, idleSrc_, debounceSrc_}) sd_event_source_unref(s);
        sd_event_unref(event_);
    }
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    int run();

private:
    // The steps of run().
    std::string openSources();
    int addHandlers();
    int addConfigWatch();
    void startServing();
    int stop();
    // A periodic timer: marks its work due and arms itself again for its (reloadable) interval.
    struct Periodic {
        Agent* agent = nullptr;
        bool Agent::*due = nullptr;
        std::chrono::milliseconds (*period)(const Agent&) = nullptr;
    };
    Periodic driftTimer_, metricsTimer_, autoTimer_;  // the timers' userdata, as long as the loop
    // Mode auto's own clock (steering.auto.interval); without mode auto it ticks at the metrics
    // interval and does nothing.
    std::chrono::milliseconds autoPeriod() const {
        if (profile_.steering.mode != SteeringMode::kAuto) return cfg_.metricsInterval;
        return std::chrono::milliseconds(std::max<long long>(1, std::llround(profile_.steering.autoThresholds.intervalSeconds * 1000)));
    }

    bool reconcile(Why why, const std::set<std::string>* devices = nullptr) {
        const bool autoMode = profile_.steering.mode == SteeringMode::kAuto;
        const bool ok = reconciler_.run(why, devices, autoMode ? &auto_.inputs() : nullptr, firstEvent_);
        if (reconciler_.wroteHostWide() && why != Why::kStart) refreshInterfaceMetrics();  // start: sample() follows
        return ok;
    }
    void sample();
    void sampleAuto();  // one tick of mode auto's clock
    // The snapshot the metrics need: the host, and the devices metrics_interfaces selects (read
    // one by one, so the cost follows the selected devices, not the node's).
    Result<HostSnapshot> metricsSnapshot();
    void exportInterfaces(const HostSnapshot& snap);  // rxtune_interface_* of those selected
    void refreshInterfaceMetrics();
    void writeStatus() const;
    // asked: SIGHUP or `rxtune reload` (always reloads, answers in reload.json); else a change on
    // disk, which reloads only if the contents differ from what runs.
    void reload(bool asked);
    void writeReloadStatus(bool ok, const std::string& error);
    void watchConfigDirs();
    void markDue(const std::string& device);  // empty: an event that names none
    void onLinkChanges();
    void onUevents();
    void onIdle();

    DaemonConfig cfg_;
    Profile profile_;
    std::shared_ptr<const WebEndpoint> web_;  // what new scrape connections are served with
    Sources sources_;
    WebServer& server_;
    FileTree& fs_;
    NetlinkSource& nl_;
    Metrics& metrics_;
    // The OS objects the knobs' backends work through (the reconciler's Services).
    XdpSteering xdp_;
    SystemNapiThreads napi_;
    Reconciler reconciler_;
    AutoControl auto_;
    BpfControl bpf_;
    DatapathMetrics datapathMetrics_;
    DatapathWatch datapaths_;
    std::unique_ptr<LinkWatch> links_;
    UniqueFd uevents_;

    sd_event* event_ = nullptr;
    sd_event_source *driftSrc_ = nullptr, *metricsSrc_ = nullptr, *autoSrc_ = nullptr, *idleSrc_ = nullptr;
    // What the handlers found due since the last idle turn.
    std::set<std::string> dueDevices_;  // named by events
    bool fullDue_ = false;              // an event that names no device (lost events): look at all
    std::optional<HostSnapshot> autoSnap_;  // the host and devices auto's ticks go by (sampleAuto)
    bool driftDue_ = false, metricsDue_ = false, autoDue_ = false, reloadDue_ = false, changeDue_ = false;
    long reloadToken_ = 0;          // `rxtune reload`'s, from the queued signal's value (0: plain SIGHUP)
    unsigned long reloadSeq_ = 0;   // reload.json's sequence number
    std::string refusedFingerprint_;  // the broken contents last refused on a change (said once)
    std::optional<DirWatch> dirWatch_;
    sd_event_source* debounceSrc_ = nullptr;
    std::optional<Clock::time_point> firstEvent_;  // when the oldest event of the pending burst was read
};

void Agent::markDue(const std::string& device) {
    if (!firstEvent_) firstEvent_ = Clock::now();
    if (device.empty()) fullDue_ = true;
    else dueDevices_.insert(device);
}

void Agent::onLinkChanges() {
    // Each event names its device: only the ones the profile may want are read at all.
    for (const auto& c : links_->read()) {
        if (c.kind == LinkChange::Kind::kResync) markDue("");
        else if (reconciler_.concerns(c.name, [&] { return c.linkKind; })) markDue(c.name);
    }
}

void Agent::onUevents() {
    for (const auto& u : readUevents(uevents_)) {
        if (u.action == "resync") {
            markDue("");
            continue;
        }
        const std::string name = ueventDevice(u);
        // The name alone settles most (a glob, a list); the kind is looked up only if needed.
        if (!name.empty() && reconciler_.concerns(name, [&] {
                const auto cached = links_->find(name);
                return cached ? cached->kind : std::string();
            }))
            markDue(name);
    }
}

void Agent::onIdle() {
    const bool eventDue = fullDue_ || !dueDevices_.empty();
    // A turn for events about devices that concern nobody (a node's pods churning): let the next
    // ones gather in the sockets for a moment, so that they are read in batches, not one wake-up
    // each. An event that matters waits at most this long behind them.
    const bool noise = !eventDue && !driftDue_ && !metricsDue_ && !autoDue_ && !reloadDue_ && !changeDue_;
    // The drift timer and a reload look at everything, and so does an event that names nothing.
    if (reloadDue_ || changeDue_) reload(reloadDue_);
    else if (fullDue_ || driftDue_) reconcile(eventDue ? Why::kEvent : Why::kDrift);
    else if (!dueDevices_.empty()) {
        // A burst is rarely one message: `ip link add a type veth peer name b` announces b, then a.
        // What arrives within a moment joins this reconcile rather than waiting for the next.
        std::this_thread::sleep_for(kBurstSettle);
        onLinkChanges();
        onUevents();
        if (fullDue_) reconcile(Why::kEvent);
        else reconcile(Why::kEvent, &dueDevices_);
    }
    fullDue_ = driftDue_ = reloadDue_ = changeDue_ = false;
    dueDevices_.clear();
    firstEvent_.reset();
    if (metricsDue_) sample();
    if (autoDue_) sampleAuto();
    metricsDue_ = autoDue_ = false;
    if (noise) std::this_thread::sleep_for(kNoiseBatch);
}

Result<HostSnapshot> Agent::metricsSnapshot() {
    const InterfaceSelection& sel = cfg_.metricsInterfaces;
    if (sel.kind == InterfaceSelection::Kind::kAll) return takeSnapshot(fs_, nl_, {});
    // The steered devices are always read (mode auto measures them), whatever is exported.
    std::set<std::string> managed(reconciler_.steered().begin(), reconciler_.steered().end());
    managed.insert(cfg_.interfaces.begin(), cfg_.interfaces.end());
    std::vector<std::string> names;
    // The link watch's cache knows every device's name and kind without a dump; only a device
    // with no kind and no loopback flag (hardware, typically) costs a look at sysfs.
    for (const auto& e : links_->entries()) {
        const bool mine = managed.count(e.name) > 0;
        bool physical = false;
        if (!sel.byName() && !mine && e.kind.empty() && !e.loopback && validateIfName(e.name))
            physical = fs_.exists(paths::netDevFile(e.name, "device"));
        if (mine || sel.wants(e.name, mine, physical)) names.push_back(e.name);
    }
    HostSnapshot s;
    auto topo = readTopology(fs_);
    if (!topo) return failWith(topo.error().withContext("host"));
    s.host = std::move(*topo);
    if (names.empty()) return s;  // readNics({}) would mean every device
    auto nics = readNics(fs_, nl_, names, true);
    if (!nics) return failWith(nics.error());
    s.nics = std::move(*nics);
    // The steered devices' NAPI kthreads (their CPU time: rxtune_napi_kthread_cpu_seconds) where
    // the profile's steering runs the poll in kthreads.
    if (runsNapiKthreads(profile_.steering))
        for (auto& n : s.nics)
            if (managed.count(n.name))
                if (auto r = readNapiState(fs_, nl_, n); !r) LOG_W("metrics: " + r.error().message());
    return s;
}

void Agent::exportInterfaces(const HostSnapshot& snap) {
    const InterfaceSelection& sel = cfg_.metricsInterfaces;
    if (!sel.byName()) {
        metrics_.updateSnapshot(snap);  // all, or managed: exactly what was read
        return;
    }
    HostSnapshot exported;
    exported.host = snap.host;
    for (const auto& n : snap.nics)
        if (sel.wants(n.name, false, n.kind == "physical")) exported.nics.push_back(n);
    metrics_.updateSnapshot(exported);
}

void Agent::refreshInterfaceMetrics() {
    if (auto snap = metricsSnapshot()) exportInterfaces(*snap);
    else LOG_W("metrics: " + snap.error().message());
}

void Agent::sample() {
    datapaths_.sample(cfg_.datapaths);
    // One snapshot serves both: its CPU list maps old-style softnet_stat rows, and its NICs feed
    // the interface metrics.
    auto snap = metricsSnapshot();
    if (!snap) {
        LOG_W("metrics: " + snap.error().message());  // a device that vanished mid-read: next interval
        return;
    }
    exportInterfaces(*snap);
    autoSnap_ = *snap;  // what auto's ticks go by until the next interval
    auto softnet = readSoftnetStat(fs_, snap->host.online.cpus());
    auto softirqText = fs_.read("proc/softirqs");
    if (!softnet || !softirqText) {
        LOG_W("metrics: " + (!softnet ? softnet.error().message() : softirqText.error().message()));
        return;
    }
    auto netRx = parseNetRxSoftirqs(*softirqText);
    if (!netRx) {
        LOG_W("metrics: " + netRx.error().message());
        return;
    }
    metrics_.updateSoftnet(*softnet, *netRx);
    auto stat = readProcStat(fs_);
    if (stat) metrics_.updateCpuIdle(*stat);
    else LOG_W("metrics: " + stat.error().message());
    auto stack = readStackCounters(fs_);
    if (!stack) LOG_W("metrics: " + stack.error().message());
    else if (*stack) metrics_.updateStack(**stack);
    bpf_.sample(*netRx, monotonicSeconds());
    writeStatus();
}

// Mode auto on its own clock: the steered devices' counters and the host's CPU, softnet and stack
// counters, read each tick (a few procfs files and one netlink look per device); the metrics
// interval's status file catches up with what it decided.
void Agent::sampleAuto() {
    const auto& steered = reconciler_.steered();
    if (profile_.steering.mode != SteeringMode::kAuto || steered.empty()) return;
    // The host and the devices as the last metrics interval read them (CPUs, IRQ CPUs, kinds): a
    // tick reads only counters (a full look cost 1.4 ms a tick, 0.6 % of a CPU at rest). Read
    // afresh where a steered device is not in it yet, and without the stack's counters (no
    // /proc/net/snmp), where the devices' own RX counters stand in.
    const auto known = [&](const std::string& name) {
        return std::any_of(autoSnap_->nics.begin(), autoSnap_->nics.end(), [&](const Nic& n) { return n.name == name; });
    };
    if (!autoSnap_ || !std::all_of(steered.begin(), steered.end(), known) || !fs_.exists("proc/net/snmp")) {
        auto snap = takeSnapshot(fs_, nl_, steered, true);
        if (!snap) {
            LOG_W("auto: " + snap.error().message());  // a device that vanished mid-read: next tick
            return;
        }
        autoSnap_ = std::move(*snap);
    }
    auto_.sample(profile_, fs_, *autoSnap_, bpf_.read(), steered, [&](const AutoInputs&) { return reconcile(Why::kAuto); });
}

// <run-dir>/status.json, for `rxtune status`: what only the daemon knows (mode auto's state and
// last decision, BPF's NET_RX shares), replaced whole at each sample; not fsynced (it is a view).
void Agent::writeStatus() const {
    nlohmann::json j;
    j["pid"] = static_cast<long>(::getpid());
    j["at"] = epochSeconds();
    j["profile"] = profile_.name;
    j["metrics_interval_s"] = std::chrono::duration<double>(cfg_.metricsInterval).count();
    j["interfaces"] = nlohmann::json::object();
    for (const auto& name : reconciler_.steered()) {
        nlohmann::json i = nlohmann::json::object();
        if (const AutoSteer* m = auto_.machine(name)) {
            i["auto_state"] = toString(m->state());
            i["mode"] = candidateName(m->mode());
            i["targets"] = m->targets().toList();
            if (const AutoTrial* t = m->current()) i["trial"] = trialName(*t);
            // The trials of the attempt in progress or last judged, in the order they ran.
            nlohmann::json order = nlohmann::json::array();
            for (const auto& t : m->trials()) {
                nlohmann::json o = {{"trial", trialName(t)}, {"targets", t.targets.toList()}, {"predicted_ratio", t.predicted.ratio},
                                    {"predicted", predictionText(t.predicted)}};
                if (t.skipped) o["skipped"] = t.skipWhy;
                if (t.samples > 0) o["measured_ratio"] = m->baselinePps() > 0 ? t.deliveredPps / m->baselinePps() : 0.0;
                order.push_back(std::move(o));
            }
            i["trial_order"] = std::move(order);
        }
        if (auto it = auto_.said().find(name); it != auto_.said().end())
            i["last_decision"] = {{"decision", it->second.decision}, {"reason", it->second.reason}, {"detail", it->second.detail}};
        j["interfaces"][name] = i;
    }
    nlohmann::json shares = nlohmann::json::object();
    for (const auto& [cpu, share] : bpf_.lastShares()) shares[std::to_string(cpu)] = share;
    j["bpf_net_rx_share"] = shares;
    if (auto ok = writeFileAtomic(cfg_.runDir + "/status.json", j.dump() + "\n", false); !ok)
        LOG_W("status: " + ok.error().message());
}

void Agent::reload(bool asked) {
    const auto started = Clock::now();
    auto took = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
    auto next = loadAll(sources_);
    // A new web config (or certificate) goes to the server first: if it refuses it, the whole
    // reload is refused and everything stays as it runs.
    const bool webChanged = next && (next->web->digest != web_->digest || next->web->file != web_->file);
    if (webChanged)
        if (auto used = server_.use(next->web); !used) next = failWith(used.error().withContext("web config"));
    if (!next) {
        const std::string why = next.error().message();
        // A broken file stays broken until it changes again: a change on disk says so once.
        if (!asked && why == refusedFingerprint_) return;
        refusedFingerprint_ = why;
        LOG_E("reload rejected, the running configuration stays: " + why);
        metrics_.recordReload(false, epochSeconds(), took());
        writeReloadStatus(false, why);
        watchConfigDirs();  // a file that now includes another directory's is watched there too
        return;
    }
    if (!asked && !webChanged && next->config.digest == cfg_.digest && next->profile.digest == profile_.digest &&
        next->profile.name == profile_.name) {
        // A touch, or a swap to the contents in force: nothing to do, but a broken version that
        // was refused before is gone from disk now.
        if (!refusedFingerprint_.empty()) {
            refusedFingerprint_.clear();
            LOG_N("the configuration on disk is the one in force again: profile " + profile_.name + " " + profile_.digest);
            metrics_.recordReload(true, epochSeconds(), took());
        }
        return;
    }
    refusedFingerprint_.clear();
    if (next->config.listen != cfg_.listen) LOG_W("listen address changes take effect at the next start");
    next->config.listen = cfg_.listen;
    if (next->config.stateDir != cfg_.stateDir || next->config.runDir != cfg_.runDir)
        LOG_W("state_dir/run_dir changes take effect at the next start");
    next->config.stateDir = cfg_.stateDir;
    next->config.runDir = cfg_.runDir;
    bpf_.reconfigure(cfg_, next->config);
    cfg_ = std::move(next->config);
    profile_ = std::move(next->profile);
    if (auto note = keepAvailableCandidates(profile_, nl_, fs_); !note.empty()) LOG_N("mode auto: " + note);
    if (webChanged) {
        LOG_N("scrape endpoint: " + describe(*next->web) + " from now on, on open connections too");
        for (const auto& w : next->web->warnings) LOG_W("web config: " + w);
    }
    web_ = std::move(next->web);
    if (profile_.steering.mode == SteeringMode::kAuto) auto_.setThresholds(profile_.steering.autoThresholds);
    else auto_.clear();  // no longer auto: the static plan decides
    sd_event_source_set_time_relative(driftSrc_, usec(cfg_.driftInterval));
    sd_event_source_set_time_relative(metricsSrc_, usec(cfg_.metricsInterval));
    sd_event_source_set_time_relative(autoSrc_, usec(autoPeriod()));
    LOG_N(std::string(asked ? "reloaded" : "reloaded (changed on disk)") + ": profile " + profile_.name + " " + profile_.digest);
    watchConfigDirs();
    reconcile(Why::kReload);
    refreshInterfaceMetrics();  // the selection may have changed with the config
    metrics_.recordReload(true, epochSeconds(), took());
    writeReloadStatus(true, "");
}

// <run-dir>/reload.json: the outcome of each reload, for `rxtune reload`, which waits for its
// token. Replaced whole (atomic rename), not fsynced: a view.
void Agent::writeReloadStatus(bool ok, const std::string& error) {
    nlohmann::json j;
    j["seq"] = ++reloadSeq_;
    j["token"] = reloadToken_;
    j["result"] = ok ? "success" : "failure";
    j["error"] = error;
    j["profile"] = profile_.name;
    j["digest"] = profile_.digest;
    j["at"] = epochSeconds();
    if (auto w = writeFileAtomic(cfg_.runDir + "/reload.json", j.dump() + "\n", false); !w)
        LOG_W("reload status: " + w.error().message());
    reloadToken_ = 0;  // answered: a later reload of a change on disk carries none
}

// The directories whose entries make up the configuration in force: the config file's, the
// profile's (as named and as resolved through symlinks), every included file's, and the profile
// search path (includes by name).
void Agent::watchConfigDirs() {
    if (!dirWatch_) return;
    namespace fs = std::filesystem;
    std::set<std::string> dirs;
    auto both = [&](const std::string& file) {
        std::error_code ec;
        const fs::path p = fs::absolute(file, ec);
        if (ec) return;
        dirs.insert(p.parent_path().string());
        const fs::path real = fs::weakly_canonical(p, ec);
        if (!ec) dirs.insert(real.parent_path().string());
    };
    both(sources_.configPath);
    for (const auto& f : web_->files) both(f);  // a Secret's ..data swap, a renewed certificate
    if (isProfilePath(cfg_.profile)) both(cfg_.profile);
    for (const auto& f : profile_.files) both(f);
    for (const auto& d : profileSearchPath()) dirs.insert(d);
    dirWatch_->watch(dirs);
}

// The netlink link cache, the uevent monitor and the event loop; "" or what failed.
std::string Agent::openSources() {
    auto links = LinkWatch::open();
    if (!links) return links.error().message();
    links_ = std::move(*links);
    reconciler_.setCandidates([this] {
        std::vector<std::string> names;
        for (const auto& e : links_->entries())
            if (reconciler_.concerns(e.name, [&] { return e.kind; })) names.push_back(e.name);
        return names;
    });
    auto uevents = openUeventMonitor();
    if (!uevents) return uevents.error().message();
    uevents_ = std::move(*uevents);
    if (int r = sd_event_new(&event_); r < 0) return std::string("sd_event_new: ") + std::strerror(-r);
    return "";
}

// Handlers: signals, timers and sockets mark work as due; the idle-priority post handler does it.
// Returns sd-event's negative errno, or >= 0.
int Agent::addHandlers() {
    auto onSignal = [](sd_event_source* s, const signalfd_siginfo* si, void* self) -> int {
        auto* a = static_cast<Agent*>(self);
        if (si->ssi_signo == SIGHUP) {
            a->reloadDue_ = true;
            a->reloadToken_ = si->ssi_code == SI_QUEUE ? si->ssi_int : 0;
        }
        else sd_event_exit(sd_event_source_get_event(s), 0);
        return 0;
    };
    driftTimer_ = {this, &Agent::driftDue_, [](const Agent& a) { return a.cfg_.driftInterval; }};
    metricsTimer_ = {this, &Agent::metricsDue_, [](const Agent& a) { return a.cfg_.metricsInterval; }};
    autoTimer_ = {this, &Agent::autoDue_, [](const Agent& a) { return a.autoPeriod(); }};
    auto onTimer = [](sd_event_source* s, std::uint64_t, void* p) -> int {
        auto* t = static_cast<Periodic*>(p);
        t->agent->*(t->due) = true;
        sd_event_source_set_time_relative(s, usec(t->period(*t->agent)));
        sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
    };
    auto onLinks = [](sd_event_source*, int, std::uint32_t, void* self) -> int {
        static_cast<Agent*>(self)->onLinkChanges();
        return 0;
    };
    auto onUevent = [](sd_event_source*, int, std::uint32_t, void* self) -> int {
        static_cast<Agent*>(self)->onUevents();
        return 0;
    };
    auto onPost = [](sd_event_source*, void* self) -> int {
        static_cast<Agent*>(self)->onIdle();
        return 0;
    };
    int rc = 0;
    for (int sig : {SIGTERM, SIGINT, SIGHUP})
        if (rc >= 0) rc = sd_event_add_signal(event_, nullptr, sig, onSignal, this);
    if (rc >= 0) rc = sd_event_add_time_relative(event_, &driftSrc_, CLOCK_MONOTONIC, usec(cfg_.driftInterval), 0, onTimer, &driftTimer_);
    if (rc >= 0) rc = sd_event_add_time_relative(event_, &metricsSrc_, CLOCK_MONOTONIC, usec(cfg_.metricsInterval), 0, onTimer, &metricsTimer_);
    // sd-event's default accuracy (0: 250 ms) would let a 250 ms clock tick every half second.
    if (rc >= 0) rc = sd_event_add_time_relative(event_, &autoSrc_, CLOCK_MONOTONIC, usec(autoPeriod()), 1000, onTimer, &autoTimer_);
    if (rc >= 0) rc = sd_event_add_io(event_, nullptr, links_->fd(), EPOLLIN, onLinks, this);
    if (rc >= 0) rc = sd_event_add_io(event_, nullptr, uevents_.get(), EPOLLIN, onUevent, this);
    if (rc >= 0) rc = addConfigWatch();
    if (rc >= 0) rc = sd_event_add_post(event_, &idleSrc_, onPost, this);
    if (rc >= 0) rc = sd_event_source_set_priority(idleSrc_, SD_EVENT_PRIORITY_IDLE);
    // WATCHDOG=1 at half the interval systemd set (WatchdogSec=), sent by the loop itself.
    if (rc >= 0) rc = sd_event_set_watchdog(event_, true);
    return rc;
}

// A change on disk: the watch's events start (or restart) a short timer, and the reload happens
// once it runs out, so that a burst of writes and renames is one reload.
int Agent::addConfigWatch() {
    auto onDebounce = [](sd_event_source*, std::uint64_t, void* self) -> int {
        static_cast<Agent*>(self)->changeDue_ = true;
        return 0;
    };
    auto onDirWatch = [](sd_event_source*, int, std::uint32_t, void* self) -> int {
        auto* a = static_cast<Agent*>(self);
        if (a->dirWatch_->drain()) {
            sd_event_source_set_time_relative(a->debounceSrc_, std::chrono::duration_cast<std::chrono::microseconds>(kReloadDebounce).count());
            sd_event_source_set_enabled(a->debounceSrc_, SD_EVENT_ONESHOT);
        }
        return 0;
    };
    if (auto w = DirWatch::open()) dirWatch_ = std::move(*w);
    else LOG_W("configuration changes on disk will not be noticed (SIGHUP or rxtune reload still work): " + w.error().message());
    int rc = sd_event_add_time_relative(event_, &debounceSrc_, CLOCK_MONOTONIC, 0, 0, onDebounce, this);
    if (rc >= 0) rc = sd_event_source_set_enabled(debounceSrc_, SD_EVENT_OFF);
    if (rc >= 0 && dirWatch_) rc = sd_event_add_io(event_, nullptr, dirWatch_->fd(), EPOLLIN, onDirWatch, this);
    return rc;
}

// The first run: the profile applied, the first sample, then READY=1.
void Agent::startServing() {
    bpf_.start(cfg_);
    watchConfigDirs();
    metrics_.recordStartConfig(epochSeconds());
    if (auto w = writeFileAtomic(cfg_.runDir + "/rxtune.pid", std::to_string(::getpid()) + "\n", false); !w)
        LOG_W("pid file: " + w.error().message());
    reconcile(Why::kStart);
    sample();
    sd_notify(0, ("READY=1\nSTATUS=keeping profile " + profile_.name + " applied").c_str());
    LOG_N("running: profile " + profile_.name + ", metrics on " + cfg_.listen);
}

// The loop is over (TERM/INT): revert or keep, as on_stop says. The exit status.
int Agent::stop() {
    sd_notify(0, "STOPPING=1");
    (void)removeFile(cfg_.runDir + "/rxtune.pid");
    if (!cfg_.revertOnStop) {
        LOG_N("stopped; settings kept (on_stop: keep)");
        return 0;
    }
    auto r = reconciler_.revert();
    if (!r) {
        LOG_E("revert on stop failed, journal kept: " + r.error().message());
        return 1;
    }
    LOG_N("stopped and reverted " + std::to_string(r->restored.size()) + " setting(s)");
    return 0;
}

int Agent::run() {
    if (auto e = openSources(); !e.empty()) {
        LOG_E("start: " + e);
        return 1;
    }
    if (int rc = addHandlers(); rc < 0) {
        LOG_E(std::string("start: sd-event: ") + std::strerror(-rc));
        return 1;
    }
    startServing();
    if (int r = sd_event_loop(event_); r < 0) {
        LOG_E(std::string("event loop: ") + std::strerror(-r));
        return 1;
    }
    return stop();
}

}  // namespace

int runDaemon(const std::string& configPath, bool configGiven, const std::string& webConfigFile) {
    const Sources sources{configPath, configGiven, webConfigFile};
    // Block the signals before any thread exists (the scrape server's): threads inherit the mask,
    // so TERM/INT/HUP reach only the event loop's signal sources.
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    // A handler that never runs (the signals stay blocked and are read from the signalfd): as PID 1
    // of a container, a signal whose disposition is the default is dropped by the kernel before it
    // could be queued, and `rxtune reload` / `podman stop` would go unheard.
    struct sigaction noop {};
    noop.sa_handler = [](int) {};
    sigemptyset(&noop.sa_mask);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &noop, nullptr);
    auto loaded = loadAll(sources);
    if (!loaded) {
        LOG_E(loaded.error().message());
        return 1;
    }
    checkCapabilities(loaded->config);
    // Scrape clients are connections: take the hard descriptor limit (systemd's LimitNOFILE) as ours.
    (void)raiseFileLimit();
    auto lock = StateLock::acquire(loaded->config.runDir);
    if (!lock) {
        LOG_E(lock.error().message());
        return 1;
    }
    Metrics metrics(RXTUNE_VERSION);
    // One thread serves scrapes (libmicrohttpd under our admission and deadlines): idle or slow
    // clients cannot hold it (web/web_server).
    WebServerOptions http;
    http.listen = loaded->config.listen;
    http.maxConnections = loaded->config.httpMaxConnections;
    http.requestTimeout = loaded->config.httpTimeout;
    std::array<prometheus::Counter*, std::size(kAuthResults)> authCounts{};
    for (AuthResult r : kAuthResults) authCounts[static_cast<std::size_t>(r)] = &metrics.webAuth(toString(r));
    http.onAuth = [authCounts](AuthResult r) { authCounts[static_cast<std::size_t>(r)]->Increment(); };
    // A wrong password now and then is a notice (a typo, a stale Secret); throttling is abuse.
    http.onRefusals = [](const std::string& line, bool throttled) {
        if (throttled) LOG_W(line);
        else LOG_N(line);
    };
    auto registry = metrics.registry();
    auto server = WebServer::start(http, loaded->web, [registry] { return prometheus::TextSerializer().Serialize(registry->Collect()); });
    if (!server) {
        LOG_E("cannot serve on " + loaded->config.listen + ": " + server.error().message());
        return 1;
    }
    LOG_N("scrape endpoint on " + loaded->config.listen + ": " + describe(*loaded->web));
    for (const auto& w : loaded->web->warnings) LOG_W("web config: " + w);
    FileTree fs("/");
    if (loaded->config.procSys != "/proc/sys") fs.redirect("proc/sys/", loaded->config.procSys);
    auto nl = Netlink::open();
    if (!nl) {
        LOG_E(nl.error().message());
        return 1;
    }
    Agent agent(std::move(*loaded), sources, **server, fs, **nl, metrics);
    return agent.run();
}

}  // namespace rxtune
