// SPDX-License-Identifier: GPL-2.0
/* XDP cpumap steering: a symmetric flow hash picks one of the chosen CPUs; the frame is redirected
 * to that CPU's cpumap kthread, where the kernel builds the skb and runs the stack. Non-IP frames
 * (ARP ...) and anything unparsed pass to the normal path. */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xdp_steer_shared.h"

char LICENSE[] SEC("license") = "GPL";

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define PROTO_TCP 6
#define PROTO_UDP 17

const volatile __u32 nr_slots = 1;  /* set before load: how many slots are in use */

struct {
    __uint(type, BPF_MAP_TYPE_CPUMAP);
    __uint(max_entries, RXTUNE_XDP_MAX_CPUS);
    __type(key, __u32);
    __type(value, struct bpf_cpumap_val);
} cpu_map SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, RXTUNE_XDP_MAX_SLOTS);
    __type(key, __u32);
    __type(value, __u32);
} slots SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, RXTUNE_XDP_MAX_CPUS);
    __type(key, __u32);
    __type(value, __u64);
} redirected SEC(".maps");  /* frames steered to each target CPU */

static __always_inline __u32 mix(__u32 h)
{
    h ^= h >> 16;
    h *= 0x7feb352d;
    h ^= h >> 15;
    h *= 0x846ca68b;
    h ^= h >> 16;
    return h;
}

/* XOR of the two addresses and of the two ports: the same value for both directions of a flow. */
static __always_inline int flow_hash(void *data, void *end, __u32 *out)
{
    struct ethhdr *eth = data;
    __u32 h = 0;
    __u8 proto;
    void *l4;

    if ((void *)(eth + 1) > end)
        return -1;
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *ip = (void *)(eth + 1);

        if ((void *)(ip + 1) > end || ip->ihl < 5)
            return -1;
        h = ip->saddr ^ ip->daddr;
        proto = ip->protocol;
        if (ip->frag_off & bpf_htons(0x3fff))  /* fragments: addresses only */
            proto = 0;
        l4 = (void *)ip + ip->ihl * 4;
    } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip6 = (void *)(eth + 1);
        int i;

        if ((void *)(ip6 + 1) > end)
            return -1;
        for (i = 0; i < 4; i++)
            h ^= ip6->saddr.in6_u.u6_addr32[i] ^ ip6->daddr.in6_u.u6_addr32[i];
        proto = ip6->nexthdr;  /* extension headers: addresses only */
        l4 = (void *)(ip6 + 1);
    } else {
        return -1;
    }
    if (proto == PROTO_TCP || proto == PROTO_UDP) {
        __u16 *ports = l4;

        if ((void *)(ports + 2) > end)
            return -1;
        h ^= (__u32)(ports[0] ^ ports[1]);
    }
    *out = mix(h ^ proto);
    return 0;
}

SEC("xdp")
int xdp_steer(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    __u32 h, slot, *cpu;
    __u64 *count;

    if (flow_hash(data, end, &h) < 0 || nr_slots == 0)
        return XDP_PASS;
    slot = h % nr_slots;
    cpu = bpf_map_lookup_elem(&slots, &slot);
    if (!cpu)
        return XDP_PASS;
    count = bpf_map_lookup_elem(&redirected, cpu);
    if (count)
        __sync_fetch_and_add(count, 1);
    return bpf_redirect_map(&cpu_map, *cpu, XDP_PASS);
}
