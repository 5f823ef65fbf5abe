// Parsers for /proc/net/softnet_stat and /proc/softirqs: per-CPU receive work counters.
#pragma once

#include <cstdint>
#include <map>
#include <vector>
#include <string_view>

#include "core/counters.hpp"
#include "core/result.hpp"

namespace rxtune {

// cpu -> row. Kernels since 5.10 print the CPU id in column 13; older ones print one row per
// online CPU in order, which `onlineCpus` (ascending) maps to ids.
Result<std::map<unsigned, SoftnetRow>> parseSoftnetStat(std::string_view text, const std::vector<unsigned>& onlineCpus);

// Per-CPU jiffies (CpuJiffies) from /proc/stat.
Result<std::map<unsigned, CpuJiffies>> parseProcStat(std::string_view text);

// cpu -> NET_RX softirq count from /proc/softirqs.
Result<std::map<unsigned, std::uint64_t>> parseNetRxSoftirqs(std::string_view text);

// Extends a wrapping 32-bit kernel counter into a monotonic 64-bit one.
class WrapCounter {
public:
    std::uint64_t update(std::uint32_t raw) {
        if (!seen_) {
            seen_ = true;
            total_ = raw;
        } else {
            total_ += static_cast<std::uint32_t>(raw - last_);  // modulo 2^32: right across a wrap
        }
        last_ = raw;
        return total_;
    }
    std::uint64_t total() const { return total_; }

private:
    bool seen_ = false;
    std::uint32_t last_ = 0;
    std::uint64_t total_ = 0;
};

}  // namespace rxtune
