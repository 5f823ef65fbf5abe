#!/usr/bin/env bash
# Benchmark the daemon: event-to-restored latency over N veth re-creations, idle RSS and CPU, and
# scrape time beside prometheus-node-exporter (softnet + netdev collectors) in the same run.
# Usage: bench/daemon_bench.sh [RECREATIONS]   (default 1000; needs root; cleans up after itself)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
BIN=${RXTUNE_BIN:-build/agent/rxtune}
NS=rxt-dbench-$$
WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
command -v prometheus-node-exporter >/dev/null || { echo "needs prometheus-node-exporter (make deps)" >&2; exit 1; }

ip netns add "$NS"
ip -n "$NS" link set lo up
printf "include: single-queue-gateway\nmatch:\n  interfaces: ['b*']\n  virtual: include\nsteering:\n  mode: rps\n" > "$WORK/p.yaml"
cat > "$WORK/rxtune.yaml" <<YAML
profile: $WORK/p.yaml
listen: 127.0.0.1:19881
drift_interval: 60s
metrics_interval: 5s
state_dir: $WORK/state
run_dir: $WORK/run
YAML
ip netns exec "$NS" "$BIN" daemon --config "$WORK/rxtune.yaml" 2>"$WORK/daemon.log" &
dpid=$!; pids+=("$dpid")
ip netns exec "$NS" prometheus-node-exporter --collector.disable-defaults --collector.softnet --collector.netdev \
  --web.listen-address=127.0.0.1:19100 2>/dev/null &
pids+=("$!")
for _ in $(seq 100); do
  ip netns exec "$NS" curl -sf -o /dev/null http://127.0.0.1:19881/metrics && \
  ip netns exec "$NS" curl -sf -o /dev/null http://127.0.0.1:19100/metrics && break
  sleep 0.1
done

# 1. Latency: `ip link add` starts -> the new device's rps_cpus is set (polled every 100 us).
#    An upper bound: it includes starting ip itself, which is reported beside it.
ip netns exec "$NS" python3 - "$N" > "$WORK/lat.txt" <<'PY'
import subprocess, sys, time
n = int(sys.argv[1])
lat, ipt = [], []
for i in range(n):
    t0 = time.perf_counter()
    subprocess.run(["ip", "link", "add", "b0", "type", "veth", "peer", "name", "c0"], check=True)
    ipt.append(time.perf_counter() - t0)
    path = "/sys/class/net/b0/queues/rx-0/rps_cpus"
    while True:
        try:
            with open(path) as f:
                if f.read().strip("0,\n"):
                    break
        except OSError:
            pass
        if time.perf_counter() - t0 > 5:
            print("timeout", file=sys.stderr); sys.exit(1)
        time.sleep(0.0001)
    lat.append(time.perf_counter() - t0)
    subprocess.run(["ip", "link", "del", "b0"], check=True)
lat.sort(); ipt.sort()
q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))] * 1000
print(f"{n} re-creations: p50 {q(lat, 0.50):.2f} ms, p99 {q(lat, 0.99):.2f} ms, max {lat[-1]*1000:.2f} ms "
      f"(of which the ip command itself: p50 {q(ipt, 0.50):.2f} ms)")
PY

# 2. Idle cost over 20 s after the storm.
sleep 2
ticks() { awk '{print $14 + $15}' "/proc/$dpid/stat"; }
t0=$(ticks); sleep 20; t1=$(ticks)
hz=$(getconf CLK_TCK)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$dpid/status")

# 3. Scrape time, 50 scrapes each, same run.
scrape() {
  ip netns exec "$NS" bash -c "for i in \$(seq 50); do curl -s -o /dev/null -w '%{time_total} %{size_download}\n' $1; done" |
    awk '{t += $1; s = $2} END {printf "%.2f ms mean, %d bytes", t / NR * 1000, s}'
}
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo "latency (device created -> steered): $(cat "$WORK/lat.txt")"
echo "daemon idle: RSS ${rss} KiB, CPU $(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN {printf "%.3f", (b - a) / hz / 20 * 100}') % of one core over 20 s"
echo "scrape rxtune:        $(scrape http://127.0.0.1:19881/metrics)"
echo "scrape node-exporter: $(scrape http://127.0.0.1:19100/metrics)"
echo "daemon histogram: $(ip netns exec "$NS" curl -s http://127.0.0.1:19881/metrics | grep -E '^rxtune_reapply_latency_seconds_(count|sum)' | tr '\n' ' ')"
