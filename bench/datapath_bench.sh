#!/usr/bin/env bash
# rxtune-dp benchmarks, each beside its peer in the same run, in interleaved rounds (the VM is
# noisy: medians over the rounds, with min-max):
#  1. The RX core's distribution rate (Mpps): flows replayed from memory by net_pcap (infinite_rx)
#     into net_null ports. rxtune-dp parses, hashes (symmetric Toeplitz) and enqueues per worker;
#     dpdk-testpmd io-forwards the same vdevs (no parsing): the ratio is the figure. Beside it:
#     the RX core's cycles per packet (its busy cycles over what it received) and the worker's busy
#     share, so that it shows which side is the limit. "prefetch on" forces prefetch_next_mbufs
#     (PREFETCHW of the mbufs the next receive takes), which auto leaves off where sysfs says the
#     worker shares the RX core's last-level cache, as a VM's does. net_null alone cannot be the
#     source: its frames carry no IP header, so every one would be non-IP and go to worker 0.
#  2. Replies to the NIC's one TX queue: tx_mode ring (MP ring drained by the RX core) vs lock
#     (workers transmit under a spinlock), with 1 worker (CPU 1) and 2 workers (CPUs 0 and 1, the
#     first beside the RX core), the workers reading endless net_null sources.
# Every run is bracketed by bench/tools/core_rtt (CPU 0 <-> CPU 1 cache-line round trip): on a VM
# the hypervisor moves the two vCPUs between placements whose round trips differ a few times, which
# a two-core pipeline pays on every packet and a one-core forwarder does not. The tables give each
# row over all rounds and over the rounds whose round trip stayed near the bench's best.
# MEM=huge runs everything on 2 MB hugepages (reserved for the run, released after) instead of
# --no-huge. BASELINE_DP=path/to/an/older/rxtune-dp adds its rows to part 1, in the same rounds.
# End to end (HTTP through rxtune-dp vs the kernel untuned and with RPS) is bench/lab.py, scenario dp.
# Usage: bench/datapath_bench.sh [SECONDS] [ROUNDS]   (root; `make bench-deps` installs dpdk-testpmd)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-6}
ROUNDS=${2:-3}
DP=${RXTUNE_DP:-build/datapath/rxtune-dp}
WORK=$(mktemp -d)
pids=()
HP=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
hpBefore=""
hpMounted=""
cleanup() {
  for p in "${pids[@]+"${pids[@]}"}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
  if [ -n "$hpMounted" ]; then umount "$hpMounted" 2>/dev/null || true; rmdir "$hpMounted" 2>/dev/null || true; fi
  if [ -n "$hpBefore" ]; then
    echo "$hpBefore" > "$HP"
    [ "$(cat "$HP")" = "$hpBefore" ] || echo "warning: could not give back the hugepages (nr_hugepages $(cat "$HP"), was $hpBefore)" >&2
  fi
}
trap cleanup EXIT INT TERM
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd not found: make bench-deps (Debian package dpdk-dev)"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs"; exit 1; }
if [ "${MEM:-}" = huge ]; then
  # 2 GB of 2 MB pages for the run, on a hugetlbfs of its own; both given back on exit.
  hpBefore=$(cat "$HP")
  echo $((hpBefore + 1024)) > "$HP"
  [ "$(cat "$HP")" -ge $((hpBefore + 512)) ] || { echo "could not reserve hugepages (got $(cat "$HP"))"; exit 1; }
  hpMounted=$(mktemp -d /dev/shm/rxdp-huge.XXXXXX 2>/dev/null || mktemp -d)
  mount -t hugetlbfs -o pagesize=2M none "$hpMounted"
  EAL=(-m 1024 --huge-dir "$hpMounted" --log-level=lib.eal:error)
  memdesc="2 MB hugepages"
else
  EAL=(--no-huge -m 1024 --log-level=lib.eal:error)
  memdesc="--no-huge"
fi

# 4096 UDP flows, 64-byte frames (10.0.x.y:port -> 10.1.0.1:53).
python3 - "$WORK/flows.pcap" <<'PY'
import random, struct, sys
random.seed(1)
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(4096):
        src = bytes([10, 0, i >> 8, i & 0xff]); dst = bytes([10, 1, 0, 1])
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, i, 0, 64, 17, 0, src, dst))
        ip[10:12] = struct.pack("!H", csum(bytes(ip)))
        udp = struct.pack("!HHHH", 1024 + random.randrange(60000), 53, 26, 0) + bytes(18)
        frame = bytes.fromhex("020000000001020000000002") + b"\x08\x00" + bytes(ip) + udp
        f.write(struct.pack("<IIII", 0, i, len(frame), len(frame)) + frame)
PY
PCAP="net_pcap0,rx_pcap=$WORK/flows.pcap,infinite_rx=1"

# Reads /rxtune_dp/stats from a telemetry socket: prints the named counters (arrays summed).
stats() {
  python3 - "$1" "${@:2}" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1]); s.recv(65536); s.send(b"/rxtune_dp/stats")
d = json.loads(s.recv(1 << 20))["/rxtune_dp/stats"]
print(" ".join(str(sum(d[k]) if isinstance(d[k], list) else d[k]) for k in sys.argv[2:]))
PY
}

# dp_run NAME FIELD ARGS...: runs rxtune-dp for T s; prints "Mpps cycles_per_packet worker_busy%"
# between t=2 and t=T-1 (FIELD's rate; the RX core's busy cycles per received packet; the first
# worker's busy share).
dp_run() {
  local name=$1 field=$2 bin=$3; shift 3
  local prefix="dpb-$$-$name" sock
  sock=/var/run/dpdk/$prefix/dpdk_telemetry.v2
  "$bin" --rx-cpu 0 "$@" -- "${EAL[@]}" --file-prefix="$prefix" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  local pid=$!; pids+=("$pid")
  for _ in $(seq 100); do [ -S "$sock" ] && grep -q "running:" "$WORK/$name.err" && break; sleep 0.1; done
  sleep 2
  local a b t0 t1 ra rb ca cb wa wb
  read -r a ra ca wa t0 < <(stats "$sock" "$field" rx_packets rx_busy_cycles worker_busy_cycles uptime_cycles)
  sleep $((T - 3))
  read -r b rb cb wb t1 < <(stats "$sock" "$field" rx_packets rx_busy_cycles worker_busy_cycles uptime_cycles)
  local hz; hz=$(stats "$sock" tsc_hz)
  local nw; nw=$(stats "$sock" workers)
  kill -INT "$pid"; wait "$pid" || { echo "rxtune-dp $name did not stop cleanly" >&2; cat "$WORK/$name.err" >&2; }
  awk -v a="$a" -v b="$b" -v ra="$ra" -v rb="$rb" -v ca="$ca" -v cb="$cb" -v wa="$wa" -v wb="$wb" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v nw="$nw" \
    'BEGIN {s = (t1 - t0) / hz; cpp = (rb > ra) ? (cb - ca) / (rb - ra) : 0
            printf "%.2f %.0f %.0f\n", (b - a) / s / 1e6, cpp, 100 * (wb - wa) / nw / (t1 - t0)}'
}

testpmd_run() {
  local mode=$1
  # --main-lcore 1: testpmd forwards on lcore 0, the CPU rxtune-dp's RX core uses.
  timeout -s INT "$T" dpdk-testpmd -l 0,1 --main-lcore 1 "${EAL[@]}" --file-prefix="tpmd-$$" --vdev "$PCAP" --vdev net_null0,no-rx=1 -- \
    --forward-mode="$mode" --auto-start --stats-period 1 --nb-cores=1 > "$WORK/testpmd.out" 2>&1 || true
  # Rx-pps of port 0 in the last complete periods.
  awk '/NIC statistics for port/ {port = $(NF - 1)} /Rx-pps:/ && port == "0" {print $2}' "$WORK/testpmd.out" | tail -n $((T - 3)) |
    awk '{s += $1; c++} END {printf "%.2f - -\n", (c ? s / c : 0) / 1e6}'
}

# The runs of one round, in order; each adds "figures rtt;" to its row, rtt being the larger of the
# CPU 0 <-> CPU 1 cache-line round trips (ns, bench/tools/core_rtt) measured just before and just
# after it: the hypervisor moves the two vCPUs between placements that differ a few times in it,
# and rxtune-dp hands every mbuf from one CPU to the other while testpmd io stays on one.
RTT=${CORE_RTT:-build/bench/core_rtt}
[ -x "$RTT" ] || { echo "$RTT not found: build first (ninja -C build bench/core_rtt)"; exit 1; }
declare -A rows
order=()
run() {
  local key=$1; shift
  [[ " ${order[*]} " == *" $key "* ]] || order+=("$key")
  local before after figures
  before=$("$RTT" 0 1 5 | cut -d' ' -f1)
  figures=$("$@")
  after=$("$RTT" 0 1 5 | cut -d' ' -f1)
  rows[$key]+="$figures $((before > after ? before : after));"
}
DIST=(--worker-cpus 1 --nic "$PCAP" --tap-device net_null1,no-rx=1)
one_round() {
  run "1|dpdk-testpmd io (peer)" testpmd_run io
  run "1|dpdk-testpmd rxonly (source ceiling)" testpmd_run rxonly
  run "1|rxtune-dp, 1 worker" dp_run dist rx_packets "$DP" "${DIST[@]}"
  run "1|rxtune-dp, 1 worker, prefetch on" dp_run distpf rx_packets "$DP" "${DIST[@]}" --prefetch-next-mbufs on
  [ -n "${BASELINE_DP:-}" ] && run "1|rxtune-dp before, 1 worker" dp_run distold rx_packets "$BASELINE_DP" "${DIST[@]}"
  run "1|rxtune-dp, 1 worker, fix_checksums" dp_run distfix rx_packets "$DP" "${DIST[@]}" --fix-checksums
  for w in 1 0-1; do
    local label; label=$([ "$w" = 1 ] && echo "1 worker" || echo "2 workers")
    run "2|tx_mode ring, $label" dp_run "ring$w" nic_tx_packets "$DP" --worker-cpus "$w" --nic net_null0,no-rx=1 --tap-device net_null1 --tx-mode ring
    run "2|tx_mode lock, $label" dp_run "lock$w" worker_to_nic "$DP" --worker-cpus "$w" --nic net_null0,no-rx=1 --tap-device net_null1 --tx-mode lock
  done
}
for ((r = 0; r < ROUNDS; r++)); do one_round; done

echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo "DPDK $(pkg-config --modversion libdpdk), $memdesc; $T s per run, $ROUNDS interleaved rounds, median (min-max); RX core / testpmd's forwarding core on CPU 0"
for key in "${order[@]}"; do printf '%s\t%s\n' "$key" "${rows[$key]}"; done | python3 -c '
import statistics, sys
rows = []
for line in sys.stdin:
    key, runs = line.rstrip("\n").split("\t")
    part, label = key.split("|", 1)
    rows.append((part, label, [r.split() for r in runs.split(";") if r.strip()]))
rtts = [int(r[3]) for _, _, runs in rows for r in runs]
near = 2 * min(rtts)  # a run is "near" when its round trip stayed within 2x the best of the bench, else "far"
def med(v): return statistics.median(v) if v else float("nan")
def span(v): return "%.2f (%.2f-%.2f)" % (med(v), min(v), max(v)) if v else "-"
def col(runs, i):
    v = [float(r[i]) for r in runs if r[i] != "-"]
    return "%.0f (%.0f-%.0f)" % (med(v), min(v), max(v)) if v else "-"
io = [r for p, l, runs in rows if l.startswith("dpdk-testpmd io") for r in runs]
io_all = med([float(r[0]) for r in io])
# testpmd io forwards on one CPU, so the placement does not matter to it: every "x io" is against
# its median over all rounds.
print("CPU 0 <-> CPU 1 round trip: %d-%d ns over the runs; near = up to %d ns (2x the best), far = above" % (min(rtts), max(rtts), near))
for part in ("1", "2"):
    print()
    if part == "1":
        print("1. distribution rate: 4096 UDP flows of 64-byte frames from net_pcap into net_null (worker on CPU 1)")
        print("%-38s %-21s %-6s %-24s %-6s %-24s %-6s %-15s %-13s %s" % ("run", "Mpps, all rounds", "x io", "Mpps, near rounds (n)", "x io",
              "Mpps, far rounds (n)", "x io", "RX cycles/pkt", "worker busy %", "round trip ns"))
    else:
        print("2. replies into the NIC'"'"'s one TX queue (workers read endless 64-byte frames from net_null)")
        print("%-38s %-21s %-24s %-24s %s" % ("run", "Mpps, all rounds", "Mpps, near rounds (n)", "Mpps, far rounds (n)", "round trip ns"))
    for p, label, runs in rows:
        if p != part: continue
        allv = [float(r[0]) for r in runs]
        nearv = [float(r[0]) for r in runs if int(r[3]) <= near]
        farv = [float(r[0]) for r in runs if int(r[3]) > near]
        nearText = "%s (%d)" % (span(nearv), len(nearv)) if nearv else "- (0)"
        farText = "%s (%d)" % (span(farv), len(farv)) if farv else "- (0)"
        if part == "1":
            print("%-38s %-21s %-6.2f %-24s %-6s %-24s %-6s %-15s %-13s %s" % (label, span(allv), med(allv) / io_all, nearText,
                  "%.2f" % (med(nearv) / io_all) if nearv else "-", farText, "%.2f" % (med(farv) / io_all) if farv else "-",
                  col(runs, 1), col(runs, 2), col(runs, 3)))
        else:
            print("%-38s %-21s %-24s %-24s %s" % (label, span(allv), nearText, farText, col(runs, 3)))
print()
print("every run, in order (Mpps, RX cycles/packet, worker busy %, round trip ns):")
for p, label, runs in rows:
    print("  %s: %s" % (label, "; ".join(" ".join(r) for r in runs)))
'
