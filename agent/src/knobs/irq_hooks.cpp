// The IRQ family's part in a run (knobs/irq_state.hpp): what the daemon keeps from one run to the
// next (the last /proc/interrupts reading, whether pinned-irqs may name an IRQ, when to tell an
// irqbalance again) and whom it tells around the writes.
#include <map>
#include <optional>

#include <systemd/sd-daemon.h>

#include "inventory/irqbalance_reader.hpp"
#include "knobs/irq_state.hpp"

namespace rxtune {

namespace {

// An earlier reading older than this says nothing of what the CPUs do now.
constexpr double kInterruptsMaxAge = 600;  // seconds

struct IrqMemory {
    std::optional<InterruptCounts> interrupts;  // the last whole-host reading (irq.cpus auto)
    double interruptsAt = 0;                    // monotonic seconds
    // Whether <run_dir>/pinned-irqs may name an IRQ (true at start: a list left by an earlier run is
    // rewritten once); without irq.cpus it is not rewritten at every run.
    bool pinnedMayBeSet = true;
    // When an irqbalance that dropped a request (before its first pass) takes one: it is told again
    // at the first run after (a drift check at the latest), which also puts back an IRQ its first
    // pass moved. Monotonic seconds; 0: nobody to tell again.
    double retellAt = 0;
    // IRQs an irqbalance asking rxtune's policy script was found to move, by IRQ: its pid. A second
    // move by the same process is no longer the moment before a rescan: its ban does not hold.
    std::map<int, int> movedBy;
    // The journal's applied IRQ affinities (id -> value), read where no recent reading is.
    std::map<std::string, std::string> journaled;
};

constexpr Slot<IrqMemory> kIrqMemory{"irq"};

IrqMemory& memoryOf(HookContext& c) { return c.memory.emplace(kIrqMemory); }

// Publishes pinned-irqs and tells irqbalance; false where the file could not be written.
bool publishNow(HookContext& c, const PinnedIrqsRequest& request = {}) {
    auto p = publishPinnedIrqs(c.runDir, c.store, c.fs, c.signals, request);
    if (!p) {
        c.say(SD_WARNING, (c.daemon ? "pinned-irqs: " : "") + p.error().message());
        return false;
    }
    for (int pid : p->told)
        c.say(SD_INFO, "irqbalance (pid " + std::to_string(pid) + ") told to rescan: " +
                           (request.tell == PinnedIrqsRequest::Tell::kAlways ? "again, after its first pass" : "the IRQs rxtune pins changed"));
    for (const auto& w : p->warnings) c.say(SD_WARNING, w);
    if (!c.daemon) return true;
    for (const auto& [pid, seconds] : p->dropped)
        c.say(SD_NOTICE, "irqbalance (pid " + std::to_string(pid) + ") has not made its first pass and drops a rescan request until then (" +
                             std::to_string(static_cast<int>(seconds + 0.5)) + " s): it may move a pinned IRQ once; told again at the first run after");
    if (!p->dropped.empty()) memoryOf(c).retellAt = c.clock.monotonicSeconds() + p->droppedFor();
    return true;
}

}  // namespace

void irqBeforePlan(HookContext& c, bool irqAuto, PlanMemory& memory) {
    IrqMemory& m = memoryOf(c);
    const double now = c.clock.monotonicSeconds();
    if (!irqAuto) return;
    if (m.interrupts && now - m.interruptsAt <= kInterruptsMaxAge) {
        memory.families.set(kInterruptsBefore, InterruptsBefore{&*m.interrupts, now - m.interruptsAt, nullptr});
        return;
    }
    // No rate yet: what rxtune placed before (a journal left by the daemon that ran before this one).
    m.journaled.clear();
    auto j = c.store.load();
    if (!j || !*j) return;  // an unreadable journal is the apply's to report
    for (const auto& s : (*j)->applied)
        if (s.key.family == "irq") m.journaled[s.id] = s.desired;
    if (!m.journaled.empty()) memory.families.set(kInterruptsBefore, InterruptsBefore{nullptr, 0, &m.journaled});
}

void irqAfterSnapshot(HookContext& c, bool irqAuto, bool wholeHost, const HostSnapshot& snap) {
    // Kept from whole-host runs only: an event's snapshot knows only its devices' IRQs.
    if (!irqAuto || !wholeHost || interruptsOf(snap).perCpu.empty()) return;
    IrqMemory& m = memoryOf(c);
    m.interrupts = interruptsOf(snap);
    m.interruptsAt = c.clock.monotonicSeconds();
}

void irqBeforeWrites(HookContext& c, const Plan& plan) {
    if (!c.daemon) {
        // A command may wait: irqbalance told, and its rescan awaited, before the first write.
        auto told = tellIrqbalanceBeforeWrites(c.runDir, c.store, c.fs, c.signals, c.clock, irqsPinnedBy(plan),
                                               [&](const std::string& l) { c.say(SD_INFO, l); });
        if (!told) c.say(SD_WARNING, told.error().message());
        return;
    }
    if (c.runDir.empty()) return;
    const std::set<int> irqs = irqsPinnedBy(plan);
    if (irqs.empty()) return;
    publishNow(c, {irqs});
}

void irqAfterApply(HookContext& c, bool irqKept, ApplyStage stage) {
    if (!c.daemon) {
        // What is pinned now (a failed apply's IRQs are undone: irqbalance takes them back).
        publishNow(c);
        return;
    }
    if (c.runDir.empty()) return;
    IrqMemory& m = memoryOf(c);
    if (stage == ApplyStage::kReverted) {
        if (m.pinnedMayBeSet) publishNow(c);
        return;
    }
    const bool retell = m.retellAt > 0 && c.clock.monotonicSeconds() >= m.retellAt;
    if (!retell && irqKept && !m.pinnedMayBeSet) return;
    if (retell) m.retellAt = 0;
    if (!publishNow(c, {{}, retell ? PinnedIrqsRequest::Tell::kAlways : PinnedIrqsRequest::Tell::kIfChanged})) return;
    m.pinnedMayBeSet = !irqKept;
}

namespace {

// Who moves IRQs on a Debian host: irqbalance, about every 10 s, unless it bans the IRQ.
struct IrqMover {
    int pid = 0;         // the irqbalance running; 0: none
    bool asking = false;  // it asks rxtune's policy script (bans what pinned-irqs names, from its next rescan)
};

IrqMover irqMover(const FileTree& fs) {
    Topology none;
    auto b = readIrqbalance(fs, none);
    if (!b || !b->running) return {};
    IrqMover m{b->pid, false};
    for (const auto& a : irqbalanceAskingRxtune(fs)) m.asking = m.asking || a.pid == b->pid;
    return m;
}

}  // namespace

std::string irqMoverOf(HookContext& c, const Setting& s) {
    const IrqMover m = irqMover(c.fs);
    if (m.pid == 0) return "someone else (irqbalance does not run): a write to /proc/irq/" + std::to_string(s.key.irq) + "/smp_affinity_list";
    return "irqbalance (pid " + std::to_string(m.pid) + ")" +
           (m.asking ? ", before the rescan that bans it" : ", which does not ask rxtune's policy script");
}

bool irqDriftCorrected(HookContext& c, const Setting& s, CounterSink& metrics) {
    const IrqMover m = irqMover(c.fs);
    const int irq = s.key.irq;
    metrics.count(std::string(kIrqMoves), {{"interface", s.key.device}, {"irq", std::to_string(irq)}, {"by", m.pid ? "irqbalance" : "other"}});
    const std::string moved = "IRQ " + std::to_string(irq) + " of " + s.key.device + " was moved to CPUs " + s.current + " and is back on " + s.desired;
    if (m.pid == 0) {
        c.say(SD_NOTICE, moved + "; irqbalance does not run: someone wrote /proc/irq/" + std::to_string(irq) + "/smp_affinity_list");
        return true;
    }
    const std::string who = "irqbalance (pid " + std::to_string(m.pid) + ")";
    if (!m.asking) {
        c.say(SD_NOTICE, moved + "; " + who + " runs and is the likely mover: enable rxtune's policy script");
        return true;
    }
    // It asks rxtune's script: a move before the rescan that bans the IRQ (a pass under way when it
    // was told, a request it dropped before its first pass). Told again where it still balances the
    // IRQ (its control socket lists it) or cannot say. The same process moving it again is drift.
    IrqMemory& mem = memoryOf(c);
    auto [it, first] = mem.movedBy.try_emplace(irq, m.pid);
    if (!first && it->second == m.pid) {
        c.say(SD_WARNING, moved + "; " + who + " moved it again although it asks rxtune's policy script: its ban does not hold (can it read " +
                              c.runDir + "/pinned-irqs?)");
        return true;
    }
    it->second = m.pid;
    const auto placed = c.signals.irqbalancePlaced(m.pid);
    const bool balances = !placed || placed->count(irq) > 0;
    if (balances) mem.retellAt = c.clock.monotonicSeconds();  // told again once this run is over
    c.say(SD_INFO, moved + "; moved by " + who + " before the rescan that bans it" + (balances ? ": told to rescan again" : ""));
    return false;
}

}  // namespace rxtune
