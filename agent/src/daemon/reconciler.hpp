// Reconciler: snapshot -> plan -> apply -> metrics, for the whole host or for the devices an
// event named; and which events concern the profile at all.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apply/apply.hpp"
#include "apply/prepare.hpp"
#include "metrics/metrics.hpp"
#include "profile/profile.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "knobs/irq_state.hpp"
#include "sys/signals.hpp"

namespace rxtune {

class Reconciler {
public:
    enum class Why { kStart, kEvent, kDrift, kReload, kAuto };

    // xdp may be null where XDP steering is not available (plans with it are refused).
    Reconciler(FileTree& fs, NetlinkSource& nl, XdpSteering* xdp, std::string stateDir, Metrics& metrics)
        : fs_(fs), nl_(nl), xdp_(xdp), napi_(fs, nl), store_(std::move(stateDir)), metrics_(metrics) {}
    Reconciler(const Reconciler&) = delete;  // signals_ may point at its own member
    Reconciler& operator=(const Reconciler&) = delete;

    // What to keep applied: the profile, and the config's explicit interface list (empty: the
    // profile's match). Both are read at each run.
    void configure(const Profile* profile, const std::vector<std::string>* interfaces) {
        profile_ = profile;
        interfaces_ = interfaces;
    }

    // Where the daemon knows every device's name and kind without asking (its link cache): the
    // names a whole-host run may plan for. Only these are read, so that the drift check costs
    // what the matching devices cost, not what the node's thousands of others would.
    void setCandidates(std::function<std::vector<std::string>()> candidates) { candidates_ = std::move(candidates); }
    // Where <run_dir>/pinned-irqs goes (irqbalance's policy script reads it); empty: nowhere.
    void setRunDir(std::string runDir) { runDir_ = std::move(runDir); }
    // Who irqbalance's rescan is sent through (tests: a recorder; default: the system).
    void useSignals(ProcessSignals& signals) { signals_ = &signals; }
    // The monotonic time the interrupt rate is taken over (tests: a fixed one; default: the system's).
    void useClock(const Clock& clock) { clock_ = &clock; }

    // devices: an event's, the only ones read and answered for; null: the whole host.
    // autoIn: mode auto's decisions (null otherwise). firstEvent: when the burst began, for the
    // re-apply latency. False: nothing was planned or applied (logged).
    bool run(Why why, const std::set<std::string>* devices = nullptr, const AutoInputs* autoIn = nullptr,
             std::optional<std::chrono::steady_clock::time_point> firstEvent = std::nullopt);

    // An event about `name` is worth reading the device for: it is one rxtune steers, one the
    // config names, or one the profile's match may take (linkKind is asked only if that depends on it).
    bool concerns(const std::string& name, const std::function<std::string()>& linkKind) const;

    // The interfaces planned, by the last whole-host run and events since.
    const std::vector<std::string>& steered() const { return steered_; }
    // Whether the last run was a whole-host one that wrote something (the interface metrics are stale).
    bool wroteHostWide() const { return wrote_; }

    Result<RevertReport> revert();

private:
    FileTree& fs_;
    NetlinkSource& nl_;
    XdpSteering* xdp_;
    SystemNapiThreads napi_;
    JournalStore store_;
    Metrics& metrics_;
    const Profile* profile_ = nullptr;
    const std::vector<std::string>* interfaces_ = nullptr;
    std::vector<std::string> steered_;
    std::string runDir_;
    // Whether <run_dir>/pinned-irqs may name an IRQ (true at start: a list left by an earlier run
    // is rewritten once); without irq.cpus it is not rewritten at every run.
    bool pinnedMayBeSet_ = true;
    void publishPinned(const Profile& profile);
    bool publishPinnedIrqsNow(const PinnedIrqsRequest& request = {});
    // Before a run's affinity writes: its IRQs published and irqbalance told (see irq_state.hpp).
    void publishBeforeWrites(const Plan& plan);
    // When an irqbalance that dropped a request (before its first pass) takes one: it is told
    // again at the first run after (a drift check at the latest), which also puts back an IRQ its
    // first pass moved. Monotonic seconds; 0: nobody to tell again.
    double retellAt_ = 0;
    // The last /proc/interrupts reading (irq.cpus auto), kept for a rate at the next run.
    static constexpr double kInterruptsMaxAge = 600;  // seconds
    std::optional<InterruptCounts> lastInterrupts_;
    // Settings the kernel refused (managed IRQs), until their device changes: id -> its device.
    std::map<std::string, std::string> refused_;
    std::set<std::string> refusedIds_;  // the same ids, as the planner takes them
    double lastInterruptsAt_ = 0;
    SystemClock systemClock_;
    const Clock* clock_ = &systemClock_;
    SystemProcessSignals systemSignals_;
    ProcessSignals* signals_ = &systemSignals_;
    bool wrote_ = false;
    // Values in place but not in effect yet (KnobFamily::pending), by setting id: what the kernel
    // had done against each at the last look, and whether "not followed" was said.
    struct PendingSeen {
        std::uint64_t against = 0;
        bool warned = false;
    };
    std::map<std::string, PendingSeen> pending_;
    // Looks at the plan's settings again: (pending, not followed) counts for the metrics.
    std::pair<size_t, size_t> watchPending(const Plan& plan, const Knobs& knobs, const std::set<std::string>* devices);
    std::function<std::vector<std::string>()> candidates_;
};

}  // namespace rxtune
