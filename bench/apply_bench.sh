#!/usr/bin/env bash
# Benchmark: rxtune apply/verify on N veth devices in a private netns, against the story's
# tune.sh way (one echo per file, sysctl -w) making the same writes, in the same run.
# Usage: bench/apply_bench.sh [DEVICES] [ROUNDS]   (defaults 1000, 5; needs root; cleans up after itself)
# BASELINE_BIN=path/to/an/older/rxtune adds its rows, measured in the same rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
ROUNDS=${2:-5}
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
# Back to the kernel's defaults between rounds (not timed).
cat > "$WORK/reset.sh" <<'SH'
#!/bin/sh
for q in /sys/class/net/*/queues/rx-*; do echo 0 > $q/rps_cpus; echo 0 > $q/rps_flow_cnt; done
SH
chmod +x "$WORK/tune.sh" "$WORK/reset.sh"
shwrites=$(( $(run_ns sh -c 'ls -d /sys/class/net/*/queues/rx-* | grep -vc /lo/') * 2 + 1 ))
somax=$(run_ns sysctl -n net.core.somaxconn)

# One round of each, in alternating order (the VM is noisy): each "first" starts from defaults.
declare -A t
timed() { local k=$1; shift; local a b; a=$(ms); "$@" >/dev/null; b=$(ms); t[$k]+="$(( (b - a) / 1000000 )) "; }
# $1: the binary, $2: a prefix for its rows ("" for this build, "old " for BASELINE_BIN).
rxtune_round() {
  local bin=$1 p=$2 out
  local a b; a=$(ms); out=$(run_ns "$bin" apply --profile "$WORK/bench.yaml" "${args[@]}"); b=$(ms)
  t[${p}apply1]+="$(( (b - a) / 1000000 )) "; writes1=$(grep -c '^  set ' <<<"$out" || true)
  timed "${p}apply2" run_ns "$bin" apply --profile "$WORK/bench.yaml" "${args[@]}"
  timed "${p}verify" run_ns "$bin" verify "${args[@]}"
  timed "${p}revert" run_ns "$bin" revert "${args[@]}"
}
rxtune_rounds() {
  rxtune_round "$BIN" ""
  if [ -n "${BASELINE_BIN:-}" ]; then rxtune_round "$(realpath "$BASELINE_BIN")" "old "; fi
}
shell_round() {
  timed tune1 run_ns "$WORK/tune.sh"
  timed tune2 run_ns "$WORK/tune.sh"
  run_ns "$WORK/reset.sh"; run_ns sysctl -qw net.core.somaxconn="$somax"
}
for ((r = 0; r < ROUNDS; r++)); do
  if (( r % 2 == 0 )); then rxtune_rounds; shell_round; else shell_round; rxtune_rounds; fi
done

# median (min-max) of a list of ms
stat() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR] = $1} END {printf "%d (%d-%d)", v[int((NR + 1) / 2)], v[1], v[NR]}'; }
echo "devices: $N veth in one netns, $ncpu CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS interleaved rounds, median (min-max)"
printf '%-24s %18s %8s\n' "what" "wall ms" "writes"
printf '%-24s %18s %8s\n' "rxtune apply (first)" "$(stat "${t[apply1]}")" "$writes1"
printf '%-24s %18s %8s\n' "rxtune apply (second)" "$(stat "${t[apply2]}")" "0"
printf '%-24s %18s %8s\n' "rxtune verify" "$(stat "${t[verify]}")" "0"
printf '%-24s %18s %8s\n' "rxtune revert" "$(stat "${t[revert]}")" "-"
if [ -n "${BASELINE_BIN:-}" ]; then
  for k in apply1 apply2 verify revert; do
    case $k in apply1) w="apply (first)";; apply2) w="apply (second)";; *) w=$k;; esac
    printf '%-24s %18s %8s\n' "old rxtune $w" "$(stat "${t[old $k]}")" "-"
  done
fi
printf '%-24s %18s %8s\n' "tune.sh (first)" "$(stat "${t[tune1]}")" "$shwrites"
printf '%-24s %18s %8s\n' "tune.sh (second)" "$(stat "${t[tune2]}")" "$shwrites"
