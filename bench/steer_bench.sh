#!/usr/bin/env bash
# Steering on a simulated single-queue device: a veth whose receive work all lands on the
# sender's CPU (veth delivers into the backlog of the CPU that transmits, as a one-queue NIC does
# on its IRQ CPU). The flood runs pinned to CPU 0 in netns A. Each scenario runs four modes (no
# steering, RPS to CPU 1, XDP cpumap (generic) to CPU 1, and `mode: auto` with the shipped
# thresholds, where the rxtune daemon decides from what it measures), in interleaved rounds.
# Scenarios, a receive path and a target each:
#   idle       nothing listens: the receive path runs to the UDP lookup and drops (counted as the
#              netns's Udp NoPorts); CPU 1 is idle: the case steering is for
#   busy       a sink pinned to CPU 1 in netns B reads every datagram: the steering target is busy
#   nft-idle   receive-bound: conntrack plus $NFT_RULES netfilter rules every packet walks (a long
#   nft-busy   linear firewall), idle or busy target
#   tc-idle    receive-bound: $TC_FILTERS u32 classifiers on fb's ingress
#   tc-busy
#   rr-idle    request/response latency: an echo server on CPU 1 answers one datagram at a time
#   rr-shared  the same with a busy loop beside the echo server on CPU 1 (the application shares
#              the target CPU): throughput is answers/s, with p50/p99 latency beside it
# Modes ($MODES): none, RPS to CPU 1, XDP cpumap (generic) to CPU 1, threaded NAPI with the fb's
# kthread pinned to CPU 1 (needs NAPI on the veth: GRO=on), and auto (candidates $AUTO_CANDIDATES);
# also defer and napi-defer (nic.gro_flush_timeout / napi_defer_hard_irqs, $DEFER), and
# xdp-daemon (XDP to CPU 1 held by a running daemon with the shipped config, as auto's is: the
# static peer that carries the daemon's own cost).
# GRO=on turns GRO on fb for every mode (veth then receives in its own NAPI poll, on the sender's
# CPU as before); off (the default) is the path of the earlier runs.
# Usage: bench/steer_bench.sh [SECONDS] [SCENARIOS] [ROUNDS]   (root, 2+ CPUs; cleans up after itself)
#   SECONDS per mode (default 5); SCENARIOS (default "idle busy nft-idle nft-busy tc-idle");
#   ROUNDS (default 3). Rows go to $RESULTS (default build/steer-results.tsv), the chart beside it
#   (.svg, bench/steer_chart.py, python3-matplotlib from make bench-deps).
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-5}
SCENARIOS=${2:-idle busy nft-idle nft-busy tc-idle}
ROUNDS=${3:-3}
NFT_RULES=${NFT_RULES:-50}
TC_FILTERS=${TC_FILTERS:-100}
# Most seconds of flood before auto is measured: `sustain` (2 s) of saturation, then each trial
# until its result is clear, 15 s at most (the measured run starts as soon as the daemon has
# decided). The daemon runs with the shipped metrics_interval (5s; AUTO_METRICS_INTERVAL): mode
# auto samples on its own clock (steering.auto.interval, 250 ms).
WARMUP=${AUTO_WARMUP:-60}
BIN=${RXTUNE_BIN:-build/agent/rxtune}
GRO=${GRO:-off}
# veth takes a frame into its NAPI (and so into a threaded NAPI's kthread) only where GRO may
# take it: with TSO on the sender, only with rx-udp-gro-forwarding on the receiver (measured: the
# kthread got 0 ticks of a GRO-only flood, 287 of 300 with forwarding on).
GRO_UDP_FWD=${GRO_UDP_FWD:-off}
MODES=${MODES:-none rps xdp-generic napi auto}
AUTO_CANDIDATES=${AUTO_CANDIDATES:-}
RESULTS=${RESULTS:-build/steer-results.tsv}
NET=10.233.0
. bench/veth_flood_lab.sh
args=(--state-dir "$WORK/state" --run-dir "$WORK/run" --bpf-dir "$WORK/bpffs/rxtune")
head="match:\n  interfaces: [fb]\n  virtual: include\nsteering:\n"
printf "$head  mode: rps\n  cpus: '1'\n  xps: false\n" > "$WORK/rps.yaml"
printf "$head  mode: xdp\n  cpus: '1'\n  xps: false\n" > "$WORK/xdp.yaml"
printf "$head  mode: napi\n  cpus: '1'\n  xps: false\n" > "$WORK/napi.yaml"
# NAPI deferral (Documentation/networking/napi.rst's example values), without and with napi.
DEFER=${DEFER:-"nic:\n  gro_flush_timeout: 20000\n  napi_defer_hard_irqs: 10\n"}
printf "$head  mode: none\n$DEFER" > "$WORK/defer.yaml"
printf "$head  mode: napi\n  cpus: '1'\n  xps: false\n$DEFER" > "$WORK/napi-defer.yaml"
ip netns exec "$B" ethtool -K fb gro "$GRO" rx-udp-gro-forwarding "$GRO_UDP_FWD" > /dev/null
# auto with the shipped default thresholds and candidates.
printf "$head  mode: auto\n  xps: false\n  default_mask: false\n" > "$WORK/auto.yaml"
[ -z "$AUTO_CANDIDATES" ] || printf "  auto:\n    candidates: %s\n" "$AUTO_CANDIDATES" >> "$WORK/auto.yaml"
daemon_config() {  # PROFILE OUT: the daemon's config with the shipped settings
  printf "profile: %s\nlisten: 127.0.0.1:19898\nmetrics_interval: ${AUTO_METRICS_INTERVAL:-5s}\non_stop: revert\ndatapaths: []\nstate_dir: %s\nrun_dir: %s\nbpf_dir: %s\n" \
    "$1" "$WORK/dstate" "$WORK/drun" "$WORK/bpffs/rxtune-d" > "$2"
}
daemon_config "$WORK/auto.yaml" "$WORK/daemon.yaml"
# xdp-daemon: static XDP as the daemon keeps it (the shipped daemon config, bpf_accounting auto):
# the peer that tells the daemon's own cost apart from what auto chose.
daemon_config "$WORK/xdp.yaml" "$WORK/daemon-xdp.yaml"

cost_of() {  # the receive cost of a scenario: "", nft:N or tc:N
  case $1 in nft-*) echo "nft:$NFT_RULES" ;; tc-*) echo "tc:$TC_FILTERS" ;; *) echo "" ;; esac
}
drops() { local s=0 a b rest; while read -r a b rest; do s=$((s + 16#$b)); done < /proc/net/softnet_stat; echo $s; }
measure() {
  local round=$1 scen=$2 mode=$3 s0 s1 d0 d1 n0 n1 sent got sink= hog= p50= p99=
  s0=$(softirq0); d0=$(drops); n0=$(noports)
  if [[ $scen == rr-* ]]; then
    ip netns exec "$B" taskset -c 1 "$FLOOD" echo $NET.2 9001 $((T + 1)) > /dev/null &
    sink=$!
    if [ "$scen" = rr-shared ]; then
      ip netns exec "$B" taskset -c 1 timeout $((T + 1)) sh -c 'while :; do :; done' &
      hog=$!
    fi
    sleep 0.3
    read -r got p50 p99 _ < <(ip netns exec "$A" taskset -c 0 "$FLOOD" rr $NET.2 9001 "$T")
    sent=$got
    wait $sink || true
    [ -z "$hog" ] || wait $hog || true
    s1=$(softirq0); d1=$(drops)
    awk -v r="$round" -v s="$scen" -v m="$mode" -v got="$got" -v t="$T" -v st=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" -v dr=$((d1 - d0)) -v p50="$p50" -v p99="$p99" \
      'BEGIN {printf "%s\t%s\t%s\t%.0f\t%.0f\t%.1f\t%.0f\t%s\t%s\n", r, s, m, got / t, got / t, st / hz / t * 100, dr / t, p50, p99}' | tee -a "$RESULTS"
    return
  fi
  if [[ $scen == *busy ]]; then
    ip netns exec "$B" taskset -c 1 "$FLOOD" sink $NET.2 9000 $((T + 1)) > "$WORK/got" &
    sink=$!
    sleep 0.3
  fi
  sent=$(ip netns exec "$A" taskset -c 0 "$FLOOD" send $NET.2 9000 "$T" 64)
  if [ -n "$sink" ]; then wait $sink; got=$(cat "$WORK/got"); else n1=$(noports); got=$((n1 - n0)); fi
  s1=$(softirq0); d1=$(drops)
  awk -v r="$round" -v s="$scen" -v m="$mode" -v sent="$sent" -v got="$got" -v t="$T" -v st=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" -v dr=$((d1 - d0)) \
    'BEGIN {printf "%s\t%s\t%s\t%.0f\t%.0f\t%.1f\t%.0f\n", r, s, m, sent / t, got / t, st / hz / t * 100, dr / t}' | tee -a "$RESULTS"
}
auto_measure() {
  local round=$1 scen=$2
  ip netns exec "$B" ${DAEMON_WRAP:-} "$BIN" daemon --config "$WORK/daemon.yaml" 2> "$WORK/daemon.log" &
  DAEMON=$!
  for _ in $(seq 50); do grep -q "running:" "$WORK/daemon.log" && break; sleep 0.1; done
  # Load to decide on (the same flood, and the sink in the busy scenarios) until the daemon has
  # judged its trials (keep or undo) or held, at most $WARMUP s; then the measured run. A fixed
  # warm-up once measured a second of the last trial's candidate as auto's.
  local sink= load waited=0
  local hog=
  if [[ $scen == *busy ]]; then
    ip netns exec "$B" taskset -c 1 "$FLOOD" sink $NET.2 9000 $((WARMUP + 1)) > /dev/null &
    sink=$!
  fi
  if [[ $scen == rr-* ]]; then
    # auto decides on saturation: request/response alone never saturates a CPU, so it stays off
    # (what it should do); the warm-up is the same ping-pong.
    ip netns exec "$B" taskset -c 1 "$FLOOD" echo $NET.2 9001 $((WARMUP + 1)) > /dev/null &
    sink=$!
    if [ "$scen" = rr-shared ]; then
      ip netns exec "$B" taskset -c 1 timeout $((WARMUP + 1)) sh -c 'while :; do :; done' &
      hog=$!
    fi
    ip netns exec "$A" taskset -c 0 "$FLOOD" rr $NET.2 9001 "$WARMUP" > /dev/null &
  else
    ip netns exec "$A" taskset -c 0 "$FLOOD" send $NET.2 9000 "$WARMUP" 64 > /dev/null &
  fi
  load=$!
  local t0=$EPOCHREALTIME
  local limit=$((WARMUP * 10))
  [[ $scen != rr-* ]] || limit=150  # no saturation to decide on: 15 s to show it stays off
  # A steady choice: keep or undo; a hold (no spare CPU) only where nothing saturates to decide on.
  local steady="auto fb: (keep|undo)"
  [[ $scen != rr-* ]] || steady="auto fb: (keep|undo|hold)"
  while [ $waited -lt $limit ] && ! grep -qE "$steady" "$WORK/daemon.log"; do
    sleep 0.1; waited=$((waited + 1))
  done
  # The decision's time from the daemon's clock would need its log's stamps; the loop's is within
  # a tenth of a second: seconds from the flood's start (the onset of saturation) to the line.
  local took; took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
  sleep 1  # the reconcile that follows a keep
  kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true
  [ -z "$sink" ] || { kill "$sink" 2>/dev/null || true; wait "$sink" 2>/dev/null || true; }
  [ -z "$hog" ] || { kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; }
  echo "  round $round $scen: decided after $took s of load" >> "$WORK/decisions"
  printf "%s\t%s\t%s\n" "$round" "$scen" "$took" >> "$WORK/decided.tsv"
  local how; how=$(ip netns exec "$B" curl -s --max-time 2 http://127.0.0.1:19898/metrics |
    awk -F'"' '/^rxtune_steering_auto_mode\{/ && / 1$/ {print $4}' || true)
  measure "$round" "$scen" "auto"
  kill -TERM "$DAEMON"; wait "$DAEMON" || true; DAEMON=
  grep -o "auto fb: .*" "$WORK/daemon.log" | sed "s/^/  round $round $scen: /" >> "$WORK/decisions" || true
  echo "  round $round $scen: auto steered with: ${how:-?} while measured" >> "$WORK/decisions"
}
daemon_static_measure() {  # ROUND SCENARIO MODE CONFIG
  ip netns exec "$B" ${DAEMON_WRAP:-} "$BIN" daemon --config "$4" 2> "$WORK/daemon.log" &
  DAEMON=$!
  for _ in $(seq 100); do grep -q "running:" "$WORK/daemon.log" && break; sleep 0.1; done
  sleep 1
  measure "$1" "$2" "$3"
  kill -TERM "$DAEMON"; wait "$DAEMON" || true; DAEMON=
}
mkdir -p "$(dirname "$RESULTS")"
echo "# machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ); $T s per mode, $ROUNDS interleaved rounds, 64 flows of 64-byte UDP; nft: $NFT_RULES rules, tc: $TC_FILTERS filters; GRO $GRO, rx-udp-gro-forwarding $GRO_UDP_FWD on fb; auto (candidates ${AUTO_CANDIDATES:-shipped}) measured once it has decided (at most ${WARMUP} s of load first)" | tee "$RESULTS"
printf "round\tscenario\tmode\tsent/s\tprocessed/s\tcpu0_softirq%%\tdrops/s\tp50_us\tp99_us\n" | tee -a "$RESULTS"
: > "$WORK/decisions"
: > "$WORK/decided.tsv"
for round in $(seq 1 "$ROUNDS"); do
  for scen in $SCENARIOS; do
    cost=$(cost_of "$scen")
    [ -z "$cost" ] || recv_cost_on "$cost"
    for mode in $MODES; do
      case $mode in
        none) measure "$round" "$scen" none ;;
        auto) auto_measure "$round" "$scen" ;;
        xdp-daemon) daemon_static_measure "$round" "$scen" xdp-daemon "$WORK/daemon-xdp.yaml" ;;
        *)
          ip netns exec "$B" "$BIN" apply -p "$WORK/${mode%-generic}.yaml" "${args[@]}" > "$WORK/apply.out"
          grep -h "skip" "$WORK/apply.out" | sed "s/^/  round $round $scen $mode: /" >> "$WORK/decisions" || true
          measure "$round" "$scen" "$mode"
          ip netns exec "$B" "$BIN" revert "${args[@]}" > /dev/null ;;
      esac
    done
    [ -z "$cost" ] || recv_cost_off "$cost"
  done
done
echo
echo "medians over $ROUNDS rounds (min-max), processed packets/s; ratios of medians to none:"
# Debian's python3 has python3-matplotlib (make bench-deps); a pyenv one on PATH may not.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" bench/steer_chart.py --summary --svg "${RESULTS%.tsv}.svg" "$RESULTS"
echo "chart: ${RESULTS%.tsv}.svg"
echo "auto's decisions (daemon log):"
cat "$WORK/decisions"
# Each trial's prediction beside what it measured, and how long a cut (collapsing) one ran, from the
# daemon's lines: "rps: delivered A -> B packets/s (...); N samples in S s (why); predicted Px, measured Mx".
"$PY" - "$WORK/decisions" <<'PY'
import re, statistics, sys
rows = {}
pat = re.compile(r"round (\d+) (\S+): auto fb: \w+ \([^)]*\): (?:\S+: )?([a-z_]+): delivered \d+ -> \d+ packets/s .*?; \d+ samples in ([0-9.]+) s "
                 r"\(([^)]*)\); predicted ([0-9.]+)x, measured ([0-9.]+)x")
for line in open(sys.argv[1]):
    m = pat.search(line)
    if m:
        _, scen, trial, secs, why, pred, meas = m.groups()
        rows.setdefault((scen, trial), []).append((float(pred), float(meas), float(secs), why.startswith("cut")))
print("mode auto's predictions (before each trial) against what the trial measured, ratios to none: median (min-max) over the rounds")
print("  %-10s %-8s %-20s %-20s %-16s %s" % ("scenario", "trial", "predicted", "measured", "error (median)", "cut: longest"))
fmt = lambda v: "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))
for (scen, trial), v in sorted(rows.items()):
    pred, meas = [r[0] for r in v], [r[1] for r in v]
    err = statistics.median([(p / m - 1) * 100 if m > 0 else float("inf") for p, m in zip(pred, meas)])
    cuts = [r[2] for r in v if r[3]]
    print("  %-10s %-8s %-20s %-20s %+14.0f%%  %s" % (scen, trial, fmt(pred), fmt(meas), err,
          "%.2f s (%d of %d)" % (max(cuts), len(cuts), len(v)) if cuts else "-"))
PY
echo "seconds of load (from the flood's start: saturation onset) to auto's keep or undo (hold: rr-*), per scenario: median (min-max)"
sort -k2,2 -k3,3n "$WORK/decided.tsv" | awk -F'\t' '
  { v[$2, ++n[$2]] = $3 }
  END { for (s in n) { m = n[s]; med = m % 2 ? v[s, (m + 1) / 2] : (v[s, m / 2] + v[s, m / 2 + 1]) / 2;
        printf "  %-10s %5.1f s (%.1f-%.1f), %d rounds\n", s, med, v[s, 1], v[s, m], m } }'
