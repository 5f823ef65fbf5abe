// The redirection table: flow hash -> worker. A pure function of the worker weights, so the share
// each worker gets is exact and testable without DPDK running (Seastar builds its software RSS the
// same way).
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.hpp"

namespace rxtune::dp {

inline constexpr unsigned kMaxWorkers = 16;      // the TAP PMD's queue limit
inline constexpr unsigned kMaxRetaSize = 65536;

// size: a power of two, at least the number of workers with a non-zero weight. Worker i gets
// round(size * w_i / sum w) entries (largest remainder, ties to the lower index), spread evenly
// through the table (smooth weighted round robin), never zero for a non-zero weight.
Result<std::vector<uint16_t>> buildReta(const std::vector<unsigned>& weights, unsigned size);

// Entries per worker in a table (for stats and tests).
std::vector<unsigned> retaShares(const std::vector<uint16_t>& reta, unsigned workers);

inline uint16_t retaLookup(const std::vector<uint16_t>& reta, uint32_t hash) {
    return reta[hash & (reta.size() - 1)];
}

}  // namespace rxtune::dp
