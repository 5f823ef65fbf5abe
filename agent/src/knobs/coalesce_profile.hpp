// nic.coalesce: the coalescing family's profile key, and the ethtool message its parameters are
// attributes of (the profile, detect and the fixtures use the same names).
#pragma once

#include <linux/ethtool_netlink.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "profile/profile.hpp"
#include "sys/netlink.hpp"

namespace rxtune {

inline constexpr std::string_view kCoalesceName = "coalesce";

inline const EthtoolMessage& coalesceMessage() {
    static const EthtoolMessage m{std::string(kCoalesceName),
                                  ETHTOOL_MSG_COALESCE_GET,
                                  ETHTOOL_MSG_COALESCE_SET,
                                  ETHTOOL_A_COALESCE_HEADER,
                                  {{ETHTOOL_A_COALESCE_RX_USECS, "rx_usecs", false},
                                   {ETHTOOL_A_COALESCE_RX_MAX_FRAMES, "rx_frames", false},
                                   {ETHTOOL_A_COALESCE_TX_USECS, "tx_usecs", false},
                                   {ETHTOOL_A_COALESCE_TX_MAX_FRAMES, "tx_frames", false},
                                   {ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, "adaptive_rx", true},
                                   {ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX, "adaptive_tx", true}}};
    return m;
}

// What a profile asks: the parameters it names, flags as 0/1.
struct CoalesceIntent {
    std::map<std::string, std::uint32_t> values;
    Location where;
};
inline constexpr Slot<CoalesceIntent> kCoalesceSection{"nic.coalesce"};

inline const CoalesceIntent* coalesceIntentOf(const Profile& p) { return p.section(kCoalesceSection); }

}  // namespace rxtune
