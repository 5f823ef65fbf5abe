#include "bpf/softirq_accounting.hpp"

#include <unistd.h>

#include <cstring>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/libbpf_log.hpp"
#include "softirq_shared.h"
#include "softirq.skel.h"

namespace rxtune {

static_assert(sizeof(rxtune_softirq_stats) == 7 * sizeof(std::uint64_t), "softirq_shared.h layout changed");

namespace {

std::string explain(int err) {
    if (err == EPERM || err == EACCES)
        return "permission denied: loading BPF needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)";
    return std::strerror(err);
}

}  // namespace

const char* toString(BpfAvailability a) {
    switch (a) {
        case BpfAvailability::kAvailable: return "available";
        case BpfAvailability::kNotSupported: return "not supported";
        case BpfAvailability::kError: return "error";
        case BpfAvailability::kPaused: return "paused";
        case BpfAvailability::kDisabled: return "disabled";
    }
    return "error";
}

Result<std::unique_ptr<SoftirqAccounting>> SoftirqAccounting::load() {
    routeLibbpfLog();
    if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
        return fail(ENOTSUP, "bpf", "/sys/kernel/btf/vmlinux", "the kernel has no BTF (CONFIG_DEBUG_INFO_BTF): tp_btf programs cannot load");
    clearLibbpfMessage();
    softirq_bpf* skel = softirq_bpf__open();
    if (!skel) return fail(errno, "bpf open", "softirq", lastLibbpfMessage());
    std::unique_ptr<SoftirqAccounting> out(new SoftirqAccounting(skel));
    if (int err = softirq_bpf__load(skel); err != 0)
        return fail(-err, "bpf load", "softirq", explain(-err));
    if (int err = softirq_bpf__attach(skel); err != 0)
        return fail(-err, "bpf attach", "softirq", explain(-err));
    out->attached_ = true;
    return out;
}

SoftirqAccounting::~SoftirqAccounting() { softirq_bpf__destroy(skel_); }

void SoftirqAccounting::pause() {
    if (!attached_) return;
    softirq_bpf__detach(skel_);
    attached_ = false;
}

Result<void> SoftirqAccounting::resume() {
    if (attached_) return {};
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return fail(-ncpu, "bpf", "possible CPUs");
    std::vector<std::uint64_t> zeros(static_cast<size_t>(ncpu), 0);
    std::uint32_t zero = 0;
    if (bpf_map__update_elem(skel_->maps.entered, &zero, sizeof zero, zeros.data(), zeros.size() * sizeof(std::uint64_t),
                             BPF_ANY) != 0)
        return fail(errno, "bpf map update", "entered");
    if (int err = softirq_bpf__attach(skel_); err != 0) return fail(-err, "bpf attach", "softirq", explain(-err));
    attached_ = true;
    return {};
}

Result<std::map<unsigned, CpuSoftirq>> SoftirqAccounting::read() const {
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return fail(-ncpu, "bpf", "possible CPUs");
    std::vector<rxtune_softirq_stats> values(static_cast<size_t>(ncpu));
    std::uint32_t zero = 0;
    if (bpf_map__lookup_elem(skel_->maps.stats, &zero, sizeof zero, values.data(),
                             values.size() * sizeof(rxtune_softirq_stats), 0) != 0)
        return fail(errno, "bpf map lookup", "stats");
    std::map<unsigned, CpuSoftirq> out;
    for (size_t c = 0; c < values.size(); ++c) {
        const auto& v = values[c];
        out[static_cast<unsigned>(c)] = {v.net_rx_count, v.net_rx_ns, v.napi_polls, v.napi_packets,
                                         v.budget_exhausted, v.cpumap_runs, v.cpumap_packets};
    }
    return out;
}

BpfProbe probeSoftirqAccounting() {
    auto acc = SoftirqAccounting::load();
    if (acc) return {BpfAvailability::kAvailable, ""};
    const int code = acc.error().code;
    if (code == ENOTSUP || code == EOPNOTSUPP || code == ENOENT)
        return {BpfAvailability::kNotSupported, acc.error().message()};
    return {BpfAvailability::kError, acc.error().message()};
}

}  // namespace rxtune
