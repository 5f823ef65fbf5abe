// steering.flow_limit: the RPS flow limit family's profile key (knobs/flow_limit_family.cpp).
//   flow_limit: true                 the RPS targets and RX CPUs in net.core.flow_limit_cpu_bitmap
//   flow_limit: {table_len: 8192}    the same, each CPU's flow table that long (a power of two)
//   flow_limit: false                (or absent) the bitmap and the table length are left alone
#pragma once

#include <cstdint>
#include <optional>

#include "profile/profile.hpp"

namespace rxtune {

struct FlowLimitIntent {
    bool enabled = false;
    std::optional<std::uint32_t> tableLen;  // net.core.flow_limit_table_len; unset: as the kernel has it
    Location where;
};

inline constexpr Slot<FlowLimitIntent> kFlowLimit{"steering.flow_limit"};

// The kernel allocates a table of one byte per bucket for each CPU in the bitmap and takes only
// powers of two (flow_limit_table_len_sysctl); beyond 2^20 (1 MiB per CPU) the allocation is
// refused on a fragmented host.
inline constexpr std::uint32_t kFlowLimitMaxTableLen = 1u << 20;

}  // namespace rxtune
