#include "cli/status.hpp"

#include "sys/files.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "cli/backends.hpp"
#include "core/cpuset.hpp"
#include "inventory/snapshot.hpp"
#include "knobs/registry.hpp"
#include "inventory/softnet.hpp"
#include "state/journal.hpp"
#include "sys/file_tree.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

namespace {

// A CPU counts as hot from this NET_RX (or softirq) share up.
constexpr double kHotShare = 0.10;

std::string bar(double share, unsigned width) {
    const auto n = static_cast<unsigned>(std::clamp(share, 0.0, 1.0) * width + 0.5);
    return "[" + std::string(n, '#') + std::string(width - n, '.') + "]";
}

std::string pct(double share) {
    char b[8];
    std::snprintf(b, sizeof b, "%3.0f%%", std::clamp(share, 0.0, 1.0) * 100);
    return b;
}

std::string num(double v, int width) {
    char b[32];
    std::snprintf(b, sizeof b, "%*.0f", width, v);
    return b;
}

std::string fit(std::string s, std::size_t width) {
    if (s.size() > width) s = s.substr(0, width > 3 ? width - 3 : width) + (width > 3 ? "..." : "");
    return s;
}

std::string pad(std::string s, std::size_t width) {
    s = fit(std::move(s), width);
    return s + std::string(width - s.size(), ' ');
}

}  // namespace

StatusSample makeStatus(const StatusRaw& a, const StatusRaw& b, const StatusInputs& in) {
    StatusSample s;
    s.interval = std::max(1e-3, b.at - a.at);
    s.profile = in.profile;
    s.appliedAt = in.appliedAt;
    s.drifted = in.drifted;
    std::map<unsigned, double> bpf;
    if (in.daemon) {
        s.daemonPid = in.daemon->value("pid", 0L);
        if (auto it = in.daemon->find("bpf_net_rx_share"); it != in.daemon->end() && it->is_object())
            for (const auto& [cpu, share] : it->items())
                if (share.is_number()) bpf[static_cast<unsigned>(std::stoul(cpu))] = share.get<double>();
    }
    double hottest = 0;
    for (const auto& [cpu, j] : b.cpu) {
        auto p = a.cpu.find(cpu);
        if (p == a.cpu.end() || j.total <= p->second.total) continue;
        const double total = static_cast<double>(j.total - p->second.total);
        CpuStatus c;
        c.cpu = cpu;
        c.busy = static_cast<double>(j.busy - std::min(j.busy, p->second.busy)) / total;
        c.softirq = static_cast<double>(j.softirq - std::min(j.softirq, p->second.softirq)) / total;
        if (auto it = bpf.find(cpu); it != bpf.end()) c.netRx = it->second;
        if (auto it = in.classes.find(cpu); it != in.classes.end()) std::tie(c.cpuClass, c.capacity) = it->second;
        auto na = a.softnet.find(cpu), nb = b.softnet.find(cpu);
        if (na != a.softnet.end() && nb != b.softnet.end()) {
            // 32-bit kernel counters: the difference modulo 2^32 is right across a wrap.
            c.packets = static_cast<std::uint32_t>(nb->second.processed - na->second.processed) / s.interval;
            c.drops = static_cast<std::uint32_t>(nb->second.dropped - na->second.dropped) / s.interval;
            c.squeezes = static_cast<std::uint32_t>(nb->second.timeSqueeze - na->second.timeSqueeze) / s.interval;
        }
        const double work = c.netRx.value_or(c.softirq);
        if (work >= kHotShare && work > hottest) {
            hottest = work;
            s.hot = cpu;
        }
        s.cpus.push_back(c);
    }
    std::map<std::string, IfaceStatus> ifaces;
    for (const auto& [name, how] : in.steered) ifaces[name] = {name, how.first, "", how.second, "", 0, ""};
    if (in.daemon)
        if (auto it = in.daemon->find("interfaces"); it != in.daemon->end() && it->is_object())
            for (const auto& [name, d] : it->items()) {
                IfaceStatus& i = ifaces[name];
                i.name = name;
                if (i.mode.empty()) i.mode = "none";
                if (!d.is_object()) continue;
                i.autoState = d.value("auto_state", "");
                if (d.contains("mode") && i.autoState != "off" && !i.autoState.empty()) i.mode = d.value("mode", i.mode);
                if (d.contains("targets") && !d.value("targets", "").empty()) i.targets = d.value("targets", "");
                if (auto order = d.find("trial_order"); order != d.end() && order->is_array()) {
                    std::string run, skipped;
                    for (const auto& t : *order) {
                        if (!t.is_object()) continue;
                        const std::string name = t.value("trial", "?");
                        if (t.contains("skipped")) {
                            skipped += (skipped.empty() ? "" : ", ") + name;
                            continue;
                        }
                        char b[96];
                        std::snprintf(b, sizeof b, " %.2fx predicted", t.value("predicted_ratio", 0.0));
                        std::string one = name + b;
                        if (t.contains("measured_ratio")) {
                            std::snprintf(b, sizeof b, ", %.2fx measured", t.value("measured_ratio", 0.0));
                            one += b;
                        }
                        run += (run.empty() ? "" : "; ") + one;
                    }
                    i.trials = run + (skipped.empty() ? "" : (run.empty() ? "" : "; ") + std::string("skipped: ") + skipped);
                }
                if (auto ld = d.find("last_decision"); ld != d.end())
                    i.decision = ld->value("decision", "") + " (" + ld->value("reason", "") + "): " + ld->value("detail", "");
            }
    for (auto& [name, i] : ifaces) {
        auto pa = a.rxPackets.find(name), pb = b.rxPackets.find(name);
        if (pa != a.rxPackets.end() && pb != b.rxPackets.end() && pb->second >= pa->second)
            i.rxPps = static_cast<double>(pb->second - pa->second) / s.interval;
        s.ifaces.push_back(i);
    }
    return s;
}

std::string renderStatus(const StatusSample& s, unsigned width) {
    std::ostringstream o;
    auto line = [&](const std::string& l) { o << fit(l, width) << "\n"; };
    char head[64];
    std::snprintf(head, sizeof head, "rxtune status: %zu CPUs, over %.1f s", s.cpus.size(), s.interval);
    line(std::string(head) + (s.daemonPid ? ", daemon pid " + std::to_string(*s.daemonPid) : ", no daemon"));
    if (s.profile.empty()) line("profile: none applied (no journal)");
    else
        line("profile: " + s.profile + ", applied " + s.appliedAt + ", " +
             (!s.drifted ? std::string("journal unreadable") : *s.drifted == 0 ? "in sync" : std::to_string(*s.drifted) + " setting(s) drifted"));
    const bool bpf = std::any_of(s.cpus.begin(), s.cpus.end(), [](const CpuStatus& c) { return c.netRx.has_value(); });
    line("");
    // Big and little cores: each CPU's class beside it, and a hot one read against what it can do.
    const bool classes = std::any_of(s.cpus.begin(), s.cpus.end(), [](const CpuStatus& c) { return !c.cpuClass.empty(); });
    line(std::string("CPU  ") + (classes ? "class  " : "") + "busy              " + (bpf ? "NET_RX (BPF)      " : "softirq (all)     ") +
         "  pkts/s  drop/s sqz/s");
    for (const auto& c : s.cpus) {
        const double work = c.netRx.value_or(c.softirq);
        char cpu[8];
        std::snprintf(cpu, sizeof cpu, "%3u  ", c.cpu);
        std::string hot;
        if (s.hot && *s.hot == c.cpu)
            hot = "  <- hot" + (c.cpuClass.empty() || c.cpuClass == "big" ? std::string() : " (a " + c.cpuClass + " core: " + c.capacity + ")");
        line(std::string(cpu) + (classes ? pad(c.cpuClass, 6) + " " : "") + bar(c.busy, 12) + pct(c.busy) + " " + bar(work, 12) + pct(work) +
             " " + num(c.packets, 8) + num(c.drops, 8) + num(c.squeezes, 6) + hot);
    }
    line("");
    if (s.ifaces.empty()) {
        line("no interface steered by rxtune");
    } else {
        line("IFACE           MODE  AUTO     TARGETS    rx pkts/s  LAST DECISION");
        for (const auto& i : s.ifaces) {
            const std::string row = pad(i.name, 15) + " " + pad(i.mode, 5) + " " + pad(i.autoState.empty() ? "-" : i.autoState, 8) + " " +
                                    pad(i.targets.empty() ? "-" : i.targets, 9) + num(i.rxPps, 11) + "  ";
            line(row + (i.decision.empty() ? "-" : fit(i.decision, width > row.size() ? width - row.size() : 0)));
            if (!i.trials.empty()) line("                trials: " + i.trials);
        }
    }
    return o.str();
}

nlohmann::json statusJson(const StatusSample& s) {
    nlohmann::json j;
    j["interval_s"] = s.interval;
    j["cpus"] = nlohmann::json::array();
    for (const auto& c : s.cpus) {
        nlohmann::json x{{"cpu", c.cpu}, {"busy", c.busy}, {"softirq", c.softirq}, {"packets_per_s", c.packets},
                         {"drops_per_s", c.drops}, {"squeezes_per_s", c.squeezes}};
        if (c.netRx) x["net_rx_bpf"] = *c.netRx;
        x["class"] = c.cpuClass.empty() ? nlohmann::json() : nlohmann::json(c.cpuClass);
        x["capacity"] = c.capacity.empty() ? nlohmann::json() : nlohmann::json(c.capacity);
        j["cpus"].push_back(x);
    }
    j["hot_cpu"] = s.hot ? nlohmann::json(*s.hot) : nlohmann::json();
    j["interfaces"] = nlohmann::json::array();
    for (const auto& i : s.ifaces)
        j["interfaces"].push_back({{"name", i.name}, {"mode", i.mode}, {"auto_state", i.autoState}, {"targets", i.targets},
                                   {"rx_packets_per_s", i.rxPps}, {"last_decision", i.decision}, {"trials", i.trials}});
    j["profile"] = s.profile.empty() ? nlohmann::json() : nlohmann::json(s.profile);
    j["applied_at"] = s.appliedAt;
    j["in_sync"] = s.drifted ? nlohmann::json(*s.drifted == 0) : nlohmann::json();
    j["drifted"] = s.drifted ? nlohmann::json(*s.drifted) : nlohmann::json();
    j["daemon_pid"] = s.daemonPid ? nlohmann::json(*s.daemonPid) : nlohmann::json();
    return j;
}

namespace {

Result<StatusRaw> readRaw(const FileTree& fs, NetlinkSource& nl, const std::vector<unsigned>& online,
                          const std::vector<std::string>& ifaces) {
    StatusRaw r;
    r.at = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    auto cpus = readProcStat(fs);
    if (!cpus) return failWith(cpus.error());
    r.cpu = std::move(*cpus);
    auto rows = readSoftnetStat(fs, online);
    if (!rows) return failWith(rows.error());
    r.softnet = std::move(*rows);
    for (const auto& name : ifaces)
        if (auto l = nl.link(name); l && *l) r.rxPackets[name] = (*l)->stats.rxPackets;
    return r;
}

// The journal's picture: profile, when, drift, and each steered interface's mode and targets.
StatusInputs readInputs(FileTree& fs, const StatusOptions& o) {
    StatusInputs in;
    JournalStore store(o.stateDir);
    if (auto j = store.load(); j && *j) {
        in.profile = (*j)->profile;
        in.appliedAt = (*j)->appliedAt;
        // A journal this build cannot read the keys of: said once, its drift and steering unknown.
        if (auto keys = recoverKeys(**j); !keys) {
            std::cerr << "rxtune: warning: " << keys.error().message() << "\n";
            return in;
        }
        KnobBackends backends(fs, o.bpfDir);
        const Knobs knobs = backends.knobs(fs);
        if (auto d = verifyApplied(**j, knobs)) in.drifted = d->size();
        // Each steered device's mode and targets, as the families of its settings show them; a
        // view that yields (RPS masks beside XDP or NAPI steering) gives way to another.
        std::map<std::string, KnobFamily::SteeringView> seen;
        for (const auto& s : (*j)->applied) {
            if (s.key.device.empty()) continue;
            auto& [mode, targets] = in.steered[s.key.device];
            if (mode.empty()) mode = "none";
            auto view = familyOf(s.key).steeringOf(s);
            if (!view) continue;
            auto& v = seen[s.key.device];
            if (v.mode.empty() || v.mode == view->mode) {
                v.mode = view->mode;
                v.cpus = v.cpus | view->cpus;
            } else if (v.yields) {
                v = *view;
            }
        }
        for (const auto& [dev, v] : seen) in.steered[dev] = {v.mode, v.cpus.toList()};
    }
    // The daemon's view, if one runs: its status file names a live process.
    if (auto f = readFileBounded(o.runDir + "/status.json", 1 << 20); f && !f->empty()) {
        try {
            auto j = nlohmann::json::parse(*f);
            const long pid = j.value("pid", 0L);
            if (pid > 0 && fs.exists("proc/" + std::to_string(pid))) in.daemon = std::move(j);
        } catch (const nlohmann::json::exception&) {
            // Being replaced, or left by a crash: the next sample reads it again.
        }
    }
    return in;
}

}  // namespace

int runStatus(const StatusOptions& o) {
    FileTree fs("/");
    auto nl = Netlink::open();
    if (!nl) {
        std::cerr << "rxtune: " << nl.error().message() << "\n";
        return 1;
    }
    auto topo = readTopology(fs);
    if (!topo) {
        std::cerr << "rxtune: " << topo.error().message() << "\n";
        return 1;
    }
    const unsigned samples = o.count ? o.count : (o.watch ? 0 : 1);
    for (unsigned n = 0; samples == 0 || n < samples; ++n) {
        StatusInputs in = readInputs(fs, o);
        if (const auto classes = cpuClasses(*topo); classes.size() > 1)
            for (const auto& c : classes)
                for (unsigned cpu : c.cpus.cpus()) in.classes[cpu] = {c.name, describeCapacity(*topo, cpu)};
        std::vector<std::string> names;
        for (const auto& [name, how] : in.steered) names.push_back(name);
        if (in.daemon)
            if (auto it = in.daemon->find("interfaces"); it != in.daemon->end() && it->is_object())
                for (const auto& [name, d] : it->items()) names.push_back(name);
        auto a = readRaw(fs, **nl, topo->online.cpus(), names);
        std::this_thread::sleep_for(std::chrono::milliseconds(o.intervalMs));
        auto b = a ? readRaw(fs, **nl, topo->online.cpus(), names) : a;
        if (!b) {
            std::cerr << "rxtune: " << b.error().message() << "\n";
            return 1;
        }
        const StatusSample s = makeStatus(*a, *b, in);
        if (o.json) std::cout << statusJson(s).dump() << std::endl;
        else if (o.watch) std::cout << "\033[H\033[2J" << renderStatus(s) << std::flush;
        else std::cout << renderStatus(s);
    }
    return 0;
}

}  // namespace rxtune
