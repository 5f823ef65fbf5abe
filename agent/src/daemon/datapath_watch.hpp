// DatapathWatch: the rxtune-dp instances the config names, read over their telemetry sockets each
// metrics interval into the datapath metrics; a change between up and down is logged once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "metrics/datapath_metrics.hpp"

namespace rxtune {

class DatapathWatch {
public:
    explicit DatapathWatch(DatapathMetrics& metrics) : metrics_(metrics) {}
    void sample(const std::vector<std::string>& sockets);
    bool up(const std::string& socket) const;

private:
    DatapathMetrics& metrics_;
    std::map<std::string, bool> up_;
};

}  // namespace rxtune
