#!/usr/bin/env bash
# Steering on a simulated single-queue device: a veth whose receive work all lands on the
# sender's CPU (veth delivers into the backlog of the CPU that transmits, as a one-queue NIC does
# on its IRQ CPU). The flood runs pinned to CPU 0 in netns A; the sink pinned to CPU 1 in netns B.
# Same run, three modes: no steering, RPS to CPU 1, XDP cpumap (generic) to CPU 1.
# Usage: bench/steer_bench.sh [SECONDS]   (needs root and 2+ CPUs; cleans up after itself)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-5}
BIN=${RXTUNE_BIN:-build/agent/rxtune}
FLOOD=build/bench/udp_flood
A=rxt-sa-$$ B=rxt-sb-$$
WORK=$(mktemp -d)
cleanup() { ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true; umount "$WORK/bpffs" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs"; exit 1; }
ip netns add "$A"; ip netns add "$B"
ip -n "$A" link add fa type veth peer name fb netns "$B"
ip -n "$A" addr add 10.233.0.1/24 dev fa; ip -n "$B" addr add 10.233.0.2/24 dev fb
ip -n "$A" link set fa up; ip -n "$B" link set fb up
mkdir -p "$WORK/bpffs"; mount -t bpf bpf "$WORK/bpffs"
args=(--state-dir "$WORK/state" --run-dir "$WORK/run" --bpf-dir "$WORK/bpffs/rxtune")
printf "match:\n  interfaces: [fb]\n  virtual: include\nsteering:\n  mode: rps\n  cpus: '1'\n  xps: false\n" > "$WORK/rps.yaml"
printf "match:\n  interfaces: [fb]\n  virtual: include\nsteering:\n  mode: xdp\n  cpus: '1'\n  xps: false\n" > "$WORK/xdp.yaml"

softirq0() { awk '/^cpu0 / {print $8}' /proc/stat; }   # softirq ticks of CPU 0
drops() { local s=0 a b rest; while read -r a b rest; do s=$((s + 16#$b)); done < /proc/net/softnet_stat; echo $s; }
measure() {
  local mode=$1 s0 s1 d0 d1 sent got
  s0=$(softirq0); d0=$(drops)
  ip netns exec "$B" taskset -c 1 "$FLOOD" sink 10.233.0.2 9000 $((T + 1)) > "$WORK/got" &
  local sink=$!
  sleep 0.3
  sent=$(ip netns exec "$A" taskset -c 0 "$FLOOD" send 10.233.0.2 9000 "$T" 64)
  wait $sink; got=$(cat "$WORK/got")
  s1=$(softirq0); d1=$(drops)
  awk -v m="$mode" -v sent="$sent" -v got="$got" -v t="$T" -v st=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" -v dr=$((d1 - d0)) \
    'BEGIN {printf "%-14s %10.0f %10.0f %12.1f %10.0f %8d\n", m, sent / t, got / t, st / hz / t * 100, (got ? st / hz * 1e9 / got : 0), dr}'
}
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $T s per mode, 64 flows of 64-byte UDP"
printf "%-14s %10s %10s %12s %10s %8s\n" mode "sent/s" "recv/s" "cpu0 softirq%" "ns/pkt" drops
measure "none"
ip netns exec "$B" "$BIN" apply -p "$WORK/rps.yaml" "${args[@]}" > /dev/null
measure "rps"
ip netns exec "$B" "$BIN" revert "${args[@]}" > /dev/null
ip netns exec "$B" "$BIN" apply -p "$WORK/xdp.yaml" "${args[@]}" > /dev/null
measure "xdp-generic"
ip netns exec "$B" "$BIN" revert "${args[@]}" > /dev/null
