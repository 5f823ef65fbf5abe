#!/usr/bin/env bash
# A staged install (DESTDIR) lays out every file where the packaging expects it.
set -euo pipefail
BUILD=${1:-build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR="$stage" meson install -C "$BUILD" --no-rebuild --quiet
prefix=$(meson introspect "$BUILD" --buildoptions | python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
[ "$prefix" = /usr ] || { echo "staged install: the build's prefix is $prefix, expected /usr"; exit 1; }
fail=0
for f in usr/sbin/rxtune etc/rxtune/rxtune.yaml \
         usr/share/rxtune/profiles/{single-queue-gateway,balanced,throughput,latency}.yaml \
         usr/share/rxtune/rxtune-alerts.yml usr/share/rxtune/rxtune-recording.yml usr/share/rxtune/grafana/rxtune.json \
         usr/share/bash-completion/completions/rxtune \
         usr/share/man/man8/rxtune.8 usr/share/man/man5/rxtune.yaml.5 usr/share/man/man5/rxtune-profile.5 \
         lib/systemd/system/rxtune.service lib/systemd/system/rxtune-apply.service \
         usr/sbin/rxtune-dp etc/rxtune/rxtune-dp.yaml usr/share/man/man8/rxtune-dp.8 lib/systemd/system/rxtune-dp.service; do
  [ -e "$stage/$f" ] || { echo "staged install: missing /$f"; fail=1; }
done
[ -d "$stage/var/lib/rxtune" ] || { echo "staged install: missing /var/lib/rxtune"; fail=1; }
[ "$(stat -c %a "$stage/var/lib/rxtune")" = 700 ] || { echo "staged install: /var/lib/rxtune is not 0700"; fail=1; }
# The installed binary finds the installed profiles by name.
"$stage/usr/sbin/rxtune" --version | grep '^rxtune ' >/dev/null || fail=1
strings "$stage/usr/sbin/rxtune" | grep '/usr/share/rxtune/profiles' >/dev/null || { echo "staged install: profile dir not compiled in"; fail=1; }
[ $fail -eq 0 ] && echo "staged install: $(find "$stage" -type f | wc -l) files in place"
exit $fail
