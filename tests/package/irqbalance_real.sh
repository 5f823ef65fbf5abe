#!/usr/bin/env bash
# The real irqbalance (Debian's binary) with rxtune's policy script, run as the opt-in drop-in
# starts it, inside a sandbox that keeps it off this host's IRQs:
#   - a private mount namespace (unshare --mount) in which /proc/irq is a tmpfs holding three made-up
#     IRQs (90-92), /proc/interrupts is a file of ours naming only those, and /sys/bus/pci/devices is
#     empty (irqbalance finds IRQs in both, classify.c / procinterrupts.c); every write irqbalance
#     makes (activate.c: /proc/irq/N/smp_affinity) lands in the tmpfs and goes with the namespace;
#   - irqbalance starts only once those mounts are checked in place (else the test fails without it);
#   - the host's own /proc/irq/*/smp_affinity are read before and after and must not have changed.
# What it shows (irqbalance 1.9.2, irqbalance(1), classify.c get_irq_user_policy /
# run_script_for_policy, irqbalance.c force_rescan):
#   1. irqbalance runs the script as `SCRIPT <sysfs path> <irq>` for each IRQ it discovers; the IRQ
#      listed in <run_dir>/pinned-irqs is answered ban=true and never written, the others are;
#   2. irqbalance asks only when it (re)discovers IRQs: an IRQ pinned after it started is moved by
#      it until SIGHUP makes it rescan (what rxtune sends when pinned-irqs changes); after SIGHUP
#      the newly pinned IRQ is left alone while the others are balanced again;
#   3. rxtune itself: `rxtune apply` with irq.cpus pins IRQ 91 (of veth rxt91 in a netns of the
#      test's, named after it in our /proc/interrupts; the write lands in the tmpfs), writes
#      pinned-irqs and sends the running irqbalance SIGHUP, which then bans 91; `rxtune revert`
#      takes it out of the list and tells irqbalance again, which then places 91 itself;
#   4. rxtune apply at once after irqbalance starts (as at boot or after a restart), when irqbalance
#      drops a rescan request: rxtune says so, waits for its first pass (its control socket's
#      `stats`, in a /run/irqbalance of the sandbox's own), tells it, then writes; irqbalance bans
#      91 and never writes it after rxtune's write.
# Usage: tests/package/irqbalance_real.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
SRC=$PWD
script="$SRC/packaging/irqbalance/rxtune-policy"
dropin="$SRC/packaging/irqbalance/irqbalance-rxtune.conf"

# The binary: this host's if installed, else Debian's package unpacked into the build directory
# (never installed: on a systemd host that would start irqbalance.service and move the host's IRQs).
bin=$(command -v irqbalance || true)
if [ -z "$bin" ]; then
  dir="$SRC/$BUILD/irqbalance-deb"
  if [ ! -x "$dir/usr/sbin/irqbalance" ]; then
    mkdir -p "$dir"
    (cd "$dir" && apt-get download -q irqbalance > download.log 2>&1 || { cat download.log; exit 1; })
    dpkg-deb -x "$dir"/irqbalance_*.deb "$dir"
  fi
  bin="$dir/usr/sbin/irqbalance"
fi
echo "irqbalance: $bin ($("$bin" --version 2>&1 | head -1))"
[ "$(nproc)" -ge 2 ] || { echo "irqbalance does nothing on one CPU: needs 2"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
host_irqs() { for f in /proc/irq/*/smp_affinity; do echo "$f $(cat "$f" 2>/dev/null)"; done; }
host_irqs > "$work/host-before"

mkdir -p "$work/irq" "$work/run"
{
  printf '            %s\n' "$(for c in $(seq 0 $(($(nproc) - 1))); do printf 'CPU%-8d' "$c"; done)"
  for n in 90 91 92; do
    printf '%4d: %s PCI-MSI %d-edge      rxt%d-rx\n' "$n" "$(for c in $(seq 1 "$(nproc)"); do printf '%10d ' $((n * 1000 + c)); done)" $((524288 + n)) "$n"
  done
  echo " NMI:          0          0   Non-maskable interrupts"
} > "$work/interrupts"
touch "$work/irq/.rxtune-sandbox"
for n in 90 91 92; do mkdir "$work/irq/$n"; echo 0 > "$work/irq/$n/smp_affinity"; done
# What rxtune reads and writes of IRQ 91 (its action names the owner; effective is where the
# kernel would serve it after the write: the CPU the profile asks for). rxtune writes procfs
# files without truncating them, as procfs needs none; on the tmpfs the original is therefore one
# CPU, as long as what is written over it.
mkdir "$work/irq/91/rxt91-rx"
echo 0 > "$work/irq/91/smp_affinity_list"
echo 1 > "$work/irq/91/effective_affinity_list"
rxtune=$(realpath "$BUILD/agent/rxtune")
[ -x "$rxtune" ] || { echo "build first: $rxtune"; exit 1; }
ns=rxt-irqb-$$
ip netns add "$ns"
# The sandbox's /run/irqbalance (a tmpfs in its mount namespace) needs a mount point here; made
# empty for the test where the host has none, and removed after.
made_run=""
if [ ! -d /run/irqbalance ]; then mkdir /run/irqbalance; made_run=1; fi
trap 'ip netns del "$ns" 2>/dev/null || true; rm -rf "$work"; [ -z "$made_run" ] || rmdir /run/irqbalance' EXIT
ip -n "$ns" link add rxt91 type veth peer name rxt91p
printf 'match:\n  interfaces: [rxt91]\n  virtual: include\nsteering:\n  mode: none\nirq:\n  cpus: "1"\n' > "$work/pin.yaml"
state=(--state-dir "$work/state" --run-dir "$work/run" --bpf-dir "$work/bpf")

# The drop-in's command line, with this tree's script and the test's binary: the flag the package
# ships is the one the real binary is given.
execstart=$(grep '^ExecStart=/' "$dropin" | head -1)
policy_arg=$(tr ' ' '\n' <<< "$execstart" | grep -- '--policyscript=')
policy_arg=${policy_arg/\/usr\/share\/rxtune\/irqbalance\/rxtune-policy/$script}
[ "$policy_arg" = "--policyscript=$script" ] || { echo "drop-in's policy argument not understood: $execstart"; exit 1; }

cat > "$work/inner.sh" <<EOF
set -eu
pid=
trap '[ -z "\$pid" ] || kill \$pid 2>/dev/null || true' EXIT  # no irqbalance outlives a failure
mount -t tmpfs -o size=1m rxtune-irq /proc/irq
cp -r "$work/irq/." /proc/irq/
mount --bind "$work/interrupts" /proc/interrupts
mount -t tmpfs -o size=1m rxtune-pci /sys/bus/pci/devices
if [ -d /run/irqbalance ]; then mount -t tmpfs -o size=1m rxtune-run /run/irqbalance; fi
[ "\$(stat -f -c %T /proc/irq)" = tmpfs ] && [ -e /proc/irq/.rxtune-sandbox ] || { echo "sandbox: /proc/irq not replaced"; exit 99; }
cmp -s /proc/interrupts "$work/interrupts" || { echo "sandbox: /proc/interrupts not replaced"; exit 99; }
[ -z "\$(ls /sys/bus/pci/devices)" ] || { echo "sandbox: PCI devices still visible"; exit 99; }
aff() { for n in 90 91 92; do printf '%s=%s ' "\$n" "\$(cat /proc/irq/\$n/smp_affinity)"; done; echo; }
wait_log() { for _ in \$(seq 1 100); do grep -q "\$1" "$work/ib.log" && return 0; sleep 0.1; done; echo "irqbalance never logged: \$1"; exit 1; }
unplace() { for n in 90 91 92; do echo 0 > /proc/irq/\$n/smp_affinity; done; }
# Waits (up to 10 s) until irqbalance has placed every IRQ named.
wait_placed() {
  for _ in \$(seq 1 100); do
    local all=1
    for n in "\$@"; do [ "\$(cat /proc/irq/\$n/smp_affinity)" != 0 ] || all=0; done
    [ \$all = 1 ] && return 0
    sleep 0.1
  done
  return 0
}
# irqbalance as a daemon, nothing pinned and nothing placed at its start; returns once it placed 91.
start_daemon() {
  unplace
  : > "$work/run/pinned-irqs"
  RXTUNE_RUN_DIR="$work/run" timeout 60 "$bin" --foreground --debug --interval=1 $policy_arg > "$work/ib.log" 2>&1 &
  pid=\$!
  wait_placed 91
  [ "\$(cat /proc/irq/91/smp_affinity)" != 0 ] || { echo "irqbalance did not place IRQ 91 while it was not pinned"; exit 1; }
}

# 1. oneshot: 91 pinned before irqbalance starts.
echo 91 > "$work/run/pinned-irqs"
RXTUNE_RUN_DIR="$work/run" IRQBALANCE_ARGS= timeout 60 "$bin" --foreground --oneshot --debug --interval=1 $policy_arg > "$work/ib.log" 2>&1
grep -q "IRQ 91: Override ban to true" "$work/ib.log" || { echo "the script's ban=true was not read"; cat "$work/ib.log"; exit 1; }
echo "oneshot: \$(aff)"
for n in 90 92; do [ "\$(cat /proc/irq/\$n/smp_affinity)" != 0 ] || { echo "irqbalance placed no IRQ \$n (nothing to compare with)"; exit 1; }; done
[ "\$(cat /proc/irq/91/smp_affinity)" = 0 ] || { echo "irqbalance wrote pinned IRQ 91"; exit 1; }

# 2. daemon: nothing pinned at start, so it places 91 too; then 91 is pinned and SIGHUP sent.
start_daemon
echo "daemon, nothing pinned: \$(aff)"
unplace
echo 91 > "$work/run/pinned-irqs"
kill -HUP \$pid
wait_log "IRQ 91 was BANNED"
wait_placed 90 92
sleep 2.5  # two more balancing rounds
echo "daemon, 91 pinned and SIGHUP: \$(aff)"
kill \$pid; wait \$pid || true
for n in 90 92; do [ "\$(cat /proc/irq/\$n/smp_affinity)" != 0 ] || { echo "after the rescan irqbalance did not place IRQ \$n again"; exit 1; }; done
[ "\$(cat /proc/irq/91/smp_affinity)" = 0 ] || { echo "irqbalance wrote IRQ 91 after it was pinned and told"; exit 1; }

# 3. rxtune pins 91 and tells the running irqbalance; revert tells it again.
start_daemon
unplace
ip netns exec "$ns" "$rxtune" apply -p "$work/pin.yaml" ${state[*]} > "$work/apply.out" 2>&1 || { cat "$work/apply.out"; exit 1; }
cat "$work/apply.out"
ibpid=\$(pgrep -P \$pid -x irqbalance)  # \$pid is timeout's
grep -q "irqbalance (pid \$ibpid) told to rescan" "$work/apply.out" || { echo "rxtune apply did not tell irqbalance (pid \$ibpid)"; exit 1; }
[ "\$(cat /proc/irq/91/smp_affinity_list)" = 1 ] || { echo "rxtune did not pin IRQ 91: \$(cat /proc/irq/91/smp_affinity_list)"; exit 1; }
[ "\$(cat "$work/run/pinned-irqs")" = 91 ] || { echo "pinned-irqs: \$(cat "$work/run/pinned-irqs")"; exit 1; }
wait_log "IRQ 91 was BANNED"
wait_placed 90 92
sleep 2.5
echo "rxtune pinned 91 and told irqbalance: \$(aff)"
[ "\$(cat /proc/irq/91/smp_affinity)" = 0 ] || { echo "irqbalance wrote IRQ 91 after rxtune pinned it and told it"; exit 1; }
echo 0 > /proc/irq/91/effective_affinity_list  # where the kernel would serve it once the original is back
ip netns exec "$ns" "$rxtune" revert ${state[*]} > "$work/revert.out" 2>&1 || { cat "$work/revert.out"; exit 1; }
grep -q "irqbalance (pid \$ibpid) told to rescan" "$work/revert.out" || { cat "$work/revert.out"; echo "rxtune revert did not tell irqbalance"; exit 1; }
[ "\$(cat /proc/irq/91/smp_affinity_list)" = 0 ] || { echo "revert did not put IRQ 91's list back"; exit 1; }
wait_placed 91
echo "rxtune reverted and told irqbalance: \$(aff)"
kill \$pid; wait \$pid || true
[ "\$(cat /proc/irq/91/smp_affinity)" != 0 ] || { echo "irqbalance did not take IRQ 91 back after the revert"; exit 1; }

# 4. rxtune apply at once after irqbalance starts: its first pass has not come, a SIGHUP now would
# be dropped, so rxtune waits for that pass, then tells it, then writes.
unplace
: > "$work/run/pinned-irqs"
RXTUNE_RUN_DIR="$work/run" timeout 60 "$bin" --foreground --debug --interval=1 $policy_arg > "$work/ib.log" 2>&1 &
pid=\$!
for _ in \$(seq 1 50); do ls /run/irqbalance/*.sock >/dev/null 2>&1 && break; sleep 0.05; done
ip netns exec "$ns" "$rxtune" apply -p "$work/pin.yaml" ${state[*]} > "$work/apply.out" 2>&1 || { cat "$work/apply.out"; exit 1; }
cat "$work/apply.out"
grep -q "has not made its first pass" "$work/apply.out" || { echo "rxtune apply did not wait for irqbalance's first pass"; exit 1; }
written=\$(date -r /proc/irq/91/smp_affinity_list +%s%N)
wait_log "IRQ 91 was BANNED"
sleep 2.5
echo "rxtune pinned 91 at irqbalance's start: \$(aff)"
last=\$(date -r /proc/irq/91/smp_affinity +%s%N)
[ "\$last" -lt "\$written" ] || { echo "irqbalance wrote IRQ 91 after rxtune pinned it at its start"; exit 1; }
[ "\$(cat /proc/irq/91/smp_affinity_list)" = 1 ] || { echo "IRQ 91 is not on rxtune's CPU: \$(cat /proc/irq/91/smp_affinity_list)"; exit 1; }
ip netns exec "$ns" "$rxtune" revert ${state[*]} > "$work/revert.out" 2>&1 || { cat "$work/revert.out"; exit 1; }
kill \$pid; wait \$pid || true
EOF
rc=0
unshare --mount --propagation private bash "$work/inner.sh" || rc=$?
host_irqs > "$work/host-after"
if ! cmp -s "$work/host-before" "$work/host-after"; then
  echo "FAILED: the host's IRQ affinities changed:"; diff "$work/host-before" "$work/host-after" || true; exit 1
fi
if [ $rc -ne 0 ]; then
  echo "FAILED (exit $rc); irqbalance's log:"; tail -40 "$work/ib.log" 2>/dev/null || true; exit 1
fi
echo "irqbalance (real binary): ok"
