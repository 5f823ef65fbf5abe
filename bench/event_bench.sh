#!/usr/bin/env bash
# Benchmark: the daemon at node scale. One veth `sq0` is steered (mode rps); around it sit 0 or
# OTHERS devices that match nothing (veth pairs, as a Kubernetes node's pods bring).
#   1. re-create -> steered: `sq0` is deleted and created again R times; the time runs from the
#      start of `ip link add` until its rps_flow_cnt is set (polled from inside the netns, no fork),
#      and is split in two: the `ip link add` command itself, and the rest (the daemon's part);
#   2. churn: 1000 link events on devices that match nothing (down, up, add, del); the daemon's
#      CPU time over them (from /proc/PID/schedstat, nanoseconds);
#   3. journal saves (fsync'd, counted with strace) for 10 queue-count changes and 10 resets of a
#      knob whose original is journaled already (rows with no other devices).
# Both device counts run in the same invocation, in ROUNDS rounds; with
# BASELINE_BIN=path/to/an/older/rxtune the older build runs the same rounds beside it, the order of
# the builds alternating from round to round. Figures: medians over the rounds, with min-max.
# Usage: bench/event_bench.sh [R] [OTHERS] [ROUNDS]   (defaults 20, 2000, 3; needs root; cleans up after itself)
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-20}
OTHERS=${2:-2000}
ROUNDS=${3:-3}
BIN=$(realpath "${RXTUNE_BIN:-build/agent/rxtune}")
PY=/usr/bin/python3
WORK=$(mktemp -d)
NS=""
dpid=""
cleanup() {
  [ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null || true
  [ -n "$NS" ] && ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }

cat > "$WORK/p.yaml" <<'YAML'
include: single-queue-gateway
match:
  interfaces: ['sq*']
  virtual: include
steering:
  mode: rps
YAML

# Waits (up to 10 s) until the CPUs are idle: the kernel frees a deleted netns's devices in the
# background, and a round must not measure the round before it.
quiesce() {
  for _ in $(seq 50); do
    local a b
    a=$(head -1 /proc/stat); sleep 0.2; b=$(head -1 /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN {
      split(a, x); split(b, y); t = 0; for (i = 2; i <= 11; i++) t += y[i] - x[i]
      idle = (y[5] - x[5]) + (y[6] - x[6]); exit !(t > 0 && (t - idle) / t < 0.1) }' && return 0
  done
}

# One round: a fresh netns with $2 other devices, the daemon $1 in it, then both measurements.
# Prints "p50 p99 max ip_add_p99 after_add_p99 churn_ms saves".
round() {
  local bin=$1 others=$2
  NS=rxt-ebench-$$-$RANDOM
  ip netns add "$NS"
  ip -n "$NS" link set lo up
  if [ "$others" -gt 0 ]; then
    for ((i = 0; i < others / 2; i++)); do echo "link add o$i type veth peer name p$i"; done > "$WORK/batch"
    ip -n "$NS" -batch "$WORK/batch"
  fi
  rm -rf "$WORK/state" "$WORK/run"
  cat > "$WORK/rxtune.yaml" <<YAML
profile: $WORK/p.yaml
listen: 127.0.0.1:19885
drift_interval: 600s
metrics_interval: 600s
on_stop: revert
state_dir: $WORK/state
run_dir: $WORK/run
YAML
  ip netns exec "$NS" "$bin" daemon --config "$WORK/rxtune.yaml" 2>"$WORK/daemon.log" &
  dpid=$!
  for _ in $(seq 300); do
    grep -q "running:" "$WORK/daemon.log" && break
    sleep 0.05
  done
  grep -q "running:" "$WORK/daemon.log" || { cat "$WORK/daemon.log" >&2; exit 1; }
  quiesce
  # 1. Re-create -> steered.
  local lat
  lat=$(ip netns exec "$NS" "$PY" - "$R" <<'PY'
import subprocess, sys, time
n = int(sys.argv[1])
lat = []
path = "/sys/class/net/sq0/queues/rx-0/rps_flow_cnt"
for i in range(n):
    t0 = time.perf_counter()
    subprocess.run(["ip", "link", "add", "sq0", "type", "veth", "peer", "name", "sq1"], check=True)
    t1 = time.perf_counter()
    while True:
        try:
            with open(path) as f:
                if f.read().strip() != "0":
                    break
        except OSError:
            pass
        if time.perf_counter() - t0 > 10:
            sys.exit("sq0 not steered within 10 s")
        time.sleep(0.0002)
    t2 = time.perf_counter()
    lat.append(((t2 - t0) * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000))
    subprocess.run(["ip", "link", "del", "sq0"], check=True)
    time.sleep(0.05)
def q(col, p):
    s = sorted(x[col] for x in lat)
    return s[min(len(s) - 1, int(p * len(s)))]
# total p50, p99, max; then p99 of its two parts: the `ip link add` command, and the rest (the daemon)
print(f"{q(0, 0.5):.1f} {q(0, 0.99):.1f} {q(0, 1):.1f} {q(1, 0.99):.1f} {q(2, 0.99):.1f}")
PY
)
  # 2. Churn of devices that match nothing: 1000 events, the daemon's CPU time over them.
  local churn="-"
  if [ "$others" -gt 0 ]; then
    : > "$WORK/churn"
    for ((i = 0; i < 250; i++)); do
      k=$((i % (others / 2)))
      echo "link set o$k down" >> "$WORK/churn"
      echo "link set o$k up" >> "$WORK/churn"
    done
    for ((i = 0; i < 125; i++)); do
      echo "link add x$i type veth peer name y$i" >> "$WORK/churn"
    done
    for ((i = 0; i < 125; i++)); do echo "link del x$i" >> "$WORK/churn"; done
    sleep 0.5
    # The timers are at 600 s: idle, the daemon uses no CPU, so what it uses here is the events'.
    local t0 t1
    t0=$(awk '{print $1}' "/proc/$dpid/schedstat")
    ip -n "$NS" -batch "$WORK/churn"
    sleep 2
    t1=$(awk '{print $1}' "/proc/$dpid/schedstat")
    churn=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) / 1e6}')
  fi
  # 3. What a change costs the journal: 10 queue-count changes (a new original each time, or one
  #    forgotten), then 10 resets of a knob whose original is on disk; fsync'd journal saves counted.
  local saves="-"
  if [ "$others" -eq 0 ] && command -v strace >/dev/null; then
    ip -n "$NS" link add sqq numrxqueues 2 type veth peer name sqr
    ip netns exec "$NS" ethtool -L sqq rx 1
    sleep 0.3
    strace -f -e trace=rename -p "$dpid" -o "$WORK/strace" 2>/dev/null &
    local spid=$!
    sleep 0.3
    for _ in 1 2 3 4 5; do
      ip netns exec "$NS" ethtool -L sqq rx 2; sleep 0.2
      ip netns exec "$NS" ethtool -L sqq rx 1; sleep 0.2
    done
    for _ in $(seq 10); do
      ip netns exec "$NS" sh -c 'echo 0 > /sys/class/net/sqq/queues/rx-0/rps_flow_cnt'
      ip -n "$NS" link set sqq down; ip -n "$NS" link set sqq up; sleep 0.2
    done
    kill "$spid"; wait "$spid" 2>/dev/null || true
    saves=$(grep -c 'journal.json")' "$WORK/strace" || true)
  fi
  kill "$dpid"; wait "$dpid" 2>/dev/null || true; dpid=""
  # The devices go one by one (each `link del` waits for the kernel), not in the background.
  if [ "$others" -gt 0 ]; then
    for ((i = 0; i < others / 2; i++)); do echo "link del o$i"; done > "$WORK/batch"
    ip -n "$NS" -batch "$WORK/batch"
  fi
  ip netns del "$NS"; NS=""
  echo "$lat $churn $saves"
}

builds=("new:$BIN")
[ -n "${BASELINE_BIN:-}" ] && builds=("old:$(realpath "$BASELINE_BIN")" "${builds[@]}")
# ROUNDS rounds; in each, every device count and build once, the builds' order alternating.
declare -A rows
for ((r = 0; r < ROUNDS; r++)); do
  for others in 0 "$OTHERS"; do
    order=("${builds[@]}")
    if (( r % 2 == 1 )); then order=(); for ((i = ${#builds[@]} - 1; i >= 0; i--)); do order+=("${builds[$i]}"); done; fi
    for b in "${order[@]}"; do
      name=${b%%:*}; bin=${b#*:}
      rows["$name $others"]+="$(round "$bin" "$others");"
    done
  done
done
# median (min-max) of field $2 over the rounds in $1 ("a b c d e;a b c d e;...")
stat() {
  tr ';' '\n' <<<"$1" | grep . | awk -v f="$2" '{print $f}' | sort -g |
    awk '{v[NR] = $1} END {if (v[1] == "-") {print "-"; exit} printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR]}'
}
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $R re-creations per round, $ROUNDS interleaved rounds, median (min-max) over rounds"
printf '%-6s %6s %-18s %-18s %-18s %-18s %-20s %s\n' build others p50_ms p99_ms ip_add_p99_ms after_add_p99_ms churn_cpu_ms journal_saves
for others in 0 "$OTHERS"; do
  for b in "${builds[@]}"; do
    name=${b%%:*}
    v=${rows["$name $others"]}
    printf '%-6s %6s %-18s %-18s %-18s %-18s %-20s %s\n' "$name" "$others" "$(stat "$v" 1)" "$(stat "$v" 2)" \
      "$(stat "$v" 4)" "$(stat "$v" 5)" "$(stat "$v" 6)" "$(stat "$v" 7)"
  done
done
