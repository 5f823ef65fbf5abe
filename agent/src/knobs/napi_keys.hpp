// A knob of one NAPI instance (netdev napi-set): named by its device and its role (rx-0, tx-0,
// napi-N: core/nic.hpp), not by its id, which changes at a device reset. Shared by the families
// that write per NAPI (NAPI deferral, busy-poll).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/knob.hpp"
#include "core/nic.hpp"
#include "core/result.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

// The key of a NAPI's knob: KnobKey.queue/tx for rx-N and tx-N, KnobKey.napi for napi-N.
KnobKey napiRoleKey(std::string family, std::string device, std::string name, const NapiRole& role);
// The NAPI a key names; nullopt: a device-wide knob.
std::optional<NapiRole> napiRoleOf(const KnobKey& k);
// The made-up file of a NAPI's knob under its device: "napi/rx-0/threaded" (the journal's and
// plan's path; no such file exists).
inline constexpr std::string_view kNapiKnobDir = "napi/";
std::string napiKnobFile(const NapiRole& role, std::string_view name);
// "napi/rx-0/threaded" -> (rx-0, "threaded"); nullopt where it is not one.
std::optional<std::pair<NapiRole, std::string_view>> parseNapiKnobFile(std::string_view file);

// The NAPI instance that has the role on the device now, by asking the kernel (napi-get and
// queue-get): each read and write names it afresh, since a reset gives it a new id.
Result<NapiInfo> liveNapi(NetlinkSource& nl, const std::string& dev, const NapiRole& role);

}  // namespace rxtune
