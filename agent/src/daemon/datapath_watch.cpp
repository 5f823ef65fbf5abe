#include "daemon/datapath_watch.hpp"

#include "daemon/log.hpp"
#include "inventory/dp_telemetry.hpp"

namespace rxtune {

void DatapathWatch::sample(const std::vector<std::string>& sockets) {
    for (const auto& socket : sockets) {
        auto stats = readDatapathTelemetry(socket);
        const bool isUp = stats.has_value();
        auto [it, first] = up_.emplace(socket, isUp);
        if ((first && isUp) || (!first && it->second != isUp)) {
            if (isUp) LOG_N("datapath: reading rxtune-dp (TAP " + stats->tap + ") at " + socket);
            else LOG_N("datapath: " + stats.error().message());
        }
        it->second = isUp;
        metrics_.update(socket, stats);
    }
}

bool DatapathWatch::up(const std::string& socket) const {
    auto it = up_.find(socket);
    return it != up_.end() && it->second;
}

}  // namespace rxtune
