// Signals rxtune sends to other processes (irqbalance's rescan), behind an interface so that a
// test on a fixture tree never signals a real process.
#pragma once

#include <string>

#include "core/result.hpp"

namespace rxtune {

class ProcessSignals {
public:
    virtual ~ProcessSignals() = default;
    // SIGHUP to pid, only while that pid is still the process named comm (pids are reused).
    virtual Result<void> hangUp(int pid, const std::string& comm) = 0;
};

class SystemProcessSignals final : public ProcessSignals {
public:
    Result<void> hangUp(int pid, const std::string& comm) override;
};

}  // namespace rxtune
