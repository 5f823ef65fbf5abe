// Renders a HostSnapshot as the detect JSON document or as a human-readable table.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "inventory/snapshot.hpp"

namespace rxtune {

// What detect shows: the snapshot (only: those interfaces; empty: all), and what every family
// reads for detect.
Result<HostSnapshot> detectSnapshot(const FileTree& fs, NetlinkSource& nl, const std::vector<std::string>& only);

nlohmann::ordered_json toJson(const Topology& host);
nlohmann::ordered_json toJson(const Nic& nic);
nlohmann::ordered_json toJson(const HostSnapshot& snap);  // {"host": ..., "interfaces": [...]}
void printTable(const HostSnapshot& snap, std::ostream& out);

}  // namespace rxtune
