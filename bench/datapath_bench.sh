#!/usr/bin/env bash
# rxtune-dp benchmarks, each beside its peer in the same run, with --no-huge on this machine:
#  1. The RX core's distribution rate (Mpps): flows replayed from memory by net_pcap (infinite_rx)
#     into net_null ports. rxtune-dp parses, hashes (symmetric softrss) and enqueues per worker;
#     dpdk-testpmd io-forwards the same vdevs (no parsing): the ratio is the figure. net_null
#     alone cannot be the source: its frames carry no IP header, so every one would be non-IP
#     and go to worker 0.
#  2. Replies to the NIC's one TX queue: tx_mode ring (MP ring drained by the RX core) vs lock
#     (workers transmit under a spinlock), the worker reading an endless net_null source.
# End to end (HTTP through rxtune-dp vs the kernel untuned and with RPS) is bench/lab.py, scenario dp.
# Usage: bench/datapath_bench.sh [SECONDS]   (root; `make bench-deps` installs dpdk-testpmd)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-10}
DP=${RXTUNE_DP:-build/datapath/rxtune-dp}
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]+"${pids[@]}"}"; do kill -INT "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd not found: make bench-deps (Debian package dpdk-dev)"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs"; exit 1; }
EAL=(--no-huge -m 1024 --log-level=lib.eal:error)

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

# rate NAME FIELD ARGS...: runs rxtune-dp for T s, prints FIELD's rate between t=2 and t=T-1 (Mpps).
dp_rate() {
  local name=$1 field=$2; shift 2
  local prefix="dpb-$$-$name" sock
  sock=/var/run/dpdk/$prefix/dpdk_telemetry.v2
  "$DP" --rx-cpu 0 --worker-cpus 1 "$@" -- "${EAL[@]}" --file-prefix="$prefix" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  local pid=$!; pids+=("$pid")
  for _ in $(seq 100); do [ -S "$sock" ] && grep -q "running:" "$WORK/$name.err" && break; sleep 0.1; done
  sleep 2
  local a b t0 t1 da db
  read -r a da t0 < <(stats "$sock" "$field" worker_to_tap_packets uptime_cycles)
  sleep $((T - 3))
  read -r b db t1 < <(stats "$sock" "$field" worker_to_tap_packets uptime_cycles)
  local hz; hz=$(stats "$sock" tsc_hz)
  local extra; extra=$(stats "$sock" worker_ring_full worker_to_nic_dropped)
  kill -INT "$pid"; wait "$pid" || { echo "rxtune-dp $name did not stop cleanly"; cat "$WORK/$name.err"; }
  awk -v a="$a" -v b="$b" -v da="$da" -v db="$db" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v n="$name" -v x="$extra" \
    'BEGIN {s = (t1 - t0) / hz; printf "%-34s %8.2f Mpps   (to workers\x27 TAP port %.2f Mpps; drops ring_full/tx: %s)\n", n, (b - a) / s / 1e6, (db - da) / s / 1e6, x}'
}

testpmd_rate() {
  local name=$1 mode=$2
  timeout -s INT "$T" dpdk-testpmd -l 0,1 "${EAL[@]}" --file-prefix="tpmd-$$" --vdev "$PCAP" --vdev net_null0,no-rx=1 -- \
    --forward-mode="$mode" --auto-start --stats-period 1 --nb-cores=1 > "$WORK/testpmd.out" 2>&1 || true
  # Rx-pps of port 0 in the last complete periods.
  awk '/NIC statistics for port/ {port = $(NF - 1)} /Rx-pps:/ && port == "0" {print $2}' "$WORK/testpmd.out" | tail -n $((T - 3)) |
    awk -v n="$name" '{s += $1; c++} END {printf "%-34s %8.2f Mpps\n", n, (c ? s / c : 0) / 1e6}'
}

echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo "DPDK $(pkg-config --modversion libdpdk), --no-huge; $T s per run; RX core / testpmd forwarding core on CPU 0, worker on CPU 1"
echo
echo "1. distribution rate: 4096 UDP flows of 64-byte frames from net_pcap into net_null"
testpmd_rate "dpdk-testpmd io (peer)" io
testpmd_rate "dpdk-testpmd rxonly (source ceiling)" rxonly
dp_rate "rxtune-dp, 1 worker" rx_packets --nic "$PCAP" --tap-device net_null1,no-rx=1
dp_rate "rxtune-dp, 1 worker, fix_checksums" rx_packets --nic "$PCAP" --tap-device net_null1,no-rx=1 --fix-checksums
echo
echo "2. replies into the NIC's one TX queue (worker reads endless 64-byte frames from net_null)"
dp_rate "tx_mode ring (RX core transmits)" nic_tx_packets --nic net_null0,no-rx=1 --tap-device net_null1 --tx-mode ring
dp_rate "tx_mode lock (worker transmits)" worker_to_nic --nic net_null0,no-rx=1 --tap-device net_null1 --tx-mode lock
