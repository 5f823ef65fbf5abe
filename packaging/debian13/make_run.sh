#!/bin/bash
# make debian13-run: README's first command as a Debian 13 user meets it. `make run` on a plain
# Debian 13 root (mmdebstrap's apt variant, trixie, a fresh copy each run) with the source tree as
# git has it: make's deps step installs every missing package by its trixie name, the release
# build, then `rxtune detect` and `rxtune plan` read this machine's kernel (procfs, sysfs
# read-only, netlink in this machine's network namespace: read-only, as make run is). It checks
# what a user would: make's exit status, that detect named this machine's interfaces and that plan
# ran to its verdict.
#
# Output under build-debian13/make-run/: make-run.log (everything make printed).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/buildroot.sh
. "$SRC/packaging/lib/buildroot.sh"
OUT=${DEBIAN13_OUT:-$SRC/build-debian13}/make-run
CACHE=${DEBIAN13_CACHE:-$SRC/build/debian13-cache}
SUITE=trixie
MIRROR=http://deb.debian.org/debian

say() { printf 'debian13 make run: %s\n' "$*"; }

mkdir -p "$OUT"
buildroot_plain "$CACHE" "$SUITE" "$MIRROR"
PLAINROOT=$(mktemp -d "$CACHE/run.XXXXXX")
trap 'rm -rf "$PLAINROOT"' EXIT
tar -C "$PLAINROOT" -xf "$PLAIN"
cp /etc/resolv.conf "$PLAINROOT/etc/resolv.conf"
# The tree as a clone has it (no build output of this machine's).
buildroot_copy_tree "$SRC" "$PLAINROOT/src"
grep -x 'VERSION_CODENAME=trixie' "$PLAINROOT/etc/os-release" > /dev/null || { say "the plain root is not trixie"; exit 1; }

t0=$SECONDS
ROOT=$PLAINROOT INROOT_SYSFS=ro inroot '
  # apt-get is all a plain root has: make itself comes from it, as on a fresh machine.
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends make git > /dev/null
  cd /src
  rc=0
  make run > /out/make-run.log 2>&1 || rc=$?
  tail -25 /out/make-run.log
  [ "$rc" = 0 ] || { echo "make run exited $rc"; exit 1; }
'
log=$OUT/make-run.log
# detect lists this machine's NICs by name; plan says what it would change or that nothing.
for ifc in $(ls /sys/class/net); do
  [ -e "/sys/class/net/$ifc/device" ] || continue  # a NIC (not a test's transient veth)
  grep -q -- "$ifc" "$log" || { say "detect did not name $ifc"; exit 1; }
done
grep -q "make deps: installing" "$log" || { say "make deps installed nothing on a plain root"; exit 1; }
grep -qE '^\./build/agent/rxtune plan' "$log" || { say "plan did not run"; exit 1; }
say "passed in $((SECONDS - t0)) s (the log: $log)"
