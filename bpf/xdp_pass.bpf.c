// SPDX-License-Identifier: GPL-2.0
// A pass-through XDP program standing for someone else's in the tests (an XDP program rxtune did
// not attach, which mode auto must leave alone). Not installed.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
