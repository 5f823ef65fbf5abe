#!/usr/bin/env bash
# The .debs make test's package and image stages test (build-deb/), built as `make deb` builds them
# but for what is tested there: the packaging (files, units, maintainer scripts, capabilities,
# dependencies), not the optimised code, which the release build's tests have covered. So:
# nocheck (make test ran the unit tests on this tree), noopt (-O0) and no debug information
# (noautodbgsym, -g0: a third of the compile time) and a unity build (rxtune-unity, 8 files a
# compile: debian/rules), all of it a fourth compile of the agent on 2 cores. `make deb` builds
# them as Debian does. The build's output goes to LOG; on failure its
# last lines are printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOG=${1:?usage: build_deb.sh LOG}
if ! DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-nocheck noopt noautodbgsym rxtune-unity} parallel=$(nproc)" \
     DEB_CFLAGS_APPEND="${DEB_CFLAGS_APPEND:--g0}" DEB_CXXFLAGS_APPEND="${DEB_CXXFLAGS_APPEND:--g0}" \
     make --no-print-directory deb > "$LOG" 2>&1; then
  tail -40 "$LOG"
  exit 1
fi
