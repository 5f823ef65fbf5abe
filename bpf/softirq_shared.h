/* Shared between softirq.bpf.c and the agent: per-CPU NET_RX accounting. Fixed-width types only. */
#ifndef RXTUNE_SOFTIRQ_SHARED_H
#define RXTUNE_SOFTIRQ_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct rxtune_softirq_stats {
    __u64 net_rx_count;      /* NET_RX softirq runs */
    __u64 net_rx_ns;         /* nanoseconds spent in them */
    __u64 napi_polls;        /* napi_poll calls */
    __u64 napi_packets;      /* packets those polls processed */
    __u64 budget_exhausted;  /* polls that used their whole budget (the time_squeeze story) */
    __u64 cpumap_runs;       /* cpumap kthread batches (work moved by XDP steering) */
    __u64 cpumap_packets;    /* packets they processed */
};

#endif
