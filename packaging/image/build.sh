#!/usr/bin/env bash
# Builds rxtune's container image from the project's own .deb: a Debian 12 root filesystem with the
# package and the runtime libraries it depends on, and nothing else (mmdebstrap's extract variant:
# no shell, no package manager, no maintainer scripts), from the Debian mirror this host's apt is
# configured with. podman imports it as localhost/rxtune:VERSION (entrypoint `rxtune daemon`) and
# saves it as an OCI archive, OUT_DIR/rxtune-VERSION.oci.tar, that podman or containerd can load.
# Usage: packaging/image/build.sh DEB OUT_DIR   (as root)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 DEB OUT_DIR" >&2; exit 2; }
DEB=$(realpath "$1")
OUT=$2
VERSION=$(dpkg-deb -f "$DEB" Version)
NAME=localhost/rxtune:$VERSION
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The package's runtime dependencies by name (versions are the mirror's; the .deb was built against
# the same release).
DEPS=$(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/[[:space:]]//g' | grep . | paste -sd,)
SOURCES=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && SOURCES+=("$f")
done
[ ${#SOURCES[@]} -gt 0 ] || { echo "no apt sources configured on this host" >&2; exit 1; }
mmdebstrap --quiet --variant=extract --format=directory --include="$DEPS" \
  --extract-hook="dpkg-deb -x '$DEB' \"\$1\"" bookworm "$WORK/root" "${SOURCES[@]}"
# What a daemon in a container never reads; mount points for the DaemonSet's volumes.
rm -rf "$WORK"/root/usr/share/{doc,man,info,locale,lintian,bug} "$WORK"/root/var/cache/* "$WORK"/root/var/lib/apt
mkdir -p "$WORK"/root/{proc,sys,tmp,run/rxtune,var/lib/rxtune,etc/rxtune}
chmod 1777 "$WORK/root/tmp"

podman rmi --force "$NAME" >/dev/null 2>&1 || true
tar -C "$WORK/root" --numeric-owner -c . | podman import \
  --change 'ENTRYPOINT ["/usr/sbin/rxtune", "daemon"]' \
  --change 'CMD ["--config", "/etc/rxtune/rxtune.yaml"]' \
  --change 'EXPOSE 9867/tcp' \
  --change "LABEL org.opencontainers.image.title=rxtune org.opencontainers.image.version=$VERSION" \
  --quiet - "$NAME" >/dev/null
mkdir -p "$OUT"
rm -f "$OUT/rxtune-$VERSION.oci.tar"
podman save --quiet --format oci-archive -o "$OUT/rxtune-$VERSION.oci.tar" "$NAME"
echo "image $NAME: $(du -sh --apparent-size "$WORK/root" | cut -f1) unpacked, archive $OUT/rxtune-$VERSION.oci.tar $(du -h "$OUT/rxtune-$VERSION.oci.tar" | cut -f1)"
