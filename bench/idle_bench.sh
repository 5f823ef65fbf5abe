#!/usr/bin/env bash
# The daemon's idle cost on a crowded node: one steered veth (v0) among DEVICES veths nobody
# touches, the default intervals (metrics every 5 s, drift every 30 s), daemon CPU over SECONDS
# idle seconds (utime+stime of every thread from /proc/PID/stat), and how many rxtune_interface_info
# series it exports. This build beside an earlier one in the same run, in interleaved rounds (the
# order alternates), with no unmanaged devices and with DEVICES of them.
# The earlier build: BASE_BIN=path/to/rxtune, or built from BASE_REV (default 41c9af1, the last
# build before metrics_interfaces) into build-base/.
# Usage: bench/idle_bench.sh [ROUNDS] [DEVICES] [SECONDS]   (defaults 3, 2000, 30; needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3} DEVICES=${2:-2000} WINDOW=${3:-30}
NEW=${RXTUNE_BIN:-build/agent/rxtune}
BASE_REV=${BASE_REV:-41c9af1}
if [ -z "${BASE_BIN:-}" ]; then
  BASE_BIN=build-base/b/agent/rxtune
  if [ ! -x "$BASE_BIN" ]; then
    [ -d build-base/src ] || git worktree add -f build-base/src "$BASE_REV" >/dev/null
    (cd build-base/src && meson setup ../b --prefix=/usr -Dbuildtype=release -Ddebug=true >/dev/null && ninja -C ../b agent/rxtune >/dev/null)
  fi
fi
[ -x "$NEW" ] || { echo "build first: make build" >&2; exit 1; }
NS=rxt-idle-$$
WORK=$(mktemp -d)
dpid=
cleanup() {
  [ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

printf "include: single-queue-gateway\nmatch:\n  interfaces: [v0]\n  virtual: include\nsteering:\n  mode: rps\n" > "$WORK/p.yaml"
cat > "$WORK/rxtune.yaml" <<YAML
profile: $WORK/p.yaml
listen: 127.0.0.1:19891
on_stop: revert
state_dir: $WORK/state
run_dir: $WORK/run
YAML

hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# One measurement: start the daemon, let it settle (first apply, two samples), measure, stop.
measure() {
  local bin=$1
  ip netns exec "$NS" "$bin" daemon --config "$WORK/rxtune.yaml" 2>>"$WORK/daemon.log" &
  dpid=$!
  for _ in $(seq 100); do ip netns exec "$NS" curl -sf -o /dev/null http://127.0.0.1:19891/metrics && break; sleep 0.1; done
  sleep 12
  local series t0 t1
  series=$(ip netns exec "$NS" curl -s http://127.0.0.1:19891/metrics | grep -c '^rxtune_interface_info{' || true)
  t0=$(ticks "$dpid"); sleep "$WINDOW"; t1=$(ticks "$dpid")
  kill "$dpid"; wait "$dpid" 2>/dev/null || true; dpid=
  awk -v a="$t0" -v b="$t1" -v hz="$hz" -v w="$WINDOW" -v s="$series" 'BEGIN {printf "%.3f %d\n", (b - a) / hz / w * 100, s}'
}

echo "machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS rounds, ${WINDOW} s idle windows"
echo "base: $BASE_BIN ($BASE_REV), new: $NEW ($(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'))"
results=$WORK/results
for n in 0 "$DEVICES"; do
  ip netns add "$NS"
  ip -n "$NS" link set lo up
  ip -n "$NS" link add v0 type veth peer name v1
  for ((i = 0; i < n / 2; i++)); do echo "link add p$i type veth peer name q$i"; done > "$WORK/batch"
  [ "$n" -gt 0 ] && ip -n "$NS" -batch "$WORK/batch"
  for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order="base new"; else order="new base"; fi
    for which in $order; do
      bin=$NEW; [ "$which" = base ] && bin=$BASE_BIN
      read -r cpu series < <(measure "$bin")
      echo "$n $which $r $cpu $series" | tee -a "$results"
    done
  done
  ip netns del "$NS"
  # The kernel frees the devices of a deleted namespace in a worker: wait for it before measuring again.
  sleep 5
done
echo
echo "| unmanaged devices | build | daemon CPU, % of one core: median [min-max] | rxtune_interface_info series |"
echo "|---|---|---|---|"
for n in 0 "$DEVICES"; do
  for which in base new; do
    awk -v n="$n" -v w="$which" '$1 == n && $2 == w {print $4, $5}' "$results" | sort -n |
      awk -v n="$n" -v w="$which" '{v[NR] = $1; s = $2} END {printf "| %d | %s | %.3f [%.3f-%.3f] | %d |\n", n, w, v[int((NR + 1) / 2)], v[1], v[NR], s}'
  done
done
