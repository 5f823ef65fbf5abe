#!/usr/bin/env bash
# Builds the .deb, checks it with lintian, installs it, runs the installed rxtune, checks the systemd
# units and the minimal capability set, upgrades over a journal, purges, and checks nothing is left.
set -euo pipefail
cd "$(dirname "$0")/../.."
NS=rxt-pkg-$$
TMP=$(mktemp -d)
cleanup() {
  pkill -f "rxtune daemon --config $TMP" 2>/dev/null || true
  # Purged in the namespace where it exists: the prerm reverts what is journaled, and the journal
  # names the namespace's devices and per-namespace sysctls (never this host's).
  if ip netns list | grep -qw "$NS"; then
    ip netns exec "$NS" dpkg --purge rxtune-datapath rxtune >/dev/null 2>&1 || true
  fi
  rm -f /var/lib/rxtune/journal.json
  dpkg --purge rxtune-datapath rxtune >/dev/null 2>&1 || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
step() { echo "--- $*"; }

for p in rxtune rxtune-datapath; do
  if dpkg-query -W -f='${Status}' $p 2>/dev/null | grep "install ok installed" >/dev/null; then
    echo "$p is already installed on this machine; refusing to replace it"; exit 1
  fi
done

step "make deb"
# REUSE_DEB=1 tests the package already in build-deb/ (for iterating on this script).
if [ -z "${REUSE_DEB:-}" ]; then
  tests/package/build_deb.sh "$TMP/deb.log"
fi
DEB=$(ls build-deb/rxtune_*_*.deb | grep -v dbgsym)
DPDEB=$(ls build-deb/rxtune-datapath_*_*.deb | grep -v dbgsym)

step "lintian (no errors allowed)"
lintian --fail-on error "$DEB" "$DPDEB" 2>/dev/null

step "install"
dpkg -i "$DEB" > /dev/null
rxtune --version
dpkg-query -W -f='${Conffiles}\n' rxtune | grep '/etc/rxtune/rxtune.yaml' >/dev/null || { echo "rxtune.yaml is not a conffile"; exit 1; }
test -x /usr/sbin/rxtune && test -f /usr/share/rxtune/profiles/single-queue-gateway.yaml
rxtune detect > /dev/null
rc=0; rxtune plan > "$TMP/plan.txt" || rc=$?
[ $rc -eq 0 ] || [ $rc -eq 2 ] || { echo "installed rxtune plan failed ($rc)"; cat "$TMP/plan.txt"; exit 1; }
grep -q "profile single-queue-gateway (/usr/share/rxtune/profiles/single-queue-gateway.yaml)" "$TMP/plan.txt"

step "systemd-analyze verify and security"
systemd-analyze verify /lib/systemd/system/rxtune.service /lib/systemd/system/rxtune-apply.service
systemd-analyze security --offline=true /lib/systemd/system/rxtune.service 2>/dev/null | tail -1

step "capabilities: CAP_NET_ADMIN CAP_BPF CAP_PERFMON are enough; each one fewer breaks a named feature"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add v0 numrxqueues 2 type veth peer name v1
printf "include: single-queue-gateway\nmatch:\n  interfaces: ['v*']\n  virtual: include\nsteering:\n  mode: rps\n" > "$TMP/p.yaml"
caps() { ip netns exec "$NS" setpriv --inh-caps="-all$1" --ambient-caps="-all$1" --bounding-set="-all$1" "${@:2}"; }
caps ",+net_admin" rxtune apply -p "$TMP/p.yaml" --state-dir "$TMP/s1" --run-dir "$TMP/r1" > /dev/null
[ "$(ip netns exec "$NS" cat /sys/class/net/v0/queues/rx-1/rps_cpus | tr -d '0,\n')" != "" ]
caps ",+net_admin" rxtune revert --state-dir "$TMP/s1" --run-dir "$TMP/r1" > /dev/null
rc=0; caps "" rxtune apply -p "$TMP/p.yaml" --state-dir "$TMP/s2" --run-dir "$TMP/r2" 2> "$TMP/nocap.err" || rc=$?
[ $rc -eq 1 ] && grep -q "rps_cpus" "$TMP/nocap.err" && grep -q "Operation not permitted" "$TMP/nocap.err" ||
  { echo "without CAP_NET_ADMIN apply should fail on rps_cpus"; cat "$TMP/nocap.err"; exit 1; }
[ "$(ip netns exec "$NS" cat /sys/class/net/v0/queues/rx-1/rps_cpus | tr -d '0,\n')" = "" ]
# The daemon under exactly that set: steers, serves metrics, says nothing is missing.
cat > "$TMP/d.yaml" <<YAML
profile: $TMP/p.yaml
listen: 127.0.0.1:19890
state_dir: $TMP/s3
run_dir: $TMP/r3
on_stop: revert
YAML
# Not through caps(): $! must be the daemon itself (ip and setpriv exec it), not a subshell.
ALL=",+net_admin,+bpf,+perfmon"
ip netns exec "$NS" setpriv --inh-caps=-all$ALL --ambient-caps=-all$ALL --bounding-set=-all$ALL \
  rxtune daemon --config "$TMP/d.yaml" > /dev/null 2> "$TMP/d.log" &
dpid=$!
# The endpoint comes up before the first reconcile: wait for that, not just for the endpoint.
for _ in $(seq 100); do
  ip netns exec "$NS" curl -s http://127.0.0.1:19890/metrics > "$TMP/m.txt" || true
  grep 'rxtune_applies_total{result="changed"} 1' "$TMP/m.txt" > /dev/null && break
  sleep 0.1
done
grep 'rxtune_applies_total{result="changed"} 1' "$TMP/m.txt" > /dev/null ||
  { echo "the daemon with its capability set did not apply"; cat "$TMP/d.log"; exit 1; }
grep 'rxtune_bpf_info{program="softirq",state="available"} 1' "$TMP/m.txt" > /dev/null ||
  { echo "BPF accounting should load with CAP_BPF and CAP_PERFMON"; cat "$TMP/d.log"; exit 1; }
grep -q "missing CAP" "$TMP/d.log" && { echo "daemon reported a missing capability"; cat "$TMP/d.log"; exit 1; }
kill -TERM $dpid; wait $dpid
# Without CAP_BPF: steering still works, BPF accounting is off and the log says why.
NOBPF=",+net_admin,+perfmon"
ip netns exec "$NS" setpriv --inh-caps=-all$NOBPF --ambient-caps=-all$NOBPF --bounding-set=-all$NOBPF \
  rxtune daemon --config "$TMP/d.yaml" > /dev/null 2> "$TMP/d1.log" &
dpid=$!
for _ in $(seq 50); do grep -q "running:" "$TMP/d1.log" && break; sleep 0.1; done
kill -TERM $dpid; wait $dpid
grep -q "BPF softirq accounting unavailable" "$TMP/d1.log" ||
  { echo "without CAP_BPF the daemon should say BPF accounting is off"; cat "$TMP/d1.log"; exit 1; }
ip netns exec "$NS" setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all \
  rxtune daemon --config "$TMP/d.yaml" > /dev/null 2> "$TMP/d2.log" &
dpid=$!
for _ in $(seq 50); do grep -q "running:" "$TMP/d2.log" && break; sleep 0.1; done
kill -TERM $dpid; wait $dpid || true
grep -q "missing CAP_NET_ADMIN" "$TMP/d2.log" && grep -q "apply failed" "$TMP/d2.log" ||
  { echo "daemon without CAP_NET_ADMIN should say so and fail to apply"; cat "$TMP/d2.log"; exit 1; }

step "rxtune-datapath: installs, its unit verifies, rxtune-dp runs with the unit's capabilities only"
dpkg -i "$DPDEB" > /dev/null
dpkg-query -W -f='${Conffiles}\n' rxtune-datapath | grep '/etc/rxtune/rxtune-dp.yaml' >/dev/null ||
  { echo "rxtune-dp.yaml is not a conffile"; exit 1; }
man -w rxtune-dp > /dev/null
systemd-analyze verify /lib/systemd/system/rxtune-dp.service
# The shipped config has no NIC yet: refused with the key named, nothing started.
rc=0; rxtune-dp --config /etc/rxtune/rxtune-dp.yaml 2> "$TMP/dp0.err" || rc=$?
[ $rc -eq 1 ] && grep -q "nic.device: no NIC port" "$TMP/dp0.err" ||
  { echo "rxtune-dp with the shipped config should ask for nic.device"; cat "$TMP/dp0.err"; exit 1; }
ip -n "$NS" link add d0 type veth peer name d1
ip -n "$NS" link set d0 up; ip -n "$NS" link set d1 up
DPCAPS=$(sed -n 's/^CapabilityBoundingSet=//p' /lib/systemd/system/rxtune-dp.service | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
ip netns exec "$NS" setpriv --inh-caps=-all,$DPCAPS --ambient-caps=-all,$DPCAPS --bounding-set=-all,$DPCAPS \
  rxtune-dp --nic net_af_packet0,iface=d0 --tap pkgdp0 --worker-cpus 0 --idle-sleep-us 100 \
  -- --no-huge -m 128 --file-prefix=rxt-pkg-$$ > "$TMP/dp.out" 2> "$TMP/dp.err" &
dppid=$!
for _ in $(seq 100); do grep -q "running:" "$TMP/dp.err" && break; sleep 0.1; done
grep -q "running:" "$TMP/dp.err" || { echo "rxtune-dp did not start with $DPCAPS"; cat "$TMP/dp.err"; kill $dppid; exit 1; }
ip -n "$NS" link show pkgdp0 > /dev/null
kill -TERM $dppid; wait $dppid || { echo "rxtune-dp did not stop cleanly"; cat "$TMP/dp.out" "$TMP/dp.err"; exit 1; }
grep -q "mbufs_in_use=0" "$TMP/dp.out"

step "upgrade keeps the journal"
ip netns exec "$NS" rxtune apply -p "$TMP/p.yaml" > /dev/null
test -f /var/lib/rxtune/journal.json
dpkg -i "$DEB" > /dev/null
test -f /var/lib/rxtune/journal.json
[ "$(ip netns exec "$NS" cat /sys/class/net/v0/queues/rx-1/rps_cpus | tr -d '0,\n')" != "" ]
# The journal is the namespace's: a revert from this host's namespace is refused and changes nothing.
rc=0; rxtune revert > "$TMP/revert-here.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "the journal was written in network namespace" "$TMP/revert-here.out" ||
  { echo "revert outside the journal's namespace should be refused"; cat "$TMP/revert-here.out"; exit 1; }
test -f /var/lib/rxtune/journal.json
[ "$(ip netns exec "$NS" cat /sys/class/net/v0/queues/rx-1/rps_cpus | tr -d '0,\n')" != "" ]

step "purge from another namespace keeps the journal (nothing lost); from its own it reverts, then nothing is left"
dpkg --purge rxtune-datapath rxtune > "$TMP/purge0.log" 2>&1 || { cat "$TMP/purge0.log"; exit 1; }
grep -q "revert failed" "$TMP/purge0.log" && grep -q "journal.json holds originals that were not put back: kept" "$TMP/purge0.log" ||
  { echo "a purge whose revert fails should say so and keep the journal"; cat "$TMP/purge0.log"; exit 1; }
test -f /var/lib/rxtune/journal.json
[ "$(ip netns exec "$NS" cat /sys/class/net/v0/queues/rx-1/rps_cpus | tr -d '0,\n')" != "" ]
dpkg -i "$DEB" > /dev/null
mkdir -p /var/lib/rxtune && echo '{}' > /var/lib/rxtune/leftover
# In the namespace, where the journaled devices are: the package's prerm reverts them.
ip netns exec "$NS" dpkg --purge rxtune > "$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log"; exit 1; }
grep -q "the package is being removed: reverting what it changed" "$TMP/purge.log" || { echo "purge did not revert"; cat "$TMP/purge.log"; exit 1; }
[ "$(ip netns exec "$NS" cat /sys/class/net/v0/queues/rx-1/rps_cpus | tr -d '0,\n')" = "" ] ||
  { echo "rps_cpus not back to its original after purge"; cat "$TMP/purge.log"; exit 1; }
ip netns del "$NS"
for p in /usr/sbin/rxtune /usr/sbin/rxtune-dp /lib/systemd/system/rxtune-dp.service /etc/rxtune /var/lib/rxtune /usr/share/rxtune /lib/systemd/system/rxtune.service \
         /usr/share/man/man8/rxtune.8.gz /usr/share/bash-completion/completions/rxtune; do
  [ ! -e "$p" ] || { echo "left behind after purge: $p"; exit 1; }
done
echo "package: ok"
