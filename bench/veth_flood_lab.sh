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

# An expensive receive path on fb, as a gateway's is (firewall, conntrack, classifiers), torn down
# again by recv_cost_off. $1: nft:N (conntrack plus N netfilter rules that every packet walks and
# none matches, like a long linear firewall) or tc:N (N u32 classifiers on fb's ingress).
recv_cost_on() {
  local kind=${1%%:*} n=${1#*:} i
  case $kind in
    nft)
      { echo "table inet rxbench {"
        echo "  chain pre { type filter hook prerouting priority 0; ct state new,established,related counter; }"
        echo "  chain in { type filter hook input priority 0;"
        for i in $(seq 1 "$n"); do echo "    ip saddr 192.0.2.$((i % 250 + 1)) udp dport $((20000 + i)) drop"; done
        echo "  }"
        echo "}"; } > "$WORK/rules.nft"
      ip netns exec "$B" nft -f "$WORK/rules.nft" ;;
    tc)
      ip netns exec "$B" tc qdisc add dev fb clsact
      for i in $(seq 1 "$n"); do
        echo "filter add dev fb ingress prio $i protocol ip u32 match ip dport $((20000 + i)) 0xffff flowid 1:1"
      done > "$WORK/filters.tc"
      ip netns exec "$B" tc -batch "$WORK/filters.tc" ;;
    *) echo "unknown receive cost '$1' (nft:N or tc:N)" >&2; return 1 ;;
  esac
}
recv_cost_off() {
  case ${1%%:*} in
    nft) ip netns exec "$B" nft delete table inet rxbench ;;
    tc) ip netns exec "$B" tc qdisc del dev fb clsact ;;
  esac
}
