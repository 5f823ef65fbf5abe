// BpfGovernor: keeps the softirq accounting's own cost bounded. Its programs run on every
// softirq (about 130 ns per NET_RX softirq on the lab VM, docs/BENCHMARKS.md), which is noise on
// a NIC that batches with NAPI and a real loss where every packet is its own softirq (veth, tap,
// a flood onto one CPU). Pure: fed /proc/softirqs' NET_RX counts at each metrics sample.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace rxtune {

struct GovernorStep {
    enum class Action { kNone, kPause, kResume };
    Action action = Action::kNone;
    unsigned cpu = 0;   // the CPU with the highest NET_RX softirq rate
    double rate = 0;    // its NET_RX softirqs per second
    std::string detail;  // for the log, when action is not kNone
};

class BpfGovernor {
public:
    // maxRate: NET_RX softirqs per second on one CPU above which the programs are detached; they
    // come back when every CPU has stayed at or below half of that for `calm` samples.
    explicit BpfGovernor(double maxRate, unsigned calm = 3) : maxRate_(maxRate), calm_(calm) {}

    // at: seconds (monotonic); counts: cumulative NET_RX softirqs per CPU; attached: the programs'
    // state now.
    GovernorStep step(double at, const std::map<unsigned, std::uint64_t>& counts, bool attached);

private:
    double maxRate_;
    unsigned calm_;
    unsigned quiet_ = 0;
    double lastAt_ = -1;
    std::map<unsigned, std::uint64_t> last_;
};

}  // namespace rxtune
