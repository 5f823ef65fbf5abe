/* Shared between xdp_steer.bpf.c and the agent: XDP cpumap flow steering. Fixed-width types only. */
#ifndef RXTUNE_XDP_STEER_SHARED_H
#define RXTUNE_XDP_STEER_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define RXTUNE_XDP_MAX_SLOTS 256  /* flow hash -> slot -> target CPU */
#define RXTUNE_XDP_MAX_CPUS 1024

#endif
