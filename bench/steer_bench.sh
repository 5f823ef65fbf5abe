#!/usr/bin/env bash
# Steering on a simulated single-queue device: a veth whose receive work all lands on the
# sender's CPU (veth delivers into the backlog of the CPU that transmits, as a one-queue NIC does
# on its IRQ CPU). The flood runs pinned to CPU 0 in netns A. Two scenarios, each with four modes
# in the same run (no steering, RPS to CPU 1, XDP cpumap (generic) to CPU 1, and `mode: auto`,
# where the rxtune daemon decides from what it measures):
#   busy  a sink pinned to CPU 1 in netns B receives every datagram: the steering target is busy
#   idle  nothing listens: the receive path runs to the UDP lookup and drops (counted as the
#         netns's Udp NoPorts), CPU 1 is idle: the case steering is for
# Usage: bench/steer_bench.sh [SECONDS] [SCENARIOS]   (root, 2+ CPUs; cleans up after itself)
#   SECONDS: measured seconds per mode (default 5); SCENARIOS: "busy idle" (default)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-5}
SCENARIOS=${2:-busy idle}
WARMUP=${AUTO_WARMUP:-25}   # seconds of flood before auto is measured: 3 samples, then the 15 s trial window
BIN=${RXTUNE_BIN:-build/agent/rxtune}
NET=10.233.0
. bench/veth_flood_lab.sh
args=(--state-dir "$WORK/state" --run-dir "$WORK/run" --bpf-dir "$WORK/bpffs/rxtune")
head="match:\n  interfaces: [fb]\n  virtual: include\nsteering:\n"
printf "$head  mode: rps\n  cpus: '1'\n  xps: false\n" > "$WORK/rps.yaml"
printf "$head  mode: xdp\n  cpus: '1'\n  xps: false\n" > "$WORK/xdp.yaml"
# auto with the shipped default thresholds; the daemon samples every second.
printf "$head  mode: auto\n  xps: false\n  default_mask: false\n" > "$WORK/auto.yaml"
printf "profile: %s\nlisten: 127.0.0.1:19898\nmetrics_interval: 1s\non_stop: revert\ndatapaths: []\nstate_dir: %s\nrun_dir: %s\nbpf_dir: %s\n" \
  "$WORK/auto.yaml" "$WORK/dstate" "$WORK/drun" "$WORK/bpffs/rxtune-d" > "$WORK/daemon.yaml"

drops() { local s=0 a b rest; while read -r a b rest; do s=$((s + 16#$b)); done < /proc/net/softnet_stat; echo $s; }
measure() {
  local scen=$1 mode=$2 s0 s1 d0 d1 n0 n1 sent got sink=
  s0=$(softirq0); d0=$(drops); n0=$(noports)
  if [ "$scen" = busy ]; then
    ip netns exec "$B" taskset -c 1 "$FLOOD" sink $NET.2 9000 $((T + 1)) > "$WORK/got" &
    sink=$!
    sleep 0.3
  fi
  sent=$(ip netns exec "$A" taskset -c 0 "$FLOOD" send $NET.2 9000 "$T" 64)
  if [ -n "$sink" ]; then wait $sink; got=$(cat "$WORK/got"); else n1=$(noports); got=$((n1 - n0)); fi
  s1=$(softirq0); d1=$(drops)
  awk -v s="$scen" -v m="$mode" -v sent="$sent" -v got="$got" -v t="$T" -v st=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" -v dr=$((d1 - d0)) \
    'BEGIN {printf "%-6s %-12s %10.0f %12.0f %14.1f %10.0f %8d\n", s, m, sent / t, got / t, st / hz / t * 100, (got ? st / hz * 1e9 / got : 0), dr}'
}
auto_measure() {
  local scen=$1
  ip netns exec "$B" ${DAEMON_WRAP:-} "$BIN" daemon --config "$WORK/daemon.yaml" 2> "$WORK/daemon.log" &
  DAEMON=$!
  for _ in $(seq 50); do grep -q "running:" "$WORK/daemon.log" && break; sleep 0.1; done
  # Load to decide on (the same flood, and the sink in the busy scenario), then the measured run.
  local sink=
  if [ "$scen" = busy ]; then
    ip netns exec "$B" taskset -c 1 "$FLOOD" sink $NET.2 9000 $((WARMUP + 1)) > /dev/null &
    sink=$!
  fi
  ip netns exec "$A" taskset -c 0 "$FLOOD" send $NET.2 9000 "$WARMUP" 64 > /dev/null
  [ -z "$sink" ] || wait "$sink"
  local mask; mask=$(ip netns exec "$B" cat /sys/class/net/fb/queues/rx-0/rps_cpus)
  measure "$scen" "auto"
  kill -TERM "$DAEMON"; wait "$DAEMON" || true; DAEMON=
  grep -o "auto fb: .*" "$WORK/daemon.log" | sed "s/^/         $scen: /" >> "$WORK/decisions" || true
  echo "         $scen: rps_cpus while measured: $mask" >> "$WORK/decisions"
}
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $T s per mode, 64 flows of 64-byte UDP; auto after a ${WARMUP} s warm-up"
printf "%-6s %-12s %10s %12s %14s %10s %8s\n" scen mode "sent/s" "processed/s" "cpu0 softirq%" "ns/pkt" drops
: > "$WORK/decisions"
for scen in $SCENARIOS; do
  measure "$scen" "none"
  ip netns exec "$B" "$BIN" apply -p "$WORK/rps.yaml" "${args[@]}" > /dev/null
  measure "$scen" "rps"
  ip netns exec "$B" "$BIN" revert "${args[@]}" > /dev/null
  ip netns exec "$B" "$BIN" apply -p "$WORK/xdp.yaml" "${args[@]}" > /dev/null
  measure "$scen" "xdp-generic"
  ip netns exec "$B" "$BIN" revert "${args[@]}" > /dev/null
  auto_measure "$scen"
done
echo "auto's decisions (daemon log):"
cat "$WORK/decisions"
