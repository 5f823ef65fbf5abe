// What differs between the DPDK releases rxtune-dp builds against (Debian 12's 22.11, Debian 13's
// 24.11): the one place that knows.
#pragma once

#include <cstdint>

#include <rte_telemetry.h>
#include <rte_version.h>

namespace rxtune::dp {

// 23.03 renamed telemetry's u64 values to uint (the old names deprecated since).
inline int telArrayU64(rte_tel_data* d, std::uint64_t v) {
#if RTE_VERSION >= RTE_VERSION_NUM(23, 3, 0, 0)
    return rte_tel_data_add_array_uint(d, v);
#else
    return rte_tel_data_add_array_u64(d, v);
#endif
}

inline int telDictU64(rte_tel_data* d, const char* name, std::uint64_t v) {
#if RTE_VERSION >= RTE_VERSION_NUM(23, 3, 0, 0)
    return rte_tel_data_add_dict_uint(d, name, v);
#else
    return rte_tel_data_add_dict_u64(d, name, v);
#endif
}

}  // namespace rxtune::dp
