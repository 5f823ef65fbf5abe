#!/bin/bash
# make cross-arm64: rxtune, rxtune-dp and the BPF objects built for arm64 (aarch64) with Debian's
# cross toolchain and the :arm64 libraries, the unit tests run under qemu-aarch64-static, and the
# arm64 .debs built (dpkg-buildpackage -a arm64) and checked with lintian.
#
# All of it runs in a root of its own (an mmdebstrap chroot of bookworm, or CROSS_SUITE, with amd64 and arm64),
# never against this machine's own -dev packages: libyaml-cpp-dev and libexpected-dev are not
# Multi-Arch: same, so their amd64 and arm64 packages cannot be installed side by side. The root
# is cached by content under build/cross-cache/ (a second run reuses it). The mounts it needs live
# in a private mount namespace (unshare -m): nothing is left mounted on this machine.
#
# The BPF programs are compiled against arm64 types: vmlinux.h from the BTF of Debian's arm64
# kernel package (packaging/cross/btf_from_image.py reads it out of the image), not the build
# host's.
#
# Output under build-arm64/: meson/ (the build), debs/ (the .debs, the build log, lintian's report).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/buildroot.sh
. "$SRC/packaging/lib/buildroot.sh"
# CROSS_SUITE=trixie: the same for Debian 13 (make debian13), in build-arm64-trixie/.
SUITE=${CROSS_SUITE:-bookworm}
if [ "$SUITE" = bookworm ]; then
  OUT=${CROSS_OUT:-$SRC/build-arm64}
  CACHE=${CROSS_CACHE:-$SRC/build/cross-cache}
else
  OUT=${CROSS_OUT:-$SRC/build-arm64-$SUITE}
  CACHE=${CROSS_CACHE:-$SRC/build/cross-cache-$SUITE}
fi

# Native tools (amd64) and the libraries rxtune links (arm64). catch2, CLI11, nlohmann-json and
# expected are header-only (catch2: Multi-Arch foreign; the others Architecture: all). prometheus
# for promtool, which the web config's unit tests ask (they run in this root). From Debian 13 on,
# systemd's pkg-config file (its unit directory) is in systemd-dev.
NATIVE="build-essential crossbuild-essential-arm64 meson ninja-build pkgconf clang llvm bpftool python3 scdoc
  debhelper dpkg-dev fakeroot lintian qemu-user-static bash-completion catch2 libcli11-dev nlohmann-json3-dev
  libexpected-dev systemd file prometheus"
ARM64="libnl-3-dev libnl-route-3-dev libnl-genl-3-dev libyaml-cpp-dev prometheus-cpp-dev libdpdk-dev libbpf-dev
  libsystemd-dev libcrypt-dev libmicrohttpd-dev libgnutls28-dev libelf-dev zlib1g-dev pkgconf"
# Debian 13's Catch2 3 is a compiled library (libcatch2-dev: /usr/lib/libCatch2.a), the target's, not the
# build machine's header-only Catch2 2.
if [ "$SUITE" != bookworm ]; then
  NATIVE="$(echo "$NATIVE" | sed 's/ catch2 / /') systemd-dev"
  ARM64="$ARM64 libcatch2-dev"
fi

say() { printf 'cross-arm64: %s\n' "$*"; }

# bookworm: this machine's apt sources (the suite it runs); another suite: Debian's mirror for it.
sources() {
  if [ "$SUITE" != bookworm ]; then
    echo "http://deb.debian.org/debian"
    return
  fi
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    if [ -s "$f" ]; then echo "$f"; fi
  done
}

packages() {
  local out=""
  for p in $NATIVE; do out="$out,$p"; done
  for p in $ARM64; do out="$out,$p:arm64"; done
  echo "${out#,}"
}

# The root's key: what goes into it (RECIPE: bumped when the mmdebstrap call below changes).
RECIPE=1
key=$(printf '%s\n' "$SUITE" "$NATIVE" "$ARM64" "$RECIPE" | sha256sum | cut -c1-16)
# Debian's arm64 kernel package is fetched, not installed (its initramfs hook would run arm64
# tools): only its image is read, for its BTF.
buildroot_ensure "$CACHE" "$key" "$SUITE" "$(sources | tr '\n' ' ')" \
  --variant=apt --architectures=amd64,arm64 --include="$(packages)" \
  --customize-hook='chroot "$1" sh -c "mkdir -p /opt/kernel && cd /opt/kernel && apt-get download \$(apt-cache depends linux-image-arm64:arm64 | sed -n \"s/.*Depends: \(linux-image-[0-9][^ :]*\).*/\1/p\" | head -1):arm64"' \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb'

buildroot_copy_tree "$SRC" "$OUT/tree"

inroot '
  cd /out
  deb=$(ls /opt/kernel/linux-image-*_arm64.deb | head -1)
  rm -rf kernel && mkdir kernel && dpkg-deb -x "$deb" kernel
  # /boot/vmlinuz-VERSION up to Debian 12'"'"'s kernels, /usr/lib/modules/VERSION/vmlinuz from 6.12.117 on.
  image=$(find kernel/boot kernel/usr/lib/modules -name "vmlinuz*" -type f 2>/dev/null | sort | head -1 || true)
  [ -n "$image" ] || { echo "cross-arm64: no vmlinuz in $deb"; exit 1; }
  python3 tree/packaging/cross/btf_from_image.py "$image" /out/vmlinux-arm64.btf
  t0=$SECONDS
  [ -e meson/build.ninja ] || meson setup meson tree --cross-file tree/packaging/cross/aarch64-linux-gnu.ini \
    -Dbuildtype=release -Ddebug=false -Dwerror=true -Dbtf=/out/vmlinux-arm64.btf
  ninja -C meson
  echo "cross-arm64: built in $((SECONDS - t0)) s"
  file meson/agent/rxtune meson/datapath/rxtune-dp meson/tests/unit_tests | sed "s/, BuildID.*//"
  file meson/bpf/softirq.bpf.o
  # arm64 types, not the build host'"'"'s: struct user_pt_regs is arm64'"'"'s (x86 has pt_regs only).
  grep -q "^struct user_pt_regs {" meson/bpf/vmlinux.h || { echo "cross-arm64: vmlinux.h has no arm64 types"; exit 1; }
  echo "cross-arm64: vmlinux.h has arm64 types (struct user_pt_regs)"
  # The unit tests, arm64, under qemu-aarch64-static (called explicitly: binfmt_misc is not
  # needed) with this root'"'"'s arm64 libraries.
  t0=$SECONDS
  cd tree
  RXTUNE_FIXTURES=/out/tree/tests/fixtures/hosts RXTUNE_PROFILES=/out/tree/profiles RXTUNE_SOURCE=/out/tree \
    qemu-aarch64-static -L / /out/meson/tests/unit_tests --reporter compact > /out/unit-tests.log 2>&1 || rc=$?
  grep -v "^<" /out/unit-tests.log | tail -5
  echo "cross-arm64: unit tests under qemu in $((SECONDS - t0)) s"
  [ "${rc:-0}" = 0 ]
  # The arm64 packages, as Debian cross-builds them (tests off: they ran above, under qemu).
  t0=$SECONDS
  rm -rf /out/debsrc /out/debs && mkdir -p /out/debs
  cp -a /out/tree /out/debsrc && cp -r /out/debsrc/packaging/debian /out/debsrc/debian
  cd /out/debsrc
  RXTUNE_BTF=/out/vmlinux-arm64.btf DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$NPROC" \
    dpkg-buildpackage -a arm64 -us -uc -b > /out/debs/build.log 2>&1 || { tail -40 /out/debs/build.log; exit 1; }
  mv /out/*.deb /out/*.changes /out/*.buildinfo /out/debs/
  echo "cross-arm64: packages in $((SECONDS - t0)) s"
  for d in /out/debs/*.deb; do dpkg-deb -f "$d" Package Architecture; done
  lintian --fail-on error /out/debs/*.deb | tee /out/debs/lintian.txt
'
say "done: $OUT/meson, $OUT/debs"
