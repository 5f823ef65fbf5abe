// rxtune_datapath_*: rxtune-dp's counters (from its telemetry socket) as Prometheus families.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "core/result.hpp"
#include "inventory/dp_telemetry.hpp"

namespace rxtune {

class DatapathMetrics {
public:
    explicit DatapathMetrics(prometheus::Registry& registry);
    // One read of one socket. An error sets rxtune_datapath_up{socket} to 0 and removes that
    // datapath's other series; a new pid restarts its counters.
    void update(const std::string& socket, const Result<DatapathStats>& stats);

    struct Live;  // the children of one datapath (public for the helpers in the .cpp)

private:
    prometheus::Family<prometheus::Gauge>& up_;
    prometheus::Family<prometheus::Gauge>& info_;
    prometheus::Family<prometheus::Gauge>& workerInfo_;
    prometheus::Family<prometheus::Counter>& rxPackets_;
    prometheus::Family<prometheus::Counter>& rxBytes_;
    prometheus::Family<prometheus::Counter>& rxNonIp_;
    prometheus::Family<prometheus::Counter>& rxBusy_;
    prometheus::Family<prometheus::Counter>& nicTx_;
    prometheus::Family<prometheus::Counter>& nicMissed_;
    prometheus::Family<prometheus::Counter>& workerPackets_;
    prometheus::Family<prometheus::Counter>& workerBytes_;
    prometheus::Family<prometheus::Counter>& drops_;
    prometheus::Family<prometheus::Counter>& workerBusy_;
    prometheus::Family<prometheus::Counter>& checksums_;
    prometheus::Family<prometheus::Gauge>& ring_;
    prometheus::Family<prometheus::Gauge>& mbufs_;
    std::map<std::string, std::shared_ptr<Live>> live_;  // by socket
};

}  // namespace rxtune
