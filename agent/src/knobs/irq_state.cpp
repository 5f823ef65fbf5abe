#include "knobs/irq_state.hpp"

#include <algorithm>

#include "inventory/irqbalance_reader.hpp"
#include "knobs/registry.hpp"
#include "sys/atomic_file.hpp"
#include "sys/files.hpp"

namespace rxtune {

std::string pinnedIrqsText(const Journal* applied, const std::set<int>& planned) {
    std::set<int> irqs = planned;
    if (applied) {
        Journal j = *applied;
        recoverKeys(j);
        for (const auto& s : j.applied)
            if (s.key.family == Family::kIrq && s.key.queue >= 0) irqs.insert(s.key.queue);
    }
    std::string out;
    for (int n : irqs) out += std::to_string(n) + "\n";
    return out;
}

std::set<int> irqsAboutToPin(const Plan& plan) {
    std::set<int> irqs;
    bool writes = false;
    for (const auto& s : plan.settings)
        if (s.key.family == Family::kIrq && s.key.queue >= 0) {
            irqs.insert(s.key.queue);
            writes = writes || s.pending();
        }
    return writes ? irqs : std::set<int>{};
}

double PinnedIrqsPublished::droppedFor() const {
    double longest = 0;
    for (const auto& [pid, seconds] : dropped) longest = std::max(longest, seconds);
    return longest;
}

namespace {

// Seconds to wait before irqbalance takes a rescan request; 0: it takes one now. A young one
// (that may not have made its first pass) is asked whether it has placed IRQs, which only a pass
// does; where it cannot be asked, its age decides.
double notReadyFor(const IrqbalanceAsking& ib, ProcessSignals& signals) {
    const bool young = ib.loopAge >= 0 ? ib.loopAge < ib.interval + 10.0 : ib.age >= 0 && ib.age < ib.interval + 12.0;
    if (!young) return 0;
    if (const auto placed = signals.irqbalancePlaced(ib.pid)) return placed->empty() ? 0.5 : 0;
    return ib.rescanIgnoredFor();
}

}  // namespace

std::vector<std::pair<int, double>> irqbalanceNotReady(const FileTree& root, ProcessSignals& signals) {
    std::vector<std::pair<int, double>> out;
    for (const auto& ib : irqbalanceAskingRxtune(root))
        if (const double wait = notReadyFor(ib, signals); wait > 0) out.emplace_back(ib.pid, wait);
    return out;
}

Result<PinnedIrqsPublished> publishPinnedIrqs(const std::string& runDir, const JournalStore& store, const FileTree& root,
                                              ProcessSignals& signals, const PinnedIrqsRequest& request) {
    auto j = store.load();
    if (!j) return failWith(j.error());
    const std::string text = pinnedIrqsText(*j ? &**j : nullptr, request.planned);
    const std::string file = runDir + "/pinned-irqs";
    auto now = readFileIfExists(file);
    const bool exists = now && *now;
    const std::string before = exists ? **now : std::string();  // absent: nothing was pinned
    PinnedIrqsPublished out;
    if (exists && before == text && !request.tellAnyway) return out;
    if (!exists || before != text) {
        if (auto d = makeDirectories(runDir); !d) return failWith(d.error());
        if (auto w = writeFileAtomic(file, text, false); !w) return failWith(w.error());
    }
    out.changed = before != text;
    if (!out.changed && !request.tellAnyway) return out;
    for (const auto& ib : irqbalanceAskingRxtune(root)) {
        const double notReady = notReadyFor(ib, signals);  // asked before the request
        if (auto r = signals.hangUp(ib.pid, "irqbalance"); r) {
            out.told.push_back(ib.pid);
            if (notReady > 0) out.dropped.emplace_back(ib.pid, notReady);
        } else {
            out.warnings.push_back("irqbalance (pid " + std::to_string(ib.pid) + ") not told to rescan: " + r.error().message());
        }
    }
    return out;
}

}  // namespace rxtune
