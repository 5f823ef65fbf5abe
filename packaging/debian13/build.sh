#!/bin/bash
# make debian13: rxtune on Debian 13 (trixie: GCC 14, libmicrohttpd 1.0, DPDK 24.11, yaml-cpp 0.8,
# libbpf 1.5, Catch2 3, systemd 257), built and tested in a root of its own (an mmdebstrap chroot
# of trixie, amd64), never against this machine's Debian 12 -dev packages:
#   1. the release build (rxtune, rxtune-dp, the BPF objects) with warnings as errors;
#   2. the unit tests under ASan/UBSan, with warnings as errors, run there (promtool: trixie's);
#      then the integration tests that make test runs with the ASan/UBSan rxtune (detect, apply and
#      revert, the daemon with its endpoint and a real Prometheus, NAPI, status, coalescing; not
#      XDP: its pins must be on a bpffs in PID 1's mount namespace, which a root in a private one
#      cannot give, and rxtune rightly refuses; the booted Debian 13 lab steers with XDP), against
#      this machine's kernel in network namespaces of their own, with trixie's iproute2, ethtool,
#      curl and Prometheus;
#   3. the amd64 .debs (dpkg-buildpackage; their DPDK PMD dependencies computed by
#      debian/pmd-depends), checked with lintian;
#   4. those .debs installed with apt on a plain Debian 13 root (mmdebstrap's apt variant, a fresh
#      copy each run), where `rxtune detect` runs and `rxtune-dp` finds every library and PMD.
# The arm64 .debs come from packaging/cross/arm64.sh with CROSS_SUITE=trixie (make debian13 runs
# both). The roots are cached by content under build/debian13-cache/; the mounts live in a private
# mount namespace (unshare -m): nothing is left mounted on this machine.
#
# Output under build-debian13/: meson/ and asan/ (the builds), unit-tests.log, integration.log, debs/ (the .debs,
# the build log, lintian's report), install.log.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/buildroot.sh
. "$SRC/packaging/lib/buildroot.sh"
OUT=${DEBIAN13_OUT:-$SRC/build-debian13}
CACHE=${DEBIAN13_CACHE:-$SRC/build/debian13-cache}
SUITE=trixie
MIRROR=http://deb.debian.org/debian

# What the build, the unit tests and the packages need (prometheus: promtool, which the web
# config's tests ask).
PACKAGES="build-essential meson ninja-build pkgconf clang llvm bpftool python3 scdoc git
  libnl-3-dev libnl-route-3-dev libnl-genl-3-dev libyaml-cpp-dev catch2 prometheus-cpp-dev libdpdk-dev libbpf-dev
  libcli11-dev nlohmann-json3-dev libsystemd-dev libexpected-dev libcrypt-dev libmicrohttpd-dev libgnutls28-dev
  libelf-dev zlib1g-dev prometheus debhelper dpkg-dev fakeroot lintian bash-completion systemd systemd-dev file
  iproute2 ethtool curl procps kmod openssl util-linux strace tmux"

say() { printf 'debian13: %s\n' "$*"; }

mkdir -p "$OUT"
RECIPE=1
key=$(printf '%s\n' "$SUITE" "$PACKAGES" "$RECIPE" | sha256sum | cut -c1-16)
buildroot_ensure "$CACHE/build" "$key" "$SUITE" "$MIRROR" --variant=apt --include="$(echo $PACKAGES | tr ' ' ',')" \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb'
BUILDROOT=$ROOT
# The plain system the packages are installed on (unpacked fresh for each run).
buildroot_plain "$CACHE" "$SUITE" "$MIRROR"

buildroot_copy_tree "$SRC" "$OUT/tree"
# The BPF programs' types: this machine's kernel BTF, as the Debian 12 build takes the running one's.
cp /sys/kernel/btf/vmlinux "$OUT/vmlinux.btf"

ROOT=$BUILDROOT inroot '
  cd /out
  gcc --version | head -1
  t0=$SECONDS
  [ -e meson/build.ninja ] || meson setup meson tree -Dbuildtype=release -Ddebug=false -Dwerror=true -Dtests=false -Dbtf=/out/vmlinux.btf
  [ -e asan/build.ninja ] || meson setup asan tree -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args=-g1 -Dwerror=true -Dbtf=/out/vmlinux.btf
  ninja -C meson
  echo "debian13: release build in $((SECONDS - t0)) s"
  t0=$SECONDS
  ninja -C asan tests/unit_tests
  echo "debian13: ASan/UBSan unit tests built in $((SECONDS - t0)) s"
  /out/meson/agent/rxtune --version
  t0=$SECONDS
  cd tree
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
  RXTUNE_FIXTURES=/out/tree/tests/fixtures/hosts RXTUNE_PROFILES=/out/tree/profiles RXTUNE_SOURCE=/out/tree \
    /out/asan/tests/unit_tests --reporter compact > /out/unit-tests.log 2>&1 || rc=$?
  grep -v "^<" /out/unit-tests.log | grep -E "failed|passed|test cases|Sanitizer|runtime error" | tail -8
  echo "debian13: unit tests (ASan/UBSan) in $((SECONDS - t0)) s"
  [ "${rc:-0}" = 0 ]
'
# The integration tests: a private mount namespace gives the root its own /sys (rw: the tests
# steer their own veths), /run (ip netns keeps its namespaces there) and bpffs; nothing outside
# the tests' own namespaces and devices is changed (the same tests as make test's).
ROOT=$BUILDROOT inroot '
  mount -t sysfs sysfs /sys
  mount -t tmpfs tmpfs /run
  mount -t bpf bpf /sys/fs/bpf
  mount -t tmpfs tmpfs /tmp
  t0=$SECONDS
  cd /out
  RXTUNE_BIN_ASAN=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
    meson test -C asan integration --print-errorlogs \
    --test-args "[detect],[tune]~[crash],[daemon],[napi]~[auto],[status],[coalesce]" > /out/integration.log 2>&1 || rc=$?
  grep -E "test cases|assertions|failed|Ok:|Fail:" /out/integration.log | tail -6
  echo "debian13: integration tests (ASan/UBSan rxtune) in $((SECONDS - t0)) s"
  [ "${rc:-0}" = 0 ]
'
ROOT=$BUILDROOT inroot '
  # The packages, as Debian builds them (tests off: they ran above).
  t0=$SECONDS
  rm -rf /out/debsrc /out/debs && mkdir -p /out/debs
  cp -a /out/tree /out/debsrc && cp -r /out/debsrc/packaging/debian /out/debsrc/debian
  cd /out/debsrc
  RXTUNE_BTF=/out/vmlinux.btf DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$NPROC" \
    dpkg-buildpackage -us -uc -b > /out/debs/build.log 2>&1 || { tail -40 /out/debs/build.log; exit 1; }
  mv /out/*.deb /out/*.changes /out/*.buildinfo /out/debs/
  echo "debian13: packages in $((SECONDS - t0)) s"
  for d in /out/debs/*.deb; do dpkg-deb -f "$d" Package Architecture Depends | tr "\n" " "; echo; done
  lintian --fail-on error /out/debs/*.deb | tee /out/debs/lintian.txt
'

# The .debs on a plain Debian 13: apt resolves their dependencies from trixie (computed, so they
# must name trixie's librte-*25), then the binaries run against this machine's kernel.
say "installing the packages on a plain Debian 13 root"
PLAINROOT=$(mktemp -d "$CACHE/plain.XXXXXX")
trap 'rm -rf "$PLAINROOT"' EXIT
tar -C "$PLAINROOT" -xf "$PLAIN"
cp /etc/resolv.conf "$PLAINROOT/etc/resolv.conf"
ROOT=$PLAINROOT INROOT_SYSFS=ro inroot '
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends /out/debs/rxtune_*_amd64.deb /out/debs/rxtune-datapath_*_amd64.deb > /out/install.log 2>&1 \
    || { tail -30 /out/install.log; exit 1; }
  dpkg-query -W -f "\${Package} \${Version}\n" rxtune rxtune-datapath
  dpkg-query -W -f "\${Package}\n" "librte-*" | grep -E "^librte-(net-tap|net-virtio|mempool-ring)[0-9]+$"
  rxtune --version
  rxtune detect | head -20
  rxtune-dp --help | head -1
  # Every library it links, and the PMDs it loads by name, resolved on this plain system.
  ldd /usr/sbin/rxtune-dp > /tmp/ldd.txt
  if grep "not found" /tmp/ldd.txt; then exit 1; fi
  echo "rxtune-dp: $(wc -l < /tmp/ldd.txt) libraries, every one found"
  ls "$(dirname "$(ls -d /usr/lib/x86_64-linux-gnu/dpdk/pmds-*/librte_net_tap.so* | head -1)")" | grep -E "librte_(net_tap|net_af_packet|net_virtio|mempool_ring)\.so" | tr "\n" " "; echo
'
say "done: $OUT/meson, $OUT/debs (amd64)"
