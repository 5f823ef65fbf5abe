// AutoControl: steering mode auto in the daemon: one state machine per steered interface, fed a
// reading per tick of auto's own clock (steering.auto.interval, not metrics_interval); a change
// of mind is applied through a callback, and a candidate that cannot be put in place is skipped
// for the next.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apply/prepare.hpp"
#include "daemon/bpf_control.hpp"
#include "metrics/metrics.hpp"
#include "planner/auto_steer.hpp"

namespace rxtune {

class AutoControl {
public:
    explicit AutoControl(Metrics& metrics) : metrics_(metrics) {}

    // apply: carries the inputs out (a reconcile); false when it failed (its writes undone).
    using Apply = std::function<bool(const AutoInputs&)>;

    // One tick: takes the counters (snap: the steered NICs'; bpf: the programs' NET_RX time where
    // attached; the rest read from fs) and steps.
    void sample(const Profile& profile, const FileTree& fs, const HostSnapshot& snap, const std::optional<BpfControl::Reading>& bpf,
                const std::vector<std::string>& steered, const Apply& apply);
    // The same with the reading given: the first one only sets the baseline.
    void step(const Profile& profile, const FileTree& fs, const HostSnapshot& snap, AutoRaw raw,
              const std::vector<std::string>& steered, const Apply& apply);

    void setThresholds(const AutoThresholds& t);
    void clear();  // the profile is no longer mode auto: machines and their gauges go
    const AutoInputs& inputs() const { return in_; }
    const AutoSteer* machine(const std::string& interface) const;
    // The last decision each interface's machine took, as logged ("keep", "better", the numbers).
    struct Said {
        std::string decision, reason, detail;
    };
    const std::map<std::string, Said>& said() const { return said_; }

private:
    void log(const std::string& name, const AutoSteer& machine, const AutoDecision& d, const AutoScope& scope);

    Metrics& metrics_;
    std::map<std::string, AutoSteer> machines_;
    AutoInputs in_;
    std::optional<AutoRaw> last_;
    std::map<std::string, Said> said_;
};

}  // namespace rxtune
