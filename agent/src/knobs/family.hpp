// A knob family as one unit (like tuned's plugins): its identity scheme (id, path, labels), its
// planning, its backend (read, write, read back, revert) and its status view. The registry
// (knobs/registry.hpp) lists them; core code iterates it and never names a family.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/host_snapshot.hpp"
#include "core/knob.hpp"
#include "core/services.hpp"
#include "sys/netlink.hpp"
#include "core/setting.hpp"
#include "knobs/metrics_sink.hpp"
#include "knobs/plan_input.hpp"
#include "profile/profile.hpp"
#include "profile/section.hpp"
#include "state/journal.hpp"
#include "sys/clock.hpp"
#include "sys/file_tree.hpp"
#include "sys/signals.hpp"

namespace rxtune {

struct CpuTargets;

// What the core hands a family's hooks around a plan and its apply, in the one-shot commands and
// in the daemon's runs. `memory` is the family's own: the daemon carries it from run to run, a
// command starts each with an empty one.
struct HookContext {
    const FileTree& fs;
    const JournalStore& store;
    const std::string& runDir;  // where the run's files go ("": nowhere, tests)
    ProcessSignals& signals;
    const Clock& clock;
    bool daemon = false;  // the daemon tells others again later; a command may wait for them instead
    std::function<void(const char* level, const std::string&)> say;  // level: SD_WARNING, SD_INFO...
    Slots& memory;  // each family under its own slot (core/slots.hpp)
};
// Where an apply stands when a family is told of it.
enum class ApplyStage { kApplied, kFailed, kReverted };

// What every family's planning sees.
struct PlanInput {
    const Profile& profile;
    const HostSnapshot& snap;
    const PlanOptions& opts;
    const std::vector<const Nic*>& nics;  // the chosen devices, by ifindex
    const CpuSet& hostTargets;            // steering.cpus over the host (rps_default_mask)
};

// How one chosen device is steered, decided once by the planner for all families.
struct DeviceSteering {
    const Nic& nic;
    SteeringMode mode = SteeringMode::kNone;  // kRps, kXdp, kNapi, kBusyPoll; kNone: not steered
    CpuSet targets;
    std::string notes;  // "; why this, and that" (exclusions, cgroup, auto): appended to each family's reason
    // kBusyPoll: the CPU each RX NAPI's kthread polls on, in RX queue order (rx-0 first), and the
    // CPUs RPS fans the received packets out to from there (empty: none).
    std::vector<std::pair<NapiRole, unsigned>> pollers = {};
    // steering.busypoll.tx threaded: each TX-only NAPI (tx-N) and the poll CPU its kthread joins;
    // txByDevice: a TX queue names no NAPI with an id (virtio-net's TX NAPI has none, so napi-set
    // cannot name it): the device's `threaded` file starts every NAPI's kthread, and they are all
    // pinned to the one poll CPU, before rx-0 goes to busy-poll.
    std::vector<std::pair<NapiRole, unsigned>> txThreads = {};
    bool txByDevice = false;
    CpuSet fanout = {};
};

// The OS objects knobs live in: files under the tree, and what else a family's backend works
// through (core/services.hpp: netlink, XDP programs, NAPI kthreads). One that is missing makes the
// families that need it refuse (the error names what is missing).
struct KnobIo {
    FileTree& fs;
    Services services;
};

// What a family may read into the snapshot beyond what every plan reads.
struct SnapshotIo {
    const FileTree& fs;
    NetlinkSource& nl;
    Services services;  // what the families' backends work through, where a read needs it
};

class KnobFamily {
public:
    virtual ~KnobFamily() = default;
    // "sysctl", "queue", ...: the family of its keys (KnobKey::family), the journal's, logs and docs.
    virtual std::string_view name() const = 0;

    // Identity. id: what plans, logs and the journal show; path: FileTree-relative, unique per
    // knob (a family whose knob is not a file makes one up under its device).
    virtual std::string id(const KnobKey& k) const = 0;
    virtual std::string path(const KnobKey& k) const = 0;
    // The journal's edge: the key of a knob this family built (its path, and its id where the path
    // alone does not say all: an IRQ's owner); nullopt when it is not one of its.
    virtual std::optional<KnobKey> keyOf(std::string_view path, std::string_view id) const = 0;
    // A family whose keys are a whole tree (the sysctl family: every file under proc/sys/) is
    // asked for a path after every other, so that a family owning one file in that tree
    // (rps_default_mask) claims it without the tree's family naming it.
    virtual bool keysAreATree() const { return false; }

    // The `setting` label of rxtune_drift_corrections_total (the interface label is k.device).
    virtual std::string settingLabel(const KnobKey& k) const { return k.name; }

    // Reading: what this family's planning needs of the chosen devices that the snapshot does not
    // read for every plan (it is asked only when the profile uses the family).
    virtual Result<void> readInto(const Profile&, const SnapshotIo&, HostSnapshot&) const { return {}; }

    // detect: what the family reads for `rxtune detect` (all devices, and host facts).
    virtual Result<void> readDetect(const SnapshotIo&, HostSnapshot&) const { return {}; }
    virtual void detectHostJson(const HostSnapshot&, nlohmann::ordered_json& /*host*/) const {}
    virtual void detectHostText(const HostSnapshot&, std::ostream&) const {}

    // What the device will look like once this family's settings are in place, for the steering
    // decision and the other families (the RX IRQ on the CPU the plan puts it on). Default: as is.
    virtual void shapeDevice(const PlanInput&, Nic&) const {}

    // Planning: host-wide knobs before the devices, each chosen device, then per-CPU knobs.
    virtual Result<void> planHost(const PlanInput&, Plan&) const { return {}; }
    virtual Result<void> planDevice(const PlanInput&, const DeviceSteering&, Plan&) const { return {}; }
    virtual Result<void> planLate(const PlanInput&, Plan&) const { return {}; }

    // Backend. The default is a file under the tree.
    virtual bool fileBacked(const KnobKey&) const { return true; }
    virtual Result<std::string> read(const KnobIo& io, const KnobKey& k, const std::string& path) const;
    virtual Result<void> write(const KnobIo& io, const KnobKey& k, const std::string& path, const std::string& value) const;
    virtual bool exists(const KnobIo& io, const KnobKey& k, const std::string& path) const;
    virtual bool writable(const KnobIo& io, const KnobKey& k, const std::string& path) const;
    virtual std::string where(const KnobIo& io, const KnobKey& k, const std::string& path) const;  // errors
    // A write the kernel refuses for a reason of its own that makes the knob not rxtune's to set
    // (a managed IRQ): reported and skipped, not an apply failure. Default: every failure fails.
    virtual bool refusalIsKnobsOwn(const KnobKey&, const Error&) const { return false; }
    // Where the kernel's acceptance of a write is proof of what it holds (no read-back needed).
    virtual bool writeIsExact(const KnobKey&, ValueKind, const std::string& /*value*/, const Plan* /*plan*/) const { return false; }

    // A value in place (read back as written) that the kernel has not put into effect yet: an
    // x86 MSI vector without interrupt remapping moves at its next interrupt. `what` says so in
    // words; `against` counts what the kernel does against the value meanwhile (interrupts served
    // off the CPUs written): a pending value whose count grows between two looks is not pending
    // but not followed. nullopt: in effect (the default), or nothing to say.
    struct Pending {
        std::string what;
        std::uint64_t against = 0;
    };
    virtual std::optional<Pending> pending(const KnobIo&, const KnobKey&, const std::string& /*desired*/) const { return std::nullopt; }

    // detect: what this family knows of a device, as a key of its JSON object and as lines of
    // the table (indented four spaces). Default: nothing.
    virtual void detectJson(const Nic&, nlohmann::ordered_json& /*device*/) const {}
    virtual void detectText(const Nic&, std::ostream&) const {}

    // Originals a knob has without rxtune having written it: what the journal must say it was,
    // for the plan's settings not journaled yet (`journaled`, by path). Default: none.
    virtual std::vector<Original> inheritedOriginals(const Plan&, const Journal& /*before*/,
                                                     const std::set<std::string>& /*journaled*/) const {
        return {};
    }

    // Hooks: the core calls every family's around a run, in the registry's order, and names none.
    // Before a plan: what the family lends it from its memory (PlanMemory::families[name()]).
    // wholeHost: every device is read (not an event's alone).
    virtual void beforePlan(HookContext&, const Profile&, bool /*wholeHost*/, PlanMemory&) const {}
    // After the snapshot is read: what the family keeps of it for the next run.
    virtual void afterSnapshot(HookContext&, const Profile&, bool /*wholeHost*/, const HostSnapshot&) const {}
    // Before an apply's first write, and once it is over (applied, failed and undone, or reverted;
    // the profile is null after a revert): what others must be told.
    virtual void beforeWrites(HookContext&, const Plan&) const {}
    virtual void afterApply(HookContext&, const Profile*, ApplyStage) const {}
    // The daemon put back a value of this family someone else changed: its own series and words.
    // False where the family knows the mover as one rxtune works with, whose move is no drift
    // (irqbalance moving an IRQ before the rescan that bans it): counted in the family's series,
    // not in rxtune_drift_corrections_total.
    virtual bool driftCorrected(HookContext&, const Setting&, CounterSink&) const { return true; }
    // A knob another agent on the host moves on its own (irqbalance an IRQ's CPUs, until the
    // rescan that bans it): a command reads it again after the hooks before its writes (they may
    // have waited on that agent) and after its writes, and puts back what moved.
    virtual bool othersMove(const KnobKey&) const { return false; }
    // Who moved such a knob, in words ("irqbalance (pid 511), before the rescan that bans it").
    virtual std::string moverOf(HookContext&, const Setting&) const { return "someone else"; }
    // The family's own counters (name, help), registered with the daemon's metrics at start and
    // counted through the CounterSink driftCorrected is handed.
    struct CounterSpec {
        std::string name, help;
    };
    virtual std::vector<CounterSpec> counters() const { return {}; }
    // The family's own gauges of what a snapshot shows (name, help), and setting them from one; a
    // series not set again at the next snapshot is removed (a device gone).
    virtual std::vector<CounterSpec> gauges() const { return {}; }
    virtual void exportSnapshot(const HostSnapshot&, GaugeSink&) const {}

    // Status: how a setting of the applied profile shows a device's steering ("rps", "xdp",
    // "napi") and to which CPUs; nullopt: it does not say.
    struct SteeringView {
        std::string mode;
        CpuSet cpus;
        bool yields = false;  // another family's view of the same device wins over this one
    };
    virtual std::optional<SteeringView> steeringOf(const Setting&) const { return std::nullopt; }
};

// A family's place in the registry (knobs/registry.hpp): `const FamilyRegistration r{family, rank};`
// beside the family in its own unit. The families' units are linked whole (agent/meson.build), so
// nothing names them. rank: the planning order, unique; host-wide families 100-199, a device's
// 200-299, per-CPU ones from 300 (`grep -r FamilyRegistration agent/src/knobs` lists them).
struct FamilyRegistration {
    FamilyRegistration(const KnobFamily& family, int rank);
};

inline constexpr std::string_view kDefaultMaskSysctl = "net.core.rps_default_mask";
const SysctlValue* findSysctl(const Topology& host, const std::string& key);
// steering.rfs.flow_entries as the kernel sizes the table: rounded up to a power of two.
std::uint32_t flowTableSize(std::uint32_t entries);

// A setting of family f built from its key (id and path from the family).
Setting makeSetting(const KnobFamily& f, KnobKey key, ValueKind kind, std::string current, std::string desired, std::string why,
                    std::string raw = {});

}  // namespace rxtune
