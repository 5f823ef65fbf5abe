// Clock: wall time (for the journal's generations and timestamps) and monotonic time (for
// rates, waits), behind an interface so that what depends on time can be tested with a fixed one.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

namespace rxtune {

class Clock {
public:
    virtual ~Clock() = default;
    virtual std::uint64_t wallNanoseconds() const = 0;  // since the epoch
    virtual double monotonicSeconds() const = 0;
    // Waits (a test clock moves its monotonic time instead).
    virtual void sleepFor(double seconds) const {
        if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    }
};

class SystemClock final : public Clock {
public:
    std::uint64_t wallNanoseconds() const override {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    }
    double monotonicSeconds() const override {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }
};

}  // namespace rxtune
