// Threaded NAPI (steering.mode: napi): the device's poll runs in kthreads (sysfs `threaded`,
// Linux 5.12+), which are pinned to the steering targets with sched_setaffinity. The kthreads
// are found by netdev napi-get (their pid) or by name in /proc (sys/napi_threads).
// Busy-poll (steering.mode: busypoll, Linux 6.19+): each RX NAPI's `threaded` set to busy-poll
// through napi-set, so that its kthread polls the ring without interrupts, and that kthread pinned
// to one CPU of its own (planner/planner.cpp chooses it); both keyed by the NAPI's role (rx-0),
// read and written on the NAPI that has the role now (knobs/napi_keys.hpp).
#include <algorithm>
#include <cmath>
#include <map>

#include "core/paths.hpp"
#include "inventory/snapshot.hpp"
#include "core/text.hpp"
#include "knobs/busypoll_profile.hpp"
#include "knobs/napi_keys.hpp"
#include "knobs/path_key.hpp"
#include "sys/napi_threads.hpp"
#include "knobs/registry.hpp"

namespace rxtune {

namespace {

// What readNapiState found of the device; nothing (no threaded file, no instance) where it was not read.
const NapiState& napiStateOfNapi(const Nic& n) {
    static const NapiState none;
    const NapiState* st = napiOf(n);
    return st ? *st : none;
}

constexpr std::string_view kThreaded = "threaded";
constexpr std::string_view kKthreads = "napi-kthreads";  // not a file: the kthreads' CPUs
constexpr std::string_view kKthread = "kthread";         // one NAPI's kthread's CPUs (napi/rx-0/kthread)
constexpr std::string_view kKthreadSeconds = "rxtune_napi_kthread_cpu_seconds";

KnobKey napiKey(const std::string& dev, std::string_view name) { return {"napi", dev, std::string(name)}; }
KnobKey perNapiKey(const std::string& dev, std::string_view name, const NapiRole& role) {
    return napiRoleKey("napi", dev, std::string(name), role);
}

std::string threadedName(std::uint32_t v) {
    return v == 0 ? "disabled" : v == 1 ? "enabled" : v == kNapiThreadedBusyPoll ? "busy-poll" : std::to_string(v);
}

// Each NAPI's role (core/nic.hpp), by NAPI id.
std::map<unsigned, NapiRole> rolesOf(const NapiState& st) {
    std::map<unsigned, NapiRole> out;
    for (const auto& [role, n] : napiRoles(st.instances, st.queues.value_or(std::vector<NapiQueue>{}))) out[n->id] = role;
    return out;
}

}  // namespace

// The CPUs of a device's NAPI kthreads as one value: the mask they share, or each one's mask in
// NAPI id order where they differ; "" when there is none (threaded off, or no NAPI).
std::string kthreadsValue(const std::vector<NapiInfo>& napis) {
    std::vector<std::string> masks;
    for (const auto& n : napis)
        if (n.pid > 0 && n.affinity) masks.push_back(n.affinity->toMask());
    if (masks.empty()) return "";
    bool same = true;
    for (const auto& m : masks) same = same && m == masks.front();
    if (same) return masks.front();
    std::string out;
    for (const auto& m : masks) out += (out.empty() ? "" : " ") + m;
    return out;
}

namespace {

class NapiFamily final : public KnobFamily {
public:
    std::string_view name() const override { return "napi"; }

    // Each NAPI kthread's CPU time, beside the NET_RX softirq time of the CPUs it runs on
    // (rxtune_softirq_net_rx_seconds_total{cpu}): a busy-poll kthread shows its CPU spent whole.
    std::vector<CounterSpec> gauges() const override {
        return {{std::string(kKthreadSeconds),
                 "CPU time the NAPI's kthread has run since it started (utime + stime, /proc/PID/stat); labels: its role, "
                 "threaded (enabled, busy-poll) and CPUs"}};
    }
    void exportSnapshot(const HostSnapshot& snap, GaugeSink& g) const override {
        for (const auto& n : snap.nics) {
            const NapiState* st = napiOf(n);
            if (!st) continue;
            const auto roles = rolesOf(*st);
            for (const auto& i : st->instances) {
                if (i.pid <= 0 || !i.cpuSeconds) continue;
                const auto role = roles.find(i.id);
                const std::string napi = i.id != 0 && role != roles.end() ? role->second.str() : "kthread-" + std::to_string(i.pid);
                // A kthread runs: threaded is on, busy-poll where napi-get says so.
                const std::string threaded = i.threaded ? threadedName(*i.threaded) : "enabled";
                g.set(std::string(kKthreadSeconds),
                      {{"interface", n.name}, {"napi", napi}, {"threaded", threaded}, {"cpus", i.affinity ? i.affinity->toList() : ""}},
                      *i.cpuSeconds);
            }
        }
    }
    std::string id(const KnobKey& k) const override {
        if (auto role = napiRoleOf(k)) return k.device + " napi " + role->str() + " " + k.name;
        return k.device + (k.name == kThreaded ? " threaded" : " napi kthreads");
    }
    std::string path(const KnobKey& k) const override {
        auto role = napiRoleOf(k);
        return paths::netDevFile(k.device, role ? napiKnobFile(*role, k.name) : k.name);
    }
    std::string settingLabel(const KnobKey& k) const override {
        if (auto role = napiRoleOf(k)) return (k.name == kThreaded ? "threaded " : "napi_kthread ") + role->str();
        return k.name == kThreaded ? "threaded" : "napi_kthreads";
    }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view) const override {
        auto dev = pathkey::netDevice(p);
        if (!dev) return std::nullopt;
        if (auto perNapi = parseNapiKnobFile(dev->second)) {
            if (perNapi->second != kThreaded && perNapi->second != kKthread) return std::nullopt;
            return perNapiKey(dev->first, perNapi->second, perNapi->first);
        }
        if (dev->second != kThreaded && dev->second != kKthreads) return std::nullopt;
        return napiKey(dev->first, dev->second);
    }

    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        if (!runsNapiKthreads(profile.steering)) return {};
        for (auto& n : snap.nics)
            if (auto r = readNapiState(io.fs, io.nl, n); !r) return failWith(r.error());
        if (choosesPollCpu(profile)) return readPinned(io, snap);
        return {};
    }

    Result<void> readDetect(const SnapshotIo& io, HostSnapshot& snap) const override {
        for (auto& n : snap.nics)
            if (auto r = readNapiState(io.fs, io.nl, n); !r) return failWith(r.error());
        return readPinned(io, snap);
    }
    // Where busy-poll would keep its poll off: the applications' threads pinned to a CPU they keep busy.
    void detectHostJson(const HostSnapshot& snap, nlohmann::ordered_json& host) const override {
        const PinnedBusyThreads* pinned = snap.fact(kPinnedBusyThreads);
        if (!pinned) return;
        auto list = nlohmann::ordered_json::array();
        for (const auto& t : *pinned)
            list.push_back({{"cpu", t.cpu}, {"pid", t.pid}, {"tid", t.tid}, {"comm", t.comm}, {"share", std::round(t.share * 100) / 100}});
        host["pinned_busy_threads"] = std::move(list);
    }
    void detectHostText(const HostSnapshot& snap, std::ostream& out) const override {
        const PinnedBusyThreads* pinned = snap.fact(kPinnedBusyThreads);
        if (!pinned || pinned->empty()) return;
        out << "  pinned busy threads (busy-poll keeps its poll off their CPUs):";
        for (const auto& t : *pinned) out << " CPU " << t.cpu << ": " << t.comm << " (tid " << t.tid << ", " << std::lround(t.share * 100) << " %)";
        out << "\n";
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        if (d.mode == SteeringMode::kBusyPoll) return planBusyPoll(d, p);
        if (d.mode != SteeringMode::kNapi) return {};
        const Nic& nic = d.nic;
        const NapiState& napi = napiStateOfNapi(nic);
        if (!napi.threaded) {
            p.skipped.push_back({nic.name + " steering", "mode napi: the kernel shows no " + nic.name +
                                                             "/threaded (threaded NAPI needs Linux 5.12+)"});
            return {};
        }
        if (napi.source == "netdev-genl" && napi.instances.empty() && !napi.unlisted) {
            const bool tun = nic.kind == "tap" || nic.kind == "tun";
            p.skipped.push_back({nic.name + " steering", "mode napi: " + nic.name + " has no NAPI instance now (" +
                                                             (tun ? "a TAP/TUN has one only when the program that opens it asks for "
                                                                    "IFF_NAPI (tun_flags 0x10)"
                                                                  : "veth has one only with GRO or XDP on: ethtool -K " + nic.name +
                                                                        " gro on") +
                                                             ")"});
            return {};
        }
        // A kthread polls a whole queue: one core's work, so the biggest of the targets (big and
        // little cores); the rest of the stack's work follows the flows to the application's CPUs.
        const CpuSet kthreadCpus = biggestOf(in.snap.host, d.targets);
        std::string why = "threaded NAPI: the poll runs in its kthread(s), pinned to CPUs " + kthreadCpus.toList() + d.notes;
        if (kthreadCpus != d.targets)
            why += "; the biggest cores of " + d.targets.toList() + " (" + describeCapacity(in.snap.host, kthreadCpus.cpus().front()) +
                   "): a kthread polls a whole queue, one core's work";
        // veth hands a frame to its NAPI only where GRO may take it (veth_skb_is_eligible_for_gro):
        // with TSO on the peer (the default), only with rx-udp-gro-forwarding or rx-gro-list on
        // here; other frames go to the sender's backlog and the kthread gets none of them.
        if (nic.kind == "veth")
            why += "; veth: frames take the NAPI path only with GRO and rx-udp-gro-forwarding (or rx-gro-list) on " + nic.name +
                   ", or TSO off on its peer; the others stay on the sender's CPU";
        p.settings.push_back(makeSetting(*this, napiKey(nic.name, kThreaded), ValueKind::kInteger, trimmed(*napi.threaded), "1", why,
                                         *napi.threaded));
        p.settings.push_back(makeSetting(*this, napiKey(nic.name, kKthreads), ValueKind::kCpuMask, kthreadsValue(napi.instances),
                                         kthreadCpus.toMask(), why));
        return {};
    }

    void detectJson(const Nic& n, nlohmann::ordered_json& j) const override {
        const NapiState* st = napiOf(n);
        if (!st) return;
        nlohmann::ordered_json o;
        o["threaded"] = st->threaded ? nlohmann::ordered_json(trimmed(*st->threaded)) : nlohmann::ordered_json(nullptr);
        o["source"] = st->source;
        if (st->unlisted) o["unlisted"] = true;  // IFF_NAPI on a TAP/TUN: napi-get lists none
        const NapiFeatures& f = st->features;
        o["napi_set"] = {{"available", f.napiSet},
                         {"defer_hard_irqs", f.deferHardIrqs},
                         {"gro_flush_timeout", f.groFlushTimeout},
                         {"irq_suspend_timeout", f.irqSuspendTimeout},
                         {"threaded", f.threaded},
                         {"threaded_max", f.threadedMax},
                         {"busy_poll", f.busyPoll()}};
        const auto roles = rolesOf(*st);
        auto list = nlohmann::ordered_json::array();
        for (const auto& i : st->instances) {
            nlohmann::ordered_json e = {{"id", i.id}};
            const auto role = roles.find(i.id);
            e["role"] = i.id != 0 && role != roles.end() ? nlohmann::ordered_json(role->second.str()) : nlohmann::ordered_json(nullptr);
            // napi-set names a NAPI by id: one found only by its kthread's name has none.
            e["per_napi_settings"] = f.napiSet && i.id != 0;
            e["busy_poll"] = f.busyPoll() && i.id != 0;
            e["irq"] = i.irq >= 0 ? nlohmann::ordered_json(i.irq) : nlohmann::ordered_json(nullptr);
            e["pid"] = i.pid > 0 ? nlohmann::ordered_json(i.pid) : nlohmann::ordered_json(nullptr);
            e["cpus"] = i.affinity ? nlohmann::ordered_json(i.affinity->toList()) : nlohmann::ordered_json(nullptr);
            e["defer_hard_irqs"] = i.deferHardIrqs ? nlohmann::ordered_json(*i.deferHardIrqs) : nlohmann::ordered_json(nullptr);
            e["gro_flush_timeout"] = i.groFlushTimeout ? nlohmann::ordered_json(*i.groFlushTimeout) : nlohmann::ordered_json(nullptr);
            e["irq_suspend_timeout"] = i.irqSuspendTimeout ? nlohmann::ordered_json(*i.irqSuspendTimeout) : nlohmann::ordered_json(nullptr);
            e["threaded"] = i.threaded ? nlohmann::ordered_json(threadedName(*i.threaded)) : nlohmann::ordered_json(nullptr);
            list.push_back(std::move(e));
        }
        o["instances"] = std::move(list);
        j["napi"] = std::move(o);
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        const NapiState* st = napiOf(n);
        if (!st) return;
        out << "    napi threaded " << (st->threaded ? trimmed(*st->threaded) : std::string("(absent)")) << ", "
            << st->instances.size() << " instance(s)" << (st->source.empty() ? "" : " (" + st->source + ")")
            << (st->unlisted ? ", and IFF_NAPI NAPI that napi-get does not list" : "") << "\n";
        const NapiFeatures& f = st->features;
        if (!f.napiSet) {
            out << "      napi-set: not on this kernel (per-NAPI settings need Linux 6.13+); busy-poll: no\n";
        } else {
            std::string takes;
            for (auto [has, what] : {std::pair{f.deferHardIrqs, "defer-hard-irqs"}, std::pair{f.groFlushTimeout, "gro-flush-timeout"},
                                     std::pair{f.irqSuspendTimeout, "irq-suspend-timeout"}, std::pair{f.threaded, "threaded"}})
                if (has) takes += (takes.empty() ? "" : ", ") + std::string(what);
            out << "      napi-set takes " << (takes.empty() ? std::string("nothing rxtune sets") : takes) << "; busy-poll: "
                << (f.busyPoll() ? std::string("yes") : "no (the kernel's threaded goes to " + std::to_string(f.threadedMax) +
                                                           "; busy-poll, 2, needs Linux 6.19+)")
                << "\n";
        }
        const auto roles = rolesOf(*st);
        for (const auto& i : st->instances) {
            out << "      napi " << i.id;
            if (auto r = roles.find(i.id); i.id != 0 && r != roles.end()) out << " (" << r->second.str() << ")";
            if (i.irq >= 0) out << " irq " << i.irq;
            if (i.pid > 0) out << " kthread " << i.pid << " on CPUs " << (i.affinity ? i.affinity->toList() : std::string("?"));
            if (i.deferHardIrqs) out << " defer_hard_irqs " << *i.deferHardIrqs;
            if (i.groFlushTimeout) out << " gro_flush_timeout " << *i.groFlushTimeout;
            if (i.irqSuspendTimeout) out << " irq_suspend_timeout " << *i.irqSuspendTimeout;
            if (i.threaded) out << " threaded " << threadedName(*i.threaded);
            out << "\n";
        }
    }

    bool fileBacked(const KnobKey& k) const override { return k.name == kThreaded && !napiRoleOf(k); }
    Result<std::string> read(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        if (auto role = napiRoleOf(k)) return readPerNapi(io, k, *role);
        if (k.name == kThreaded) return io.fs.read(path);
        if (!io.services.get<NapiThreads>()) return fail(ENOTSUP, "napi", k.device, "NAPI kthreads cannot be reached here");
        auto threads = io.services.get<NapiThreads>()->of(k.device);
        if (!threads) return failWith(threads.error());
        return kthreadsValue(*threads);
    }
    Result<void> write(const KnobIo& io, const KnobKey& k, const std::string& path, const std::string& value) const override {
        if (auto role = napiRoleOf(k)) return writePerNapi(io, k, *role, value);
        if (k.name == kThreaded) return io.fs.write(path, value);
        // "": there were none; they go away with `threaded` (written back before or after this).
        if (trimmed(value).empty()) return {};
        if (!io.services.get<NapiThreads>()) return fail(ENOTSUP, "napi", k.device, "NAPI kthreads cannot be reached here");
        std::vector<CpuSet> masks;
        for (const auto& f : splitFields(value)) {
            auto m = CpuSet::parseMask(f);
            if (!m) return failWith(m.error().withContext(id(k)));
            masks.push_back(*m);
        }
        auto threads = io.services.get<NapiThreads>()->of(k.device);
        if (!threads) return failWith(threads.error());
        if (threads->empty()) return fail(ENOENT, "napi", where(io, k, path), "no NAPI kthread (threaded is off, or the device has no NAPI)");
        for (size_t i = 0; i < threads->size(); ++i)
            if (auto r = io.services.get<NapiThreads>()->setAffinity((*threads)[i].pid, masks[std::min(i, masks.size() - 1)]); !r)
                return failWith(r.error().withContext(id(k)));
        return {};
    }
    bool exists(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        return k.name == kThreaded && !napiRoleOf(k) ? io.fs.exists(path) : io.fs.exists(paths::netDev(k.device));
    }
    bool writable(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        return k.name == kThreaded && !napiRoleOf(k) ? io.fs.writable(path) : true;
    }
    std::string where(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        if (auto role = napiRoleOf(k))
            return k.name == kThreaded ? "netdev napi-set of " + k.device + " NAPI " + role->str()
                                       : "the kthread of " + k.device + " NAPI " + role->str();
        return k.name == kThreaded ? io.fs.full(path) : "NAPI kthreads of " + k.device;
    }
    // Putting back "no kthreads" is done by `threaded`: there is nothing to read back.
    bool writeIsExact(const KnobKey& k, ValueKind, const std::string& value, const Plan*) const override {
        return (k.name == kKthreads || k.name == kKthread) && trimmed(value).empty();
    }

    std::optional<SteeringView> steeringOf(const Setting& s) const override {
        if (s.key.name != kKthreads && s.key.name != kKthread) return std::nullopt;
        if (auto role = napiRoleOf(s.key); role && role->kind == NapiRole::kTx) return std::nullopt;  // busypoll.tx: not steering
        auto m = CpuSet::parseMask(s.desired);
        if (!m || m->empty()) return std::nullopt;
        // The device's kthreads yield: under busypoll with tx threaded they are pinned beside the poll.
        return SteeringView{s.key.name == kKthread ? "busypoll" : "napi", *m, s.key.name == kKthreads};
    }

private:
    static Result<void> readPinned(const SnapshotIo& io, HostSnapshot& snap) {
        auto pinned = readPinnedBusyThreads(io.fs);
        if (!pinned) return failWith(pinned.error());
        snap.facts.set(kPinnedBusyThreads, std::move(*pinned));
        return {};
    }

    // Each RX NAPI's threaded to busy-poll, then its kthread (which that creates) to its CPU; with
    // steering.busypoll.tx threaded, each TX-only NAPI threaded (1) and its kthread on its poll CPU.
    Result<void> planBusyPoll(const DeviceSteering& d, Plan& p) const {
        const Nic& nic = d.nic;
        const NapiState& st = napiStateOfNapi(nic);
        std::map<NapiRole, const NapiInfo*> byRole;
        for (const auto& [role, n] : napiRoles(st.instances, st.queues.value_or(std::vector<NapiQueue>{}))) byRole[role] = n;
        if (d.txByDevice && st.threaded && !d.pollers.empty()) {
            // First: the device's threaded (1) would set rx-0's too, back from busy-poll.
            const unsigned cpu = d.pollers.front().second;
            const std::string why = "steering.busypoll.tx threaded: " + nic.name + "'s TX NAPI has no id (napi-set cannot name it), so " +
                                    "the device's threaded file starts every NAPI's kthread, and they go to the poll CPU " +
                                    std::to_string(cpu) + " before rx-0 goes to busy-poll" + d.notes;
            p.settings.push_back(makeSetting(*this, napiKey(nic.name, kThreaded), ValueKind::kInteger, trimmed(*st.threaded), "1", why,
                                             *st.threaded));
            p.settings.push_back(makeSetting(*this, napiKey(nic.name, kKthreads), ValueKind::kCpuMask, kthreadsValue(st.instances),
                                             CpuSet::of({cpu}).toMask(), why));
        }
        for (const auto& [role, cpu] : d.pollers) {
            const auto it = byRole.find(role);
            if (it == byRole.end()) continue;  // the planner found it in the same snapshot
            const NapiInfo& n = *it->second;
            const KnobKey threaded = perNapiKey(nic.name, kThreaded, role);
            if (!n.threaded) {
                p.skipped.push_back({id(threaded), "napi-get shows no threaded for NAPI " + std::to_string(n.id)});
                continue;
            }
            const std::string why = "busy-poll: NAPI " + std::to_string(n.id) + " (" + role.str() + ")'s kthread polls the ring on CPU " +
                                    std::to_string(cpu) + " with its interrupt left off, and takes that CPU whole: keep the " +
                                    "applications' threads off it" + (d.fanout.empty() ? std::string() : "; RPS fans out to CPUs " + d.fanout.toList()) +
                                    d.notes;
            p.settings.push_back(makeSetting(*this, threaded, ValueKind::kInteger, std::to_string(*n.threaded),
                                             std::to_string(kNapiThreadedBusyPoll), why));
            const std::string cur = n.pid > 0 && n.affinity ? n.affinity->toMask() : "";
            p.settings.push_back(makeSetting(*this, perNapiKey(nic.name, kKthread, role), ValueKind::kCpuMask, cur,
                                             CpuSet::of({cpu}).toMask(), why));
        }
        for (const auto& [role, cpu] : d.txThreads) {
            const auto it = byRole.find(role);
            if (it == byRole.end()) continue;
            const NapiInfo& n = *it->second;
            const KnobKey threaded = perNapiKey(nic.name, kThreaded, role);
            if (!n.threaded) {
                p.skipped.push_back({id(threaded), "napi-get shows no threaded for NAPI " + std::to_string(n.id)});
                continue;
            }
            const std::string why = "steering.busypoll.tx threaded: NAPI " + std::to_string(n.id) + " (" + role.str() +
                                    ")'s TX completions in its kthread on the poll CPU " + std::to_string(cpu) + d.notes;
            p.settings.push_back(makeSetting(*this, threaded, ValueKind::kInteger, std::to_string(*n.threaded), "1", why));
            const std::string cur = n.pid > 0 && n.affinity ? n.affinity->toMask() : "";
            p.settings.push_back(makeSetting(*this, perNapiKey(nic.name, kKthread, role), ValueKind::kCpuMask, cur,
                                             CpuSet::of({cpu}).toMask(), why));
        }
        return {};
    }

    Result<std::string> readPerNapi(const KnobIo& io, const KnobKey& k, const NapiRole& role) const {
        auto* nl = io.services.get<NetlinkSource>();
        if (!nl) return fail(ENOTSUP, "netdev NAPI_GET", id(k), "no netlink here");
        auto live = liveNapi(*nl, k.device, role);
        if (!live) return failWith(live.error().withContext(id(k)));
        if (k.name == kThreaded) {
            if (!live->threaded) return fail(EOPNOTSUPP, "netdev NAPI_GET", id(k), "napi-get shows no threaded");
            return std::to_string(*live->threaded);
        }
        if (live->pid <= 0) return std::string();  // threaded off: no kthread
        auto cpus = readTaskAffinity(io.fs, live->pid);
        if (!cpus) return failWith(cpus.error().withContext(id(k)));
        return cpus->toMask();
    }

    Result<void> writePerNapi(const KnobIo& io, const KnobKey& k, const NapiRole& role, const std::string& value) const {
        auto* nl = io.services.get<NetlinkSource>();
        if (!nl) return fail(ENOTSUP, "netdev NAPI_SET", id(k), "no netlink here");
        if (k.name == kKthread && trimmed(value).empty()) return {};  // none before: threaded's own value ends it
        auto live = liveNapi(*nl, k.device, role);
        if (!live) return failWith(live.error().withContext(id(k)));
        if (k.name == kThreaded) {
            std::uint32_t v = 0;
            if (!parseUnsigned(trimmed(value), v)) return fail(EINVAL, "netdev NAPI_SET", id(k), "not a number: " + value);
            NapiSettings s;
            s.threaded = v;
            if (auto r = nl->napiSet(live->id, s); !r) return failWith(r.error().withContext(id(k)));
            return {};
        }
        auto mask = CpuSet::parseMask(value);
        if (!mask) return failWith(mask.error().withContext(id(k)));
        if (live->pid <= 0)
            return fail(ENOENT, "napi", id(k), "NAPI " + std::to_string(live->id) + " has no kthread (its threaded is off)");
        auto* threads = io.services.get<NapiThreads>();
        if (!threads) return fail(ENOTSUP, "napi", k.device, "NAPI kthreads cannot be reached here");
        if (auto r = threads->setAffinity(live->pid, *mask); !r) return failWith(r.error().withContext(id(k)));
        return {};
    }
};

const NapiFamily kNapiFamily;
const FamilyRegistration kNapiRegistered{kNapiFamily, 220};

}  // namespace

}  // namespace rxtune
