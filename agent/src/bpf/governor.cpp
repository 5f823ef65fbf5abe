#include "bpf/governor.hpp"

#include "core/text.hpp"

namespace rxtune {

GovernorStep BpfGovernor::step(double at, const std::map<unsigned, std::uint64_t>& counts, bool attached) {
    GovernorStep g;
    const double dt = at - lastAt_;
    const bool first = lastAt_ < 0 || dt <= 0;
    if (!first) {
        for (const auto& [cpu, n] : counts) {
            auto prev = last_.find(cpu);
            if (prev == last_.end() || n < prev->second) continue;  // CPU came online, or a counter reset
            const double rate = static_cast<double>(n - prev->second) / dt;
            if (rate > g.rate) {
                g.rate = rate;
                g.cpu = cpu;
            }
        }
    }
    last_ = counts;
    lastAt_ = at;
    if (first) return g;
    const std::string where = "CPU " + std::to_string(g.cpu) + " runs " + rounded(g.rate) + " NET_RX softirqs/s";
    if (attached) {
        quiet_ = 0;
        if (g.rate > maxRate_) {
            g.action = GovernorStep::Action::kPause;
            g.detail = where + ", above bpf_max_softirq_rate " + rounded(maxRate_) +
                       ": per-softirq accounting would cost that CPU throughput; paused, /proc/stat softirq time stands in";
        }
        return g;
    }
    if (g.rate > maxRate_ / 2) {
        quiet_ = 0;
        return g;
    }
    if (++quiet_ >= calm_) {
        quiet_ = 0;
        g.action = GovernorStep::Action::kResume;
        g.detail = where + " (at most " + rounded(maxRate_ / 2) + " for " + std::to_string(calm_) + " samples): resumed";
    }
    return g;
}

}  // namespace rxtune
