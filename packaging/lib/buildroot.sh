# shellcheck shell=bash
# What packaging/cross/arm64.sh and packaging/debian13/build.sh share: a Debian build root made by
# mmdebstrap and cached by content, the source tree copied into it, and scripts run inside it.
# Sourced, not run. The mounts a script needs live in a private mount namespace (unshare -m):
# nothing is left mounted on this machine.

# buildroot_ensure CACHE KEY SUITE MIRRORS MMDEBSTRAP-OPTIONS...: the root for KEY under CACHE
# (built once per KEY, an older one removed); its path in $ROOT. MIRRORS: apt source lines or
# sources files, space-separated as mmdebstrap takes them after the target.
buildroot_ensure() {
  local cache=$1 key=$2 suite=$3 mirrors=$4
  shift 4
  ROOT=$cache/root-$key
  if [ -e "$ROOT/.done" ]; then return 0; fi
  rm -rf "$cache"/root-*
  mkdir -p "$cache"
  say "building the build root ($ROOT), once per content"
  local t0=$SECONDS
  # shellcheck disable=SC2086
  mmdebstrap --quiet "$@" "$suite" "$ROOT" $mirrors
  touch "$ROOT/.done"
  say "build root ready in $((SECONDS - t0)) s"
}

# buildroot_plain CACHE SUITE MIRROR: a plain system of SUITE as mmdebstrap's apt variant makes it
# (essential packages and apt), kept as a tarball under CACHE (made once) and unpacked fresh by
# each user; its path in $PLAIN.
buildroot_plain() {
  PLAIN=$1/plain-$2.tar
  if [ -s "$PLAIN" ]; then return 0; fi
  say "building the plain $2 root ($PLAIN)"
  mkdir -p "$1"
  rm -rf "$PLAIN.tmp"
  mmdebstrap --quiet --variant=apt --format=tar "$2" "$PLAIN.tmp" "$3"
  mv "$PLAIN.tmp" "$PLAIN"
}

# buildroot_copy_tree SRC DST: the tree as git has it (committed and untracked, not ignored). A file
# is copied only where its content differs from the last run's copy (which then gets a new time),
# and what is gone is removed: so a second build rebuilds exactly what changed.
buildroot_copy_tree() {
  mkdir -p "$2"
  (cd "$1" && git ls-files -z --cached --others --exclude-standard) | python3 -c '
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
' "$1" "$2"
}

# inroot SCRIPT: runs a bash script inside $ROOT, $OUT bound at /out; NPROC is this machine's CPUs.
# The root is bound onto itself first, so that its / is a mount point (ip netns exec makes it a
# slave mount, which a plain directory refuses). /dev comes with its submounts (/dev/pts: tmux).
inroot() {
  ROOT=$ROOT OUT=$OUT INROOT_SYSFS=${INROOT_SYSFS:-} unshare --mount --propagation private bash -euo pipefail -c '
    mount --bind "$ROOT" "$ROOT"
    mkdir -p "$ROOT/out"
    mount --bind "$OUT" "$ROOT/out"
    mount -t proc proc "$ROOT/proc"
    mount --rbind /dev "$ROOT/dev"
    # INROOT_SYSFS=ro: sysfs, read-only (a root without mount(8) reads the host through it).
    if [ "${INROOT_SYSFS:-}" = ro ]; then mount -t sysfs -o ro sysfs "$ROOT/sys"; fi
    exec chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive NPROC="$(nproc)" bash -euo pipefail -c "$1"' inroot "$1"
}
