// Signals rxtune sends to other processes (irqbalance's rescan), and what it asks irqbalance,
// behind an interface so that a test on a fixture tree never signals or asks a real process.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "core/result.hpp"

namespace rxtune {

class ProcessSignals {
public:
    virtual ~ProcessSignals() = default;
    // SIGHUP to pid, only while that pid is still the process named comm (pids are reused).
    virtual Result<void> hangUp(int pid, const std::string& comm) = 0;
    // The IRQs irqbalance `pid` has placed since it started or last rescanned: its control
    // socket's `stats` lists the IRQs it has put on CPUs (none before its first balancing pass,
    // none right after a rescan). nullopt: it could not be asked.
    virtual std::optional<std::set<int>> irqbalancePlaced(int pid) {
        (void)pid;
        return std::nullopt;
    }
};

// SIGHUP to `pid` carrying `value` (sigqueue: the daemon reads it from its signalfd), for
// `rxtune reload`'s request to the daemon.
Result<void> queueHangUp(int pid, int value);

class SystemProcessSignals final : public ProcessSignals {
public:
    Result<void> hangUp(int pid, const std::string& comm) override;
    // /run/irqbalance/irqbalance<PID>.sock, else its abstract fallback name, the listener's
    // credentials naming `pid`; "stats" sent with SCM_CREDENTIALS (irqbalance answers uid 0 only,
    // irqbalance.c sock_handle); 5 s to answer (it answers between passes).
    std::optional<std::set<int>> irqbalancePlaced(int pid) override;
};

}  // namespace rxtune
