// IRQ affinity (irq.cpus: auto | keep | LIST): the CPU(s) of each matched device's RX IRQ(s),
// written to /proc/irq/N/smp_affinity_list and read back from there; effective_affinity_list,
// which may follow only at the IRQ's next interrupt, is pending() until it does. An IRQ is
// known by its owner, the device and the IRQ's action name, not by its number alone: a number is
// given to another device after a driver reload, so a journaled original is put back only while
// /proc/irq/N/<action> shows the same owner. A managed IRQ (the kernel spreads it itself and
// refuses affinity writes with EIO) is reported and skipped. Also irqbalance's view (detect).
#include <algorithm>
#include <set>

#include "core/paths.hpp"
#include "core/text.hpp"
#include "inventory/irqbalance_reader.hpp"
#include "inventory/interrupts.hpp"
#include "knobs/irq_state.hpp"
#include "knobs/path_key.hpp"
#include "knobs/registry.hpp"
#include "knobs/irq_profile.hpp"

namespace rxtune {

namespace {

constexpr std::string_view kIrqDir = "proc/irq/";
constexpr std::string_view kIrqFile = "/smp_affinity_list";

const IrqIntent& intentOfIrq(const Profile& p) { return irqIntentOf(p); }

const InterruptsBefore* earlier(const PlanInput& in) {
    return in.opts.memory.families.get(kInterruptsBefore);
}

bool rxRole(const Irq& i) { return i.role == "rx" || i.role == "rxtx"; }

// The IRQs the section is about: the device's RX ones, or all of them where none is named for
// RX (r8169 names its one vector after the device).
std::vector<const Irq*> rxIrqs(const Nic& nic) {
    std::vector<const Irq*> out;
    const bool anyRx = std::any_of(nic.irqs.begin(), nic.irqs.end(), rxRole);
    for (const auto& i : nic.irqs)
        if (!anyRx || rxRole(i)) out.push_back(&i);
    return out;
}

KnobKey irqKey(const std::string& dev, const Irq& i) {
    KnobKey k{"irq", dev, i.name};
    k.irq = static_cast<int>(i.number);
    return k;
}

// "<dev> irq <N> <action>": the owner is part of the identity (the journal's id keeps it).
std::string irqId(const std::string& dev, unsigned irq, const std::string& action) {
    return dev + " irq " + std::to_string(irq) + " " + action;
}

// The CPUs irq.cpus gives the device's RX IRQ, with the reason for every online CPU (plan --explain).
struct IrqChoice {
    CpuSet cpus;
    std::vector<std::string> why;
    std::string skip;  // non-empty: no CPU to choose
};

IrqChoice choose(const PlanInput& in, const Nic& nic) {
    const IrqIntent& want = intentOfIrq(in.profile);
    const Topology& host = in.snap.host;
    IrqChoice c;
    if (want.kind == IrqIntent::Kind::kList) {
        c.cpus = want.list & host.online;
        for (unsigned cpu : host.online.cpus())
            c.why.push_back("cpu " + std::to_string(cpu) + (c.cpus.contains(cpu) ? " chosen: in irq.cpus" : " left out: not in irq.cpus"));
        if (c.cpus.empty()) c.skip = "irq.cpus " + want.list.toList() + " names no online CPU";
        return c;
    }
    CpuSet node = host.online;
    if (nic.numaNode >= 0)
        if (auto n = host.numaNodes.find(static_cast<unsigned>(nic.numaNode)); n != host.numaNodes.end()) node = n->second & host.online;
    CpuSet app;
    if (in.profile.steering.cpus.kind == CpuChoice::Kind::kCgroup)
        if (auto g = in.opts.cgroupCpus.find(in.profile.steering.cpus.cgroupPath); g != in.opts.cgroupCpus.end()) app = g->second;
    std::optional<unsigned> best;
    // Other work: every interrupt the CPU served but the device's own (once the IRQ is pinned
    // there, its own count grows on that CPU, and counting it would move the IRQ away again);
    // since the daemon's last reading where it has one (per second), else since boot.
    const InterruptCounts& now = interruptsOf(in.snap);
    auto otherSinceBoot = [&](const InterruptCounts& c, unsigned cpu) {
        auto it = c.perCpu.find(cpu);
        std::uint64_t n = it == c.perCpu.end() ? 0 : it->second;
        for (const auto& irq : nic.irqs)
            if (auto l = c.nicIrqs.find(irq.number); l != c.nicIrqs.end())
                if (auto k = l->second.find(cpu); k != l->second.end()) n -= std::min(n, k->second);
        return n;
    };
    const InterruptsBefore* lent = earlier(in);
    const InterruptCounts* before = lent ? lent->counts : nullptr;
    const double seconds = lent ? lent->seconds : 0;
    bool rate = before && seconds >= 1;
    // The earlier reading must know the device's own IRQs (to leave them out) and no count may have
    // gone down (a CPU offline and back, an IRQ freed): else no rate.
    for (const auto& irq : nic.irqs)
        if (rate && !before->nicIrqs.count(irq.number)) rate = false;
    for (unsigned cpu : host.online.cpus())
        if (rate && otherSinceBoot(*before, cpu) > otherSinceBoot(now, cpu)) rate = false;
    auto work = [&](unsigned cpu) -> std::uint64_t {
        if (!rate) return otherSinceBoot(now, cpu);
        const double d = static_cast<double>(otherSinceBoot(now, cpu) - otherSinceBoot(*before, cpu));
        return static_cast<std::uint64_t>(d / seconds + 0.5);
    };
    const std::string unit = rate ? " other interrupts/s over the last " + std::to_string(static_cast<long>(seconds)) + " s"
                                  : " other interrupts since boot";
    CpuSet eligible;
    for (unsigned cpu : host.online.cpus())
        if (node.contains(cpu) && !host.isolated.contains(cpu) && !host.nohzFull.contains(cpu) && !app.contains(cpu)) eligible.add(cpu);
    // The RX softirq of a one-queue NIC is one core's work, and that core is the ceiling: the
    // biggest eligible cores only (cpu_capacity, or x86 hybrid's core type).
    const CpuSet big = biggestOf(host, eligible);
    for (unsigned cpu : host.online.cpus()) {
        std::string why;
        if (!node.contains(cpu)) why = "left out: not on the NIC's NUMA node " + std::to_string(nic.numaNode);
        else if (host.isolated.contains(cpu) || host.nohzFull.contains(cpu)) why = "left out: isolated/nohz_full";
        else if (app.contains(cpu)) why = "left out: the application's (cgroup " + in.profile.steering.cpus.cgroupPath + ")";
        else if (!big.contains(cpu))
            why = "left out: a smaller core (" + describeCapacity(host, cpu) + "; eligible CPUs " + big.toList() + " have " +
                  describeCapacity(host, big.cpus().front()) + ")";
        else {
            why = "eligible: " + std::to_string(work(cpu)) + unit + (big == eligible ? "" : ", " + describeCapacity(host, cpu));
            if (!best || work(cpu) < work(*best)) best = cpu;
        }
        c.why.push_back("cpu " + std::to_string(cpu) + " " + why);
    }
    if (!best) {
        c.skip = "irq.cpus auto: no CPU on the NIC's NUMA node that is neither isolated, nohz_full nor the application's";
        return c;
    }
    // Where the RX IRQ is now on one eligible CPU within 10 % of the least (or, as a rate, within
    // 100/s: a negligible load), it stays: the counts drift, and an IRQ moved at every run for a
    // few interrupts' difference helps nobody.
    const CpuSet at = irqCpus(nic);
    if (at.count() == 1 && !rate && lent && lent->journaled) {
        // Where rxtune's journal put it (a daemon restarted, by an upgrade say): it stays on an
        // eligible core until a measured rate says otherwise.
        const unsigned cur = at.cpus().front();
        const auto irqs = rxIrqs(nic);
        const bool ours = !irqs.empty() && std::all_of(irqs.begin(), irqs.end(), [&](const Irq* i) {
            auto j = lent->journaled->find(irqId(nic.name, i->number, i->name));
            if (j == lent->journaled->end()) return false;
            auto set = CpuSet::parseList(j->second);
            return set && *set == i->affinity && *set == at;
        });
        if (ours && big.contains(cur)) {
            c.cpus = at;
            c.why.push_back("cpu " + std::to_string(cur) +
                            " kept: rxtune's journal put the IRQ there, and counts since boot include the work that placement brought"
                            " (it moves on a measured rate, from the daemon's next reading)");
            return c;
        }
    }
    if (at.count() == 1) {
        const unsigned cur = at.cpus().front();
        const std::uint64_t slack = std::max<std::uint64_t>(work(*best) / 10, rate ? 100 : 0);
        if (cur != *best && big.contains(cur) && work(cur) <= work(*best) + slack) {
            c.cpus = CpuSet::of({cur});
            c.why.push_back("cpu " + std::to_string(cur) + " kept: the IRQ is there now, within " + (rate ? "10% or 100/s" : "10%") +
                            " of the least other interrupt work (cpu " + std::to_string(*best) + ")");
            return c;
        }
    }
    c.cpus = CpuSet::of({*best});
    c.why.push_back("cpu " + std::to_string(*best) + " chosen: the eligible CPU with the least other interrupt work" +
                    (big == eligible ? "" : " among the biggest cores"));
    return c;
}

class IrqFamily final : public KnobFamily {
public:
    // detect: the device's IRQs, their CPUs and counts.
    void detectJson(const Nic& n, nlohmann::ordered_json& j) const override {
        auto irqs = nlohmann::ordered_json::array();
        for (const auto& i : n.irqs) {
            nlohmann::ordered_json e = {{"irq", i.number}, {"name", i.name}, {"role", i.role}, {"affinity", i.affinity.toList()}};
            e["effective_affinity"] = i.effective ? nlohmann::ordered_json(i.effective->toList()) : nlohmann::ordered_json(nullptr);
            e["count"] = i.total;
            irqs.push_back(std::move(e));
        }
        j["irqs"] = std::move(irqs);
    }
    void detectText(const Nic& n, std::ostream& out) const override {
        for (const auto& i : n.irqs)
            out << "    irq " << i.number << " " << (i.name.empty() ? std::string("-") : i.name) << " [" << i.role << "] affinity "
                << i.affinity.toList() << (i.effective ? " effective " + i.effective->toList() : "") << ", " << i.total << " interrupts\n";
    }

    std::string_view name() const override { return "irq"; }
    std::string id(const KnobKey& k) const override { return irqId(k.device, static_cast<unsigned>(k.irq), k.name); }
    std::string path(const KnobKey& k) const override {
        return paths::irqFile(static_cast<unsigned>(k.irq), std::string(kIrqFile).substr(1));
    }
    std::string settingLabel(const KnobKey&) const override { return "irq_affinity"; }
    std::optional<KnobKey> keyOf(std::string_view p, std::string_view id) const override {
        auto rest = pathkey::after(p, kIrqDir);
        if (!rest || !rest->ends_with(kIrqFile)) return std::nullopt;
        auto n = pathkey::number(rest->substr(0, rest->size() - kIrqFile.size()));
        // A device's name has no whitespace (the kernel's rule): it ends at the first space.
        const auto at = id.find(' ');
        const std::string marker = " irq " + (n ? std::to_string(*n) : std::string()) + " ";
        if (!n || at == std::string_view::npos || at == 0 || id.substr(at, marker.size()) != marker) return std::nullopt;
        KnobKey k{"irq", std::string(id.substr(0, at)), std::string(id.substr(at + marker.size()))};
        k.irq = *n;
        return k;
    }

    Result<void> readInto(const Profile& profile, const SnapshotIo& io, HostSnapshot& snap) const override {
        if (intentOfIrq(profile).kind == IrqIntent::Kind::kKeep) return {};
        return readHost(io, snap);
    }
    Result<void> readDetect(const SnapshotIo& io, HostSnapshot& snap) const override { return readHost(io, snap); }

    void shapeDevice(const PlanInput& in, Nic& nic) const override {
        if (intentOfIrq(in.profile).kind == IrqIntent::Kind::kKeep) return;
        const IrqChoice c = choose(in, nic);
        if (!c.skip.empty()) return;
        for (auto& i : nic.irqs)
            for (const Irq* r : rxIrqs(nic))
                if (r == &i && !refusedBefore(in, nic, i)) {
                    i.affinity = c.cpus;
                    i.effective = c.cpus;
                }
    }

    Result<void> planDevice(const PlanInput& in, const DeviceSteering& d, Plan& p) const override {
        const IrqIntent& want = intentOfIrq(in.profile);
        if (want.kind == IrqIntent::Kind::kKeep) return {};
        const Nic& nic = d.nic;
        const auto irqs = rxIrqs(nic);
        if (irqs.empty()) {
            p.skipped.push_back({nic.name + " irq", "no IRQ of its own (a virtual device, or its IRQs are not named after it)"});
            return {};
        }
        const IrqChoice c = choose(in, nic);
        if (in.opts.explain)
            for (const auto& w : c.why) p.explanation.push_back(nic.name + ": irq " + w);
        if (!c.skip.empty()) {
            p.skipped.push_back({nic.name + " irq", c.skip});
            return {};
        }
        std::string why = "irq.cpus " + std::string(want.kind == IrqIntent::Kind::kAuto ? "auto" : want.list.toList()) + " (profile " +
                          want.where.str() + "): CPU " + c.cpus.toList();
        if (const IrqbalanceFacts* ib = irqbalanceOf(in.snap); ib && ib->running) {
            const auto& b = *ib;
            for (const Irq* i : irqs) {
                const bool banned = std::binary_search(b.bannedIrqs.begin(), b.bannedIrqs.end(), i->number);
                p.advice.push_back({nic.name, "irqbalance runs (pid " + std::to_string(b.pid) + ") and " +
                                                  (banned ? "bans IRQ " + std::to_string(i->number) + " already (--banirq)"
                                                          : "may move IRQ " + std::to_string(i->number) +
                                                                ": enable rxtune's policy script (/usr/share/rxtune/irqbalance/irqbalance-rxtune.conf) or ban it")});
            }
        }
        for (const Irq* i : irqs) {
            if (refusedBefore(in, nic, *i)) {
                p.skipped.push_back({id(irqKey(nic.name, *i)), "the kernel refused its affinity at an earlier apply (a managed IRQ?): "
                                                               "not tried again until the device changes"});
                continue;
            }
            p.settings.push_back(makeSetting(*this, irqKey(nic.name, *i), ValueKind::kCpuList, i->affinity.toList(), c.cpus.toList(), why,
                                             i->affinity.toList()));
        }
        return {};
    }

private:
    // The daemon remembers the IRQs the kernel refused (a managed IRQ refuses every time).
    bool refusedBefore(const PlanInput& in, const Nic& nic, const Irq& irq) const {
        return in.opts.memory.refusedBefore && in.opts.memory.refusedBefore->count(id(irqKey(nic.name, irq))) > 0;
    }

public:

    // The IRQ is still this device's: /proc/irq/N/<action> is there for each of its actions.
    bool exists(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        if (!io.fs.exists(path)) return false;
        for (const auto& action : splitOn(k.name, ','))
            if (!action.empty() && !io.fs.exists(paths::irqFile(static_cast<unsigned>(k.irq), action))) return false;
        return true;
    }
    Result<std::string> read(const KnobIo& io, const KnobKey& k, const std::string& path) const override {
        if (!exists(io, k, path)) return fail(ENOENT, "irq", io.fs.full(path), "IRQ " + std::to_string(k.irq) + " no longer belongs to " + k.device + " (" + k.name + ")");
        return io.fs.read(path);
    }
    // The write is read back from smp_affinity_list (the generic read-back); where the kernel
    // serves the IRQ, effective_affinity_list, may follow only at the IRQ's next interrupt (an x86
    // MSI vector without interrupt remapping), so it is pending(), not a failed write.
    Result<void> write(const KnobIo& io, const KnobKey& k, const std::string& path, const std::string& value) const override {
        if (!exists(io, k, path)) return fail(ENOENT, "irq", io.fs.full(path), "IRQ " + std::to_string(k.irq) + " no longer belongs to " + k.device + " (" + k.name + ")");
        return io.fs.write(path, value);
    }
    std::optional<Pending> pending(const KnobIo& io, const KnobKey& k, const std::string& desired) const override {
        const auto irq = static_cast<unsigned>(k.irq);
        auto eff = io.fs.read(paths::irqFile(irq, "effective_affinity_list"));
        if (!eff) return std::nullopt;  // no such file (an older kernel, a controller that does not say)
        auto set = CpuSet::parseList(*eff);
        auto want = CpuSet::parseList(desired);
        if (!set || !want || set->empty() || (*set - *want).empty()) return std::nullopt;
        Pending p;
        p.what = "the kernel serves it on CPU " + set->toList() + " until its next interrupt, then on " + want->toList();
        // Interrupts served off the CPUs written, from the kernel's per-CPU count of this IRQ.
        if (auto counts = io.fs.read(paths::sysKernelIrqFile(irq, "per_cpu_count"))) {
            unsigned cpu = 0;
            for (const auto& field : splitOn(trimmed(*counts), ',')) {
                std::uint64_t n = 0;
                if (!want->contains(cpu) && parseUnsigned(field, n)) p.against += n;
                ++cpu;
            }
        }
        return p;
    }
    bool writeIsExact(const KnobKey&, ValueKind, const std::string&, const Plan*) const override { return false; }

    void beforePlan(HookContext& c, const Profile& p, bool, PlanMemory& memory) const override {
        irqBeforePlan(c, intentOfIrq(p).kind == IrqIntent::Kind::kAuto, memory);
    }
    void afterSnapshot(HookContext& c, const Profile& p, bool wholeHost, const HostSnapshot& snap) const override {
        irqAfterSnapshot(c, intentOfIrq(p).kind == IrqIntent::Kind::kAuto, wholeHost, snap);
    }
    void beforeWrites(HookContext& c, const Plan& plan) const override { irqBeforeWrites(c, plan); }
    void afterApply(HookContext& c, const Profile* p, ApplyStage stage) const override {
        irqAfterApply(c, !p || intentOfIrq(*p).kind == IrqIntent::Kind::kKeep, stage);
    }
    bool driftCorrected(HookContext& c, const Setting& s, CounterSink& metrics) const override { return irqDriftCorrected(c, s, metrics); }
    bool othersMove(const KnobKey& k) const override { return k.irq >= 0; }
    std::string moverOf(HookContext& c, const Setting& s) const override { return irqMoverOf(c, s); }
    std::vector<CounterSpec> counters() const override {
        return {{std::string(kIrqMoves), "A pinned IRQ found on other CPUs and put back; by: irqbalance (where it runs) or other"}};
    }

    bool refusalIsKnobsOwn(const KnobKey&, const Error& e) const override { return e.code == EIO && e.op != "read back"; }

    void detectHostJson(const HostSnapshot& s, nlohmann::ordered_json& host) const override {
        if (!irqbalanceOf(s)) return;
        const auto& b = *irqbalanceOf(s);
        nlohmann::ordered_json j;
        j["running"] = b.running;
        j["pid"] = b.running ? nlohmann::ordered_json(b.pid) : nlohmann::ordered_json(nullptr);
        j["version"] = b.version.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(b.version);
        j["config_file"] = b.configFile.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(b.configFile);
        j["banned_irqs"] = b.bannedIrqs;
        j["banned_cpus"] = b.bannedCpus.toList();
        j["banned_cpus_from"] = b.bannedCpusFrom;
        j["policy_script"] = b.policyScript.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(b.policyScript);
        j["notes"] = b.notes;
        host["irqbalance"] = std::move(j);
    }
    void detectHostText(const HostSnapshot& s, std::ostream& out) const override {
        if (!irqbalanceOf(s)) return;
        const auto& b = *irqbalanceOf(s);
        out << "  irqbalance " << (b.running ? "runs (pid " + std::to_string(b.pid) + ")" : std::string("not running"))
            << (b.version.empty() ? "" : ", package " + b.version) << ", config " << (b.configFile.empty() ? "-" : b.configFile)
            << ", banned CPUs " << (b.bannedCpus.empty() ? "-" : b.bannedCpus.toList()) << " (" << b.bannedCpusFrom << ")";
        if (!b.bannedIrqs.empty()) {
            out << ", banned IRQs";
            for (unsigned i : b.bannedIrqs) out << " " << i;
        }
        if (!b.policyScript.empty()) out << ", policy script " << b.policyScript;
        out << "\n";
        for (const auto& n : b.notes) out << "    " << n << "\n";
    }

private:
    static Result<void> readHost(const SnapshotIo& io, HostSnapshot& snap) {
        if (!irqbalanceOf(snap)) {
            auto b = readIrqbalance(io.fs, snap.host);
            if (!b) return failWith(b.error());
            snap.facts.set(kIrqbalanceFacts, std::move(*b));
        }
        if (interruptsOf(snap).perCpu.empty() && io.fs.exists("proc/interrupts")) {
            InterruptCounts counts;
            auto text = io.fs.read("proc/interrupts");
            if (!text) return failWith(text.error());
            auto table = parseInterrupts(*text);
            if (!table) return failWith(table.error());
            std::set<unsigned> nicIrqs;
            for (const auto& n : snap.nics)
                for (const auto& irq : n.irqs) nicIrqs.insert(irq.number);
            for (const auto& line : table->lines) {
                if (!line.numeric) continue;
                const bool ofNic = nicIrqs.count(line.irq) > 0;
                for (size_t c = 0; c < line.counts.size() && c < table->cpus.size(); ++c) {
                    counts.perCpu[table->cpus[c]] += line.counts[c];
                    if (ofNic) counts.nicIrqs[line.irq][table->cpus[c]] += line.counts[c];
                }
            }
            snap.facts.set(kInterruptFacts, std::move(counts));
        }
        return {};
    }
};

const IrqFamily kIrqFamily;
const FamilyRegistration kIrqRegistered{kIrqFamily, 240};

}  // namespace

}  // namespace rxtune
