#!/bin/bash
# rxtune, rxtune-dp (and the BPF objects) and the unit tests built on Debian 13 (trixie: GCC 14,
# libmicrohttpd 1.0, DPDK 24.11, yaml-cpp 0.8, libbpf 1.5, Catch2 3, systemd 257) with warnings as
# errors, in a root of its own (an mmdebstrap chroot of trixie, amd64), never against this
# machine's Debian 12 -dev packages; then the unit tests run there. The first part of #46: the
# integration tests and the packages are not built here yet. The root is cached by content under
# build/debian13-cache/ (a second run reuses it); its mounts live in a private mount namespace
# (unshare -m): nothing is left mounted on this machine.
#
# Output under build-debian13/: meson/ (the build), unit-tests.log.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${DEBIAN13_OUT:-$SRC/build-debian13}
CACHE=${DEBIAN13_CACHE:-$SRC/build/debian13-cache}
SUITE=trixie

# What the build and the unit tests need (prometheus: promtool, which the web config's tests ask).
PACKAGES="build-essential meson ninja-build pkgconf clang llvm bpftool python3 scdoc git
  libnl-3-dev libnl-route-3-dev libnl-genl-3-dev libyaml-cpp-dev catch2 prometheus-cpp-dev libdpdk-dev libbpf-dev
  libcli11-dev nlohmann-json3-dev libsystemd-dev libexpected-dev libcrypt-dev libmicrohttpd-dev libgnutls28-dev
  libelf-dev zlib1g-dev prometheus debhelper dpkg-dev fakeroot lintian bash-completion systemd systemd-dev file"

say() { printf 'debian13: %s\n' "$*"; }

# Runs a bash script inside the root, $OUT at /out (the tree's copy at /out/tree).
inroot() {
  ROOT=$ROOT OUT=$OUT unshare --mount --propagation private bash -euo pipefail -c '
    mkdir -p "$ROOT/out"
    mount --bind "$OUT" "$ROOT/out"
    mount -t proc proc "$ROOT/proc"
    mount --bind /dev "$ROOT/dev"
    exec chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive NPROC="$(nproc)" bash -euo pipefail -c "$1"' inroot "$1"
}

RECIPE=1
key=$(printf '%s\n' "$SUITE" "$PACKAGES" "$RECIPE" | sha256sum | cut -c1-16)
ROOT=$CACHE/root-$key
if [ ! -e "$ROOT/.done" ]; then
  rm -rf "$CACHE"/root-*
  mkdir -p "$CACHE"
  say "building the build root ($ROOT), once per content"
  t0=$SECONDS
  mmdebstrap --quiet --variant=apt --include="$(echo $PACKAGES | tr ' ' ',')" \
    --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb' \
    "$SUITE" "$ROOT" "deb http://deb.debian.org/debian $SUITE main"
  touch "$ROOT/.done"
  say "build root ready in $((SECONDS - t0)) s"
fi

# The tree as git has it (committed and untracked, not ignored), copied where changed.
mkdir -p "$OUT/tree"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard) | python3 -c '
import filecmp, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
want = set(p for p in sys.stdin.buffer.read().decode().split("\0") if p and os.path.isfile(os.path.join(src, p)))
for p in want:
    s, d = os.path.join(src, p), os.path.join(dst, p)
    if not os.path.isfile(d) or not filecmp.cmp(s, d, shallow=False):
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(s, d)
        os.utime(d)
for root, dirs, files in os.walk(dst):
    for f in files:
        rel = os.path.relpath(os.path.join(root, f), dst)
        if rel not in want:
            os.unlink(os.path.join(root, f))
' "$SRC" "$OUT/tree"

# The BPF programs' types: this machine's kernel BTF, as the Debian 12 build takes the running one's.
cp /sys/kernel/btf/vmlinux "$OUT/vmlinux.btf"

inroot '
  cd /out
  gcc --version | head -1
  t0=$SECONDS
  [ -e meson/build.ninja ] || meson setup meson tree -Dbuildtype=release -Ddebug=false -Dwerror=true -Dbtf=/out/vmlinux.btf
  ninja -C meson agent/rxtune datapath/rxtune-dp tests/unit_tests
  echo "debian13: built in $((SECONDS - t0)) s"
  /out/meson/agent/rxtune --version
  t0=$SECONDS
  cd tree
  RXTUNE_FIXTURES=/out/tree/tests/fixtures/hosts RXTUNE_PROFILES=/out/tree/profiles RXTUNE_SOURCE=/out/tree \
    /out/meson/tests/unit_tests --reporter compact > /out/unit-tests.log 2>&1 || rc=$?
  grep -v "^<" /out/unit-tests.log | grep -E "failed|passed|test cases" | tail -8
  echo "debian13: unit tests in $((SECONDS - t0)) s"
  [ "${rc:-0}" = 0 ]
'
say "done: $OUT/meson"
