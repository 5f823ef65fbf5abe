#!/usr/bin/env bash
# The story's tune.sh, written from its description, as the lab's peer for rxtune:
# RPS + RFS + XPS over all cores, netdev_max_backlog 300000, 256 MiB socket buffers, performance
# governor. Blanket and unjournaled, as such scripts are.
#   tune.sh device IFACE   per-device part (run inside the namespace that holds IFACE)
#   tune.sh host           host-global part (sysctls that only exist in the initial namespace)
set -eu
all_mask() { python3 -c "import os; print(format(sum(1 << c for c in os.sched_getaffinity(0) | set(range(os.cpu_count()))), 'x'))"; }
case "${1:-}" in
  device)
    dev=$2 mask=$(all_mask)
    for q in /sys/class/net/"$dev"/queues/rx-*; do
      echo "$mask" > "$q/rps_cpus"
      echo 32768 > "$q/rps_flow_cnt"
    done
    for q in /sys/class/net/"$dev"/queues/tx-*; do
      [ -w "$q/xps_cpus" ] && echo "$mask" > "$q/xps_cpus" 2>/dev/null || true
    done
    # socket buffer maxima for TCP are per namespace
    sysctl -qw net.ipv4.tcp_rmem="4096 131072 268435456" net.ipv4.tcp_wmem="4096 16384 268435456"
    ;;
  host)
    sysctl -qw net.core.netdev_max_backlog=300000 net.core.rps_sock_flow_entries=32768 \
      net.core.rmem_max=268435456 net.core.wmem_max=268435456
    for g in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do
      [ -e "$g" ] && echo performance > "$g"
    done
    true
    ;;
  *) echo "usage: tune.sh device IFACE | tune.sh host" >&2; exit 2 ;;
esac
