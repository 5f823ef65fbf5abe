#!/usr/bin/env bash
# Runs every test stage of `make test` and closes with one "N passed, N failed" line.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build} BUILD_ASAN=${BUILD_ASAN:-build-asan} BUILD_FUZZ=${BUILD_FUZZ:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-2}
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

# The integration tests, each run once: those that drive the rxtune binary against the real
# kernel (detect, apply/revert, the daemon with its scrape endpoint, napi, status, XDP,
# coalescing) with rxtune from the ASan/UBSan build, which finds what the release build would hide
# (UBSan: the undefined behaviour an optimiser turns into a bug); the rest with the release build:
# mode auto's trials, the SIGKILL test and the endpoint's time bounds (what they measure is timing,
# not memory), BPF, the fleet, rxtune-dp, and what runs in the test process itself. (Until
# 2026-12-03 the release run had every test, the ASan one its part again: 2 minutes of make test.)
# The unit tests run under ASan/UBSan only (Makefile, build-for-test).
integration() {
  python3 - "$BUILD" "$BUILD_ASAN" "$1" <<'PY'
import json, os, subprocess, sys
build, asan, which = sys.argv[1:4]
test = next(t for t in json.loads(subprocess.check_output(["meson", "introspect", build, "--tests"]))
            if t["name"] == "integration")
env = {**os.environ, **test["env"]}
asan_spec = "[detect],[tune]~[crash],[daemon],[napi]~[auto],[status],[xdp],[coalesce]"
def names(spec):
    # (Catch2 2's listing exits with the number of tests it lists.)
    out = subprocess.run(test["cmd"] + ([spec] if spec else []) + ["--list-test-names-only"], env=env,
                         capture_output=True, text=True).stdout
    return [n for n in out.splitlines() if n.strip()]
def escaped(name):  # a test name as one term of a Catch2 test spec
    return "".join("\\" + c if c in ',[]\\*"~' else c for c in name)
if which == "asan":
    env.update(RXTUNE_BIN=os.path.abspath(os.path.join(asan, "agent", "rxtune")),
               RXTUNE_BIN_ASAN="1")  # the daemon's memory bounds allow for ASan's quarantine
    spec = asan_spec
else:
    under_asan = set(names(asan_spec))
    rest = [n for n in names("") if n not in under_asan]
    print(f"{len(rest)} test cases here, {len(under_asan)} with the ASan/UBSan rxtune")
    spec = ",".join(escaped(n) for n in rest)
if not spec:
    sys.exit("no test case to run")
sys.exit(subprocess.run(test["cmd"] + [spec], env=env).returncode)
PY
}
stage "integration, rxtune from release" integration release
stage "unit (asan+ubsan)"    meson test -C "$BUILD_ASAN" --suite unit --print-errorlogs
stage "integration, rxtune from asan+ubsan" integration asan
stage "lab smoke"            env BUILD="$BUILD" python3 bench/lab.py --smoke
stage "staged install"       tests/package/staged_install.sh "$BUILD"
stage "package"              tests/package/test_package.sh
stage "irqbalance (real binary)" tests/package/irqbalance_real.sh "$BUILD"
# The oldest kernel users run (Debian 11's 5.10), Debian 12's own (6.1) and the newest (trixie-
# backports' 7.3) booted under QEMU with virtio-net and e1000e, and as a microVM (docs/VM.md).
stage "guest: kernels 5.10, 6.1, 7.3" python3 tests/vm/debian12_kernel.py "$BUILD" --kernels 5.10,6.1,7.3
# The RPS flow limit on the same kernels (this VM's has none: CONFIG_NET_FLOW_LIMIT is off).
stage "guest: flow limit on 5.10, 6.1, 7.3" python3 tests/vm/flow_limit_kernel.py "$BUILD" --kernels 5.10,6.1,7.3
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
