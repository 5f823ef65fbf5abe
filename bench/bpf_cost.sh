#!/usr/bin/env bash
# What the daemon costs a saturated receive CPU, and what its BPF softirq accounting costs there.
# A veth flood pinned to CPU 0 (one NET_RX softirq per datagram, all on CPU 0; nothing listens, so
# the receive path runs to the UDP lookup and drops: the netns's Udp NoPorts counts the packets
# that got through). Interleaved rounds, same run: no daemon; the daemon with bpf_accounting: on;
# with the default bpf_accounting: auto (the governor pauses the programs above
# bpf_max_softirq_rate); with bpf_accounting: off. The daemon runs mode auto with thresholds it
# cannot reach, so it samples every second and never steers.
# Usage: bench/bpf_cost.sh [SECONDS] [ROUNDS]   (root, 2+ CPUs; cleans up after itself)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-5}
ROUNDS=${2:-4}
BIN=${RXTUNE_BIN:-build/agent/rxtune}
NET=10.234.0
. bench/veth_flood_lab.sh
printf "match:\n  interfaces: [fb]\n  virtual: include\nsteering:\n  mode: auto\n  xps: false\n  default_mask: false\n  auto: {rx_share: 100%%}\n" > "$WORK/p.yaml"
for mode in on auto off; do
  printf "profile: %s\nlisten: 127.0.0.1:19897\nmetrics_interval: 1s\non_stop: revert\ndatapaths: []\nstate_dir: %s\nrun_dir: %s\nbpf_dir: %s\nbpf_accounting: %s\n" \
    "$WORK/p.yaml" "$WORK/s" "$WORK/r" "$WORK/bpffs/x" "$mode" > "$WORK/$mode.yaml"
done
one() {
  local mode=$1
  if [ "$mode" != none ]; then
    ip netns exec "$B" "$BIN" daemon --config "$WORK/$mode.yaml" 2> "$WORK/daemon-$mode.log" &
    DAEMON=$!
  fi
  sleep 2
  local n0 n1 s0 s1
  n0=$(noports); s0=$(softirq0)
  ip netns exec "$A" taskset -c 0 "$FLOOD" send $NET.2 9000 "$T" 64 > /dev/null
  n1=$(noports); s1=$(softirq0)
  if [ -n "$DAEMON" ]; then kill -TERM "$DAEMON"; wait "$DAEMON" || true; DAEMON=; fi
  echo "$mode $(( (n1 - n0) / T )) $(( (s1 - s0) * 100 / $(getconf CLK_TCK) / T ))"
}
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS interleaved rounds of $T s"
for _ in $(seq "$ROUNDS"); do for m in none on auto off; do one "$m"; done; done > "$WORK/rows"
awk '{ r[$1] = r[$1] " " $2; n[$1]++; s[$1] += $3 }
     END {
       printf "%-14s %-44s %s\n", "daemon", "packets/s through the receive path (each round)", "cpu0 softirq %"
       split("none on auto off", order, " ")
       for (i = 1; i <= 4; i++) { m = order[i]; printf "%-14s %-44s %.0f\n", (m == "none" ? "no daemon" : "bpf " m), r[m], s[m] / n[m] }
     }' "$WORK/rows"
echo "governor (bpf_accounting: auto):"
grep -h "BPF softirq accounting" "$WORK/daemon-auto.log" | sort | uniq -c | sed 's/^/  /' || true
