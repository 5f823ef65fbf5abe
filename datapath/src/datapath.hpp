// rxtune-dp's runtime: EAL, the NIC port (one RX queue) and the TAP port (one queue pair per
// worker), the RX core and the workers, telemetry, and the staged shutdown.
#pragma once

#include "config.hpp"
#include "core/result.hpp"

namespace rxtune::dp {

// Runs until SIGINT/SIGTERM, then stops in stages (RX, workers drain, TX ring, ports) and prints
// the final counters. Returns the process exit code; setup errors come back as an Error.
// prefetch: prefetch_next_mbufs as resolved for this host (choosePrefetch()).
Result<int> runDatapath(const DpConfig& config, const PrefetchChoice& prefetch);

}  // namespace rxtune::dp
