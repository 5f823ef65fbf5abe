#!/usr/bin/env bash
# Runs every test stage of `make test` and closes with one "N passed, N failed" line.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build} BUILD_ASAN=${BUILD_ASAN:-build-asan} BUILD_FUZZ=${BUILD_FUZZ:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-15}
passed=0 failed=0 failures=()

stage() {
  local name=$1; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}

fuzz() {
  local target=$1 corpus=$2 work
  work=$(mktemp -d)
  cp -r "$corpus"/. "$work"/
  # -max_total_time bounds the run; a crash exits non-zero and leaves the reproducer in $work.
  "$BUILD_FUZZ/tests/$target" -max_total_time="$FUZZ_SECONDS" -print_final_stats=0 -artifact_prefix="$work/" "$work" \
    > "$work.log" 2>&1
  local rc=$?
  tail -n 3 "$work.log"
  if [ $rc -ne 0 ]; then cat "$work.log"; fi
  rm -rf "$work" "$work.log"
  return $rc
}

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1

stage "unit"                 meson test -C "$BUILD" --suite unit --print-errorlogs
stage "integration"          meson test -C "$BUILD" --suite integration --print-errorlogs
stage "unit (asan+ubsan)"    meson test -C "$BUILD_ASAN" --suite unit --print-errorlogs
stage "integration (asan+ubsan)" meson test -C "$BUILD_ASAN" --suite integration --print-errorlogs
stage "lab smoke"            env BUILD="$BUILD" python3 bench/lab.py --smoke
stage "staged install"       tests/package/staged_install.sh "$BUILD"
stage "package"              tests/package/test_package.sh
stage "fuzz cpuset"          fuzz cpuset_fuzz tests/fuzz/corpus/cpuset
stage "fuzz interrupts"      fuzz interrupts_fuzz tests/fuzz/corpus/interrupts
stage "fuzz profile"         fuzz profile_fuzz tests/fuzz/corpus/profile
stage "fuzz softnet/uevent"  fuzz softnet_fuzz tests/fuzz/corpus/softnet
stage "fuzz datapath"        fuzz datapath_fuzz tests/fuzz/corpus/datapath

echo
for f in "${failures[@]+"${failures[@]}"}"; do echo "FAILED: $f"; done
echo "make test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
