#!/usr/bin/env bash
# make fuzz-soak: each libFuzzer target of tests/fuzz/targets.txt, from its kept corpus, until it has
# run FUZZ_SOAK_RUNS inputs or FUZZ_SOAK_SECONDS (whichever first), with the same per-input time
# and memory limits as make test. Then what it found is merged into the kept corpus and minimised
# (-merge=1: the smallest set of inputs with the same coverage). Prints one row per target
# (executions, corpus before and after, crashes) and writes them to $BUILD_FUZZ/soak-report.md;
# a crash, hang or leak leaves its reproducer in $BUILD_FUZZ/soak-artifacts/ and fails the run.
# FUZZ_SOAK_ONLY="profile_fuzz journal_fuzz" narrows it.
set -u
cd "$(dirname "$0")/../.."
BUILD_FUZZ=${BUILD_FUZZ:-build-fuzz}
RUNS=${FUZZ_SOAK_RUNS:-1000000}
SECONDS_EACH=${FUZZ_SOAK_SECONDS:-600}
LIMITS=(-timeout=5 -rss_limit_mb=1024)
artifacts=$BUILD_FUZZ/soak-artifacts
report=$BUILD_FUZZ/soak-report.md
mkdir -p "$artifacts"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1

{
  echo "fuzz soak, $(date -u +%Y-%m-%d), $(nproc) CPUs, kernel $(uname -r): each target to $RUNS inputs or ${SECONDS_EACH} s"
  echo
  echo "| target | executions | seconds | exec/s | corpus before | new inputs found | corpus after merge | result |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$report"
failed=0
while read -r target corpus; do
  case "$target" in ""|\#*) continue ;; esac
  if [ -n "${FUZZ_SOAK_ONLY:-}" ] && [[ " $FUZZ_SOAK_ONLY " != *" $target "* ]]; then continue; fi
  bin=$BUILD_FUZZ/tests/$target kept=tests/fuzz/corpus/$corpus
  found=$(mktemp -d) merged=$(mktemp -d) log=$(mktemp)
  before=$(find "$kept" -type f | wc -l)
  start=$(date +%s)
  # New inputs go to the first directory ($found); the kept corpus is read, not written.
  "$bin" -runs="$RUNS" -max_total_time="$SECONDS_EACH" "${LIMITS[@]}" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target-" "$found" "$kept" > "$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  new=$(find "$found" -type f | wc -l)
  result=ok
  if [ $rc -ne 0 ]; then
    what=$(grep -m1 -oE 'ERROR: [^ ]+ [^ ]+|timeout|out-of-memory' "$log" | head -n 1)
    result="FAILED (rc $rc: ${what:-see the log}; reproducer and log in $artifacts/)"
    failed=1
    cp "$log" "$artifacts/$target.log"
  fi
  # Merge into a fresh directory, then replace the kept corpus: inputs that add no coverage go.
  "$bin" -merge=1 "${LIMITS[@]}" -artifact_prefix="$artifacts/$target-merge-" "$merged" "$kept" "$found" > "$log.merge" 2>&1 || { result="$result, merge failed"; failed=1; }
  if [ "$(find "$merged" -type f | wc -l)" -gt 0 ]; then
    rm -rf "$kept" && mkdir -p "$kept" && cp "$merged"/* "$kept"/
  fi
  after=$(find "$kept" -type f | wc -l)
  rate=$(awk -v e="${execs:-0}" -v s="$secs" 'BEGIN {printf "%d", (s > 0) ? e / s : e}')
  row="| $target | ${execs:-?} | $secs | $rate | $before | $new | $after | $result |"
  echo "$row" | tee -a "$report"
  rm -rf "$found" "$merged" "$log" "$log.merge"
done < tests/fuzz/targets.txt
echo "report: $report"
exit $failed
