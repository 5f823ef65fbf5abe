#!/usr/bin/env bash
# Runs every test stage of `make test` and closes with one "N passed, N failed" line.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build} BUILD_ASAN=${BUILD_ASAN:-build-asan} BUILD_FUZZ=${BUILD_FUZZ:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-4}
passed=0 failed=0 failures=() times=()
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Each stage's output goes to the terminal and to a log; a failed stage's log is digested at the
# end, so the last lines of a long run (all a CI summary may keep) name what failed and where.
stage() {
  local name=$1; shift
  echo "=== $name"
  local log="$logs/${#failures[@]}-$passed.log" start=$SECONDS
  if "$@" 2>&1 | tee "$log"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("$name"); cp "$log" "$logs/failed-${#failures[@]}.log"
  fi
  times+=("$(printf '%5d s  %s' $((SECONDS - start)) "$name")")
}

# The first Catch2 failure (with the messages that follow it), sanitizer report, meson timeout or
# Python traceback of a failed stage, lines cut at 160 characters: a CI summary may keep only the
# last two dozen lines of the run.
digest() {
  if grep -q -E ': failed:|: FAILED|ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:|TIMEOUT|Traceback' "$1"; then
    grep -m 1 -E -A 14 ': failed:|: FAILED|ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:|TIMEOUT|Traceback' "$1"
  else
    tail -n 8 "$1"
  fi | cut -c 1-160
}

# Per input: a hang or a runaway allocation fails the run like a crash (an input of ours takes
# well under a millisecond; the YAML alias bomb took minutes).
FUZZ_LIMITS=(-timeout=5 -rss_limit_mb=1024)

fuzz() {
  local target=$1 corpus=$2 work
  work=$(mktemp -d)
  cp -r "$corpus"/. "$work"/
  # -max_total_time bounds the run; a crash or a hang exits non-zero and leaves the reproducer in $work.
  "$BUILD_FUZZ/tests/$target" -max_total_time="$FUZZ_SECONDS" "${FUZZ_LIMITS[@]}" -print_final_stats=0 \
    -artifact_prefix="$work/" "$work" > "$work.log" 2>&1
  local rc=$?
  tail -n 3 "$work.log"
  if [ $rc -ne 0 ]; then cat "$work.log"; fi
  rm -rf "$work" "$work.log"
  return $rc
}

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1

# The integration tests against the release build; the unit tests under ASan/UBSan (only there:
# Makefile, build-for-test); then the integration tests that drive the rxtune binary against the
# real kernel (detect, apply/revert, the daemon with its scrape endpoint, napi, status, XDP) again,
# with rxtune from the ASan/UBSan build. Left out of that run: mode auto's trials and the SIGKILL
# test (what they measure is timing, not memory), and what runs in the test process itself.
asan_rxtune() {
  python3 - "$BUILD" "$BUILD_ASAN" <<'PY'
import json, os, subprocess, sys
build, asan = sys.argv[1:3]
test = next(t for t in json.loads(subprocess.check_output(["meson", "introspect", build, "--tests"]))
            if t["name"] == "integration")
env = {**os.environ, **test["env"], "RXTUNE_BIN": os.path.abspath(os.path.join(asan, "agent", "rxtune")),
       "RXTUNE_BIN_ASAN": "1"}  # the daemon's memory bounds allow for ASan's quarantine
spec = "[detect],[tune]~[crash],[daemon],[napi]~[auto],[status],[xdp],[coalesce]"
sys.exit(subprocess.run(test["cmd"] + [spec], env=env).returncode)
PY
}
# The package stage's .debs are built meanwhile, in the background at the lowest CPU priority
# (tests/package/build_deb.sh: about 4 minutes of two cores alone): the integration stages wait on
# timers and on the kernel most of the time (about a third of two cores busy), and the build takes
# the idle cycles, not theirs. The package stage waits for it.
deb_log="$logs/deb-build.log"
deb_start=$SECONDS
setsid nice -n 19 tests/package/build_deb.sh "$deb_log" > "$deb_log.tail" 2>&1 &
deb_pid=$!
trap 'kill -TERM -- -$deb_pid 2>/dev/null; rm -rf "$logs"' EXIT
deb_built() {
  local rc=0
  wait "$deb_pid" || rc=$?
  echo "the .debs, built in the background since the stages began: $((SECONDS - deb_start)) s, exit $rc"
  [ $rc -eq 0 ] || { cat "$deb_log.tail"; return 1; }
}
package() { deb_built && REUSE_DEB=1 tests/package/test_package.sh; }

stage "integration"          meson test -C "$BUILD" --suite integration --print-errorlogs
stage "unit (asan+ubsan)"    meson test -C "$BUILD_ASAN" --suite unit --print-errorlogs
stage "integration, rxtune from asan+ubsan" asan_rxtune
stage "lab smoke"            env BUILD="$BUILD" python3 bench/lab.py --smoke
stage "staged install"       tests/package/staged_install.sh "$BUILD"
stage "package"              package
stage "irqbalance (real binary)" tests/package/irqbalance_real.sh "$BUILD"
# The oldest kernel users run (Debian 11's 5.10), Debian 12's own (6.1) and the newest (trixie-
# backports' 7.3) booted under QEMU with virtio-net and e1000e, and as a microVM (docs/VM.md).
stage "guest: kernels 5.10, 6.1, 7.3" python3 tests/vm/debian12_kernel.py "$BUILD" --kernels 5.10,6.1,7.3
stage "image"                tests/package/test_image.sh
while read -r target corpus; do
  case "$target" in ""|\#*) continue ;; esac
  stage "fuzz ${target%_fuzz}" fuzz "$target" "tests/fuzz/corpus/$corpus"
done < tests/fuzz/targets.txt

# Each stage's time: make test must stay under 25 minutes in a clean clone on 2 cores.
echo
echo "stage times (total $SECONDS s):"
printf '  %s\n' "${times[@]}"
echo
i=0
for f in "${failures[@]+"${failures[@]}"}"; do
  i=$((i + 1))
  echo "--- $f:"
  digest "$logs/failed-$i.log" | sed 's/^/  /'
done
for f in "${failures[@]+"${failures[@]}"}"; do echo "FAILED: $f"; done
echo "make test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
