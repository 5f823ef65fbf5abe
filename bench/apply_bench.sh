#!/usr/bin/env bash
# Benchmark: rxtune apply/verify on N veth devices in a private netns, against the story's
# tune.sh way (one echo per file, sysctl -w) making the same writes, in the same run.
# Usage: bench/apply_bench.sh [DEVICES]   (default 1000; needs root; cleans up after itself)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
BIN=${RXTUNE_BIN:-build/agent/rxtune}
NS=rxt-bench-$$
WORK=$(mktemp -d)
cleanup() { ip netns del "$NS" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
ip netns add "$NS"
for ((i = 0; i < N / 2; i++)); do echo "link add b$i type veth peer name p$i"; done > "$WORK/batch"
ip -n "$NS" -batch "$WORK/batch"

cat > "$WORK/bench.yaml" <<'YAML'
include: single-queue-gateway
match:
  interfaces: ['b*', 'p*']
  virtual: include
steering:
  mode: rps
sysctl:
  net.core.somaxconn: 8192
YAML
ncpu=$(nproc)
mask=$(printf '%x' $(( (1 << ncpu) - 1 )))

ms() { date +%s%N; }
run_ns() { ip netns exec "$NS" "$@"; }
args=(--state-dir "$WORK/state" --run-dir "$WORK/run")

t0=$(ms); out=$(run_ns "$BIN" apply --profile "$WORK/bench.yaml" "${args[@]}"); t1=$(ms)
writes1=$(grep -c '^  set ' <<<"$out" || true)
t2=$(ms); out2=$(run_ns "$BIN" apply --profile "$WORK/bench.yaml" "${args[@]}"); t3=$(ms)
writes2=$(grep -c '^  set ' <<<"$out2" || true)
t4=$(ms); run_ns "$BIN" verify "${args[@]}" >/dev/null; t5=$(ms)
t6=$(ms); run_ns "$BIN" revert "${args[@]}" >/dev/null; t7=$(ms)

# The shell way: what tune.sh does, one process per write, every time it runs.
cat > "$WORK/tune.sh" <<SH
#!/bin/sh
for q in /sys/class/net/*/queues/rx-*; do
  case \$q in /sys/class/net/lo/*) continue;; esac
  echo $mask > \$q/rps_cpus
  echo 32768 > \$q/rps_flow_cnt
done
sysctl -qw net.core.somaxconn=8192
SH
chmod +x "$WORK/tune.sh"
shwrites=$(( $(run_ns sh -c 'ls -d /sys/class/net/*/queues/rx-* | grep -vc /lo/') * 2 + 1 ))
t8=$(ms); run_ns "$WORK/tune.sh"; t9=$(ms)
t10=$(ms); run_ns "$WORK/tune.sh"; t11=$(ms)

msd() { echo $(( ($2 - $1) / 1000000 )); }
echo "devices: $N veth in one netns, $ncpu CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d)"
printf '%-34s %10s %8s\n' "what" "wall ms" "writes"
printf '%-34s %10s %8s\n' "rxtune apply (first)" "$(msd $t0 $t1)" "$writes1"
printf '%-34s %10s %8s\n' "rxtune apply (second)" "$(msd $t2 $t3)" "$writes2"
printf '%-34s %10s %8s\n' "rxtune verify" "$(msd $t4 $t5)" "0"
printf '%-34s %10s %8s\n' "rxtune revert" "$(msd $t6 $t7)" "-"
printf '%-34s %10s %8s\n' "tune.sh (first)" "$(msd $t8 $t9)" "$shwrites"
printf '%-34s %10s %8s\n' "tune.sh (second)" "$(msd $t10 $t11)" "$shwrites"
