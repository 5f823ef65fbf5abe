#include "knobs/irq_state.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <optional>

#include "inventory/irqbalance_reader.hpp"
#include "knobs/registry.hpp"
#include "sys/atomic_file.hpp"
#include "sys/files.hpp"

namespace rxtune {

std::string pinnedIrqsText(const Journal* applied, const std::set<int>& planned) {
    std::set<int> irqs = planned;
    if (applied) {
        Journal j = *applied;
        // A journal of a family this build lacks pins nothing of its (the apply refuses it).
        if (recoverKeys(j))
            for (const auto& s : j.applied)
                if (s.key.family == "irq" && s.key.irq >= 0) irqs.insert(s.key.irq);
    }
    std::string out;
    for (int n : irqs) out += std::to_string(n) + "\n";
    return out;
}

std::set<int> irqsPinnedBy(const Plan& plan) {
    std::set<int> irqs;
    for (const auto& s : plan.settings)
        if (s.key.family == "irq" && s.key.irq >= 0) irqs.insert(s.key.irq);
    return irqs;
}

double PinnedIrqsPublished::droppedFor() const {
    double longest = 0;
    for (const auto& [pid, seconds] : dropped) longest = std::max(longest, seconds);
    return longest;
}

namespace {

// Seconds to wait before irqbalance takes a rescan request; 0: it takes one now. A young one
// (that may not have made its first pass) is asked whether it has placed IRQs, which only a pass
// does. One that cannot be asked and has no socket file yet is still reading its IRQs (it runs the
// policy script once per IRQ first: seconds under emulation), or has no control socket at all:
// not ready until it is no longer young, looked at again in half a second (the daemon: when its
// age says the first pass may have come). One whose socket file does not answer: by the file's time.
double notReadyFor(const IrqbalanceAsking& ib, ProcessSignals& signals) {
    if (!ib.young()) return 0;
    if (const auto placed = signals.irqbalancePlaced(ib.pid)) return placed->empty() ? 0.5 : 0;
    // (The age's estimate, at least: when the daemon tells it again.)
    if (ib.loopAge < 0) return std::max(0.5, ib.rescanIgnoredFor());
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
    const bool always = request.tell == PinnedIrqsRequest::Tell::kAlways;
    if (exists && before == text && !always) return out;
    if (!exists || before != text) {
        if (auto d = makeDirectories(runDir); !d) return failWith(d.error());
        if (auto w = writeFileAtomic(file, text, false); !w) return failWith(w.error());
    }
    out.changed = before != text;
    if ((!out.changed && !always) || request.tell == PinnedIrqsRequest::Tell::kNever) return out;
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

namespace {

std::string pidText(int pid) { return "irqbalance (pid " + std::to_string(pid) + ")"; }

bool listsAny(const std::set<int>& listed, const std::set<int>& irqs) {
    return std::any_of(irqs.begin(), irqs.end(), [&](int n) { return listed.count(n) > 0; });
}

// Seconds since the epoch when `file` was last written; nullopt: no such file.
std::optional<double> writtenAt(const std::string& file) {
    struct stat st{};
    if (::stat(file.c_str(), &st) != 0) return std::nullopt;
    return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

// Whether an irqbalance may still balance one of `irqs` while pinned-irqs (unchanged now) names
// them: its control socket lists one (it has placed it, so has not banned it); or, where it has
// shown no placing (no first pass yet, or no answer), it started before the file was last written,
// so that the scan at its start read an older list.
bool mayBalance(const IrqbalanceAsking& ib, const std::set<int>& irqs, const std::string& file, ProcessSignals& signals) {
    if (const auto placed = signals.irqbalancePlaced(ib.pid); placed && !placed->empty()) return listsAny(*placed, irqs);
    const auto written = writtenAt(file);
    if (!written || ib.age < 0) return true;
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const double started = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9 - ib.age;
    return started <= *written + 1;  // its age is known to a clock tick, the file's time to a second at worst
}

}  // namespace

Result<void> tellIrqbalanceBeforeWrites(const std::string& runDir, const JournalStore& store, const FileTree& root,
                                        ProcessSignals& signals, const Clock& clock, const std::set<int>& irqs,
                                        const std::function<void(const std::string&)>& say) {
    if (irqs.empty()) return {};
    const auto asking = irqbalanceAskingRxtune(root);
    if (asking.empty()) return {};  // the publication after the apply is enough: nobody to tell
    auto pre = publishPinnedIrqs(runDir, store, root, signals, {irqs, PinnedIrqsRequest::Tell::kNever});
    if (!pre) return failWith(pre.error());
    // Nothing to tell where the list is as it was and no irqbalance may still balance one of them.
    if (!pre->changed && std::none_of(asking.begin(), asking.end(), [&](const IrqbalanceAsking& ib) {
            return mayBalance(ib, irqs, runDir + "/pinned-irqs", signals);
        }))
        return {};
    // The first pass, where it has not come: at most 30 s (an irqbalance that balances nothing never shows one).
    auto notReady = irqbalanceNotReady(root, signals);
    for (const auto& [pid, seconds] : notReady) {
        const auto it = std::find_if(asking.begin(), asking.end(), [&pid = pid](const IrqbalanceAsking& a) { return a.pid == pid; });
        const bool socket = it != asking.end() && it->loopAge >= 0;
        say(pidText(pid) + " has not made its first pass and drops a rescan request until then: waiting for it before pinning IRQs (" +
                        (socket ? "asked through its control socket" : "it has not opened its control socket yet: still reading its IRQs") + ")");
    }
    const double firstPassBy = clock.monotonicSeconds() + 30;
    while (!notReady.empty() && clock.monotonicSeconds() < firstPassBy) {
        double wait = 0.5;
        for (const auto& [pid, seconds] : notReady) wait = std::min(wait, seconds);
        clock.sleepFor(wait);
        notReady = irqbalanceNotReady(root, signals);
    }
    for (const auto& [pid, seconds] : notReady) say("warning: " + pidText(pid) + " showed no first pass in 30 s: told anyway");
    // What each lists before the request, then the request (again: the file may not have changed).
    std::map<int, std::optional<std::set<int>>> before;
    for (const auto& ib : asking) before[ib.pid] = signals.irqbalancePlaced(ib.pid);
    auto pub = publishPinnedIrqs(runDir, store, root, signals, {irqs, PinnedIrqsRequest::Tell::kAlways});
    if (!pub) return failWith(pub.error());
    for (int pid : pub->told) say(pidText(pid) + " told to rescan: the IRQs rxtune pins changed");
    for (const auto& w : pub->warnings) say("warning: " + w);
    const double told = clock.monotonicSeconds();
    for (const auto& ib : asking) {
        if (std::find(pub->told.begin(), pub->told.end(), ib.pid) == pub->told.end()) continue;
        // Its rescan bans them, and it places the others again in the same pass (the main loop is
        // held meanwhile: nothing answers until it is done): it shows as ours no longer listed.
        // Not listed before (a placing that showed): banned already, nothing to wait for.
        const auto& was = before[ib.pid];
        if (was && !was->empty() && !listsAny(*was, irqs)) continue;
        if (!was || was->empty()) {  // cannot be asked, or no pass shown: its next tick is the rescan
            clock.sleepFor(told + ib.interval + 1.0 - clock.monotonicSeconds());
            continue;
        }
        const double limit = told + 2.0 * ib.interval + 5;
        bool seen = false;
        while (!seen && clock.monotonicSeconds() < limit) {
            const auto now = signals.irqbalancePlaced(ib.pid);
            if (!now) {  // no answer now: its next tick is the rescan
                clock.sleepFor(told + ib.interval + 1.0 - clock.monotonicSeconds());
                seen = true;
                break;
            }
            seen = !listsAny(*now, irqs);
            if (!seen) clock.sleepFor(0.1);
        }
        if (!seen)
            say("warning: " + pidText(ib.pid) + " showed no rescan in " + std::to_string(2 * ib.interval + 5) +
                            " s: pinning anyway (the daemon would put a moved IRQ back)");
    }
    return {};
}

}  // namespace rxtune
