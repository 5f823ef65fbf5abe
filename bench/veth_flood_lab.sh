# Sourced by the flood benches (steer_bench.sh, bpf_cost.sh): the simulated single-queue device.
# netns $A (sender, veth fa, $NET.1) and $B (receiver, veth fb, $NET.2, lo up for the daemon's
# endpoint), a bpffs under $WORK, and a trap that stops $DAEMON and removes all of it.
# Set NET (e.g. 10.233.0) before sourcing; needs root and 2+ CPUs.
A=rxt-fa-$$ B=rxt-fb-$$
WORK=$(mktemp -d)
DAEMON=
FLOOD=build/bench/udp_flood
cleanup() {
  if [ -n "$DAEMON" ]; then kill "$DAEMON" 2>/dev/null || true; wait "$DAEMON" 2>/dev/null || true; fi
  ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true
  umount "$WORK/bpffs" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then cp "$WORK"/*.log /tmp/ 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs"; exit 1; }
ip netns add "$A"; ip netns add "$B"
ip -n "$A" link add fa type veth peer name fb netns "$B"
ip -n "$A" addr add "$NET.1/24" dev fa; ip -n "$B" addr add "$NET.2/24" dev fb
ip -n "$A" link set fa up; ip -n "$B" link set fb up; ip -n "$B" link set lo up
mkdir -p "$WORK/bpffs"; mount -t bpf bpf "$WORK/bpffs"

softirq0() { awk '/^cpu0 / {print $8}' /proc/stat; }   # softirq ticks of CPU 0
# Datagrams that went through B's receive path to the UDP lookup and found no socket.
noports() { ip netns exec "$B" awk '/^Udp:/ { if (h) { print $3; exit } h = 1 }' /proc/net/snmp; }
