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
#include "apply/lifecycle.hpp"
#include "apply/prepare.hpp"
#include "metrics/metrics.hpp"
#include "profile/profile.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "knobs/family.hpp"
#include "sys/signals.hpp"

namespace rxtune {

class Reconciler {
public:
    enum class Why { kStart, kEvent, kDrift, kReload, kAuto };

    // services: what the families' backends work through beyond files and netlink (XDP steering,
    // NAPI kthreads); a plan needing one that is missing is refused.
    Reconciler(FileTree& fs, NetlinkSource& nl, Services services, std::string stateDir, Metrics& metrics)
        : fs_(fs), nl_(nl), services_(std::move(services.with<NetlinkSource>(&nl))), store_(std::move(stateDir)), metrics_(metrics) {}
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
    // Where the families' run files go (the IRQ family's pinned-irqs, which irqbalance's policy
    // script reads); empty: nowhere.
    void setRunDir(std::string runDir) { runDir_ = std::move(runDir); }
    // Who the families' signals go through (irqbalance's rescan; tests: a recorder; default: the system).
    void useSignals(ProcessSignals& signals) { signals_ = &signals; }
    // The families' monotonic time (the IRQ family's interrupt rate; tests: a fixed one; default: the system's).
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
    Services services_;
    JournalStore store_;
    Metrics& metrics_;
    const Profile* profile_ = nullptr;
    const std::vector<std::string>* interfaces_ = nullptr;
    std::vector<std::string> steered_;
    std::string runDir_;
    // The families' hooks and their memory from run to run; made at the first run, once the run
    // directory, signals and clock are set.
    std::optional<Lifecycle> lifecycle_;
    Lifecycle& lifecycle();
    // Settings the kernel refused (managed IRQs), until their device changes: id -> its device.
    std::map<std::string, std::string> refused_;
    std::set<std::string> refusedIds_;  // the same ids, as the planner takes them
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
