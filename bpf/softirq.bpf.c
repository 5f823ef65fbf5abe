// SPDX-License-Identifier: GPL-2.0
/* Exact per-CPU NET_RX softirq time, NAPI poll sizes, and work done by XDP cpumap kthreads. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "softirq_shared.h"

char LICENSE[] SEC("license") = "GPL";

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct rxtune_softirq_stats);
} stats SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} entered SEC(".maps");

static __always_inline struct rxtune_softirq_stats *cpu_stats(void)
{
    __u32 zero = 0;
    return bpf_map_lookup_elem(&stats, &zero);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(net_rx_entry, unsigned int vec_nr)
{
    __u32 zero = 0;
    __u64 *ts;

    if (vec_nr != NET_RX_SOFTIRQ)
        return 0;
    ts = bpf_map_lookup_elem(&entered, &zero);
    if (ts)
        *ts = bpf_ktime_get_ns();
    return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(net_rx_exit, unsigned int vec_nr)
{
    __u32 zero = 0;
    __u64 *ts;
    struct rxtune_softirq_stats *st;

    if (vec_nr != NET_RX_SOFTIRQ)
        return 0;
    ts = bpf_map_lookup_elem(&entered, &zero);
    st = cpu_stats();
    if (!ts || !st || !*ts)  /* attached mid-softirq: no entry time */
        return 0;
    st->net_rx_count++;
    st->net_rx_ns += bpf_ktime_get_ns() - *ts;
    *ts = 0;
    return 0;
}

SEC("tp_btf/napi_poll")
int BPF_PROG(napi_poll, struct napi_struct *napi, int work, int budget)
{
    struct rxtune_softirq_stats *st = cpu_stats();

    if (!st)
        return 0;
    st->napi_polls++;
    if (work > 0)
        st->napi_packets += work;
    if (work >= budget)
        st->budget_exhausted++;
    return 0;
}

SEC("tp_btf/xdp_cpumap_kthread")
int BPF_PROG(cpumap_kthread, int map_id, unsigned int processed, unsigned int drops, int sched,
             struct xdp_cpumap_stats *xdp_stats)
{
    struct rxtune_softirq_stats *st = cpu_stats();

    if (!st)
        return 0;
    st->cpumap_runs++;
    st->cpumap_packets += processed;
    return 0;
}
