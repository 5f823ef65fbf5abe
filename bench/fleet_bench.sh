#!/usr/bin/env bash
# A fleet following its ConfigMap, timed: runs the rollout test (tests/integration/fleet_test.cpp:
# 8 daemons in their own network namespaces, one kubelet-style config directory, one Prometheus
# scraping them every second) ROUNDS times and reports, per round and as median [min-max]:
# - swap -> every node reloaded (each node's reload.json names the new digest);
# - swap -> every node on the new profile in Prometheus (rxtune_applied_profile_info{digest});
# - the reload's own cost (rxtune_config_last_reload_duration_seconds, median and max over nodes);
# - the peer, in the same run on the same fleet: starting every daemon (what a rollout restart of
#   the pods costs at the least, with no pod scheduling or image pull) -> all on the first profile
#   in Prometheus.
# Usage: bench/fleet_bench.sh [ROUNDS]   (default 5; needs root and a build: make build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
B=$PWD/build
[ -x "$B/tests/integration_tests" ] || { echo "build first: make build" >&2; exit 1; }
report=$(mktemp)
trap 'rm -f "$report"' EXIT
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $ROUNDS rounds, 8 nodes, scrape interval 1 s"
for ((r = 1; r <= ROUNDS; r++)); do
  RXTUNE_FLEET_REPORT=$report RXTUNE_BIN=$B/agent/rxtune RXTUNE_SOURCE=$PWD \
    "$B/tests/integration_tests" --reporter compact "[fleet]" > /dev/null || { echo "round $r failed" >&2; exit 1; }
  tail -n 1 "$report" | awk -v r="$r" '{printf "round %d: reloaded %.3f s, in Prometheus %.3f s, reload median %.1f ms max %.1f ms; start -> in Prometheus %.3f s\n", r, $1, $2, $3 * 1000, $4 * 1000, $5}'
done
echo
echo "| what | median [min-max] over $ROUNDS rounds |"
echo "|---|---|"
col() { awk -v c="$1" -v m="$2" '{print $c * m}' "$report" | sort -g | awk -v u="$3" '{v[NR] = $1} END {printf "%.2f [%.2f-%.2f] %s", v[int((NR + 1) / 2)], v[1], v[NR], u}'; }
echo "| ConfigMap swap -> every node reloaded and applied (no signal) | $(col 1 1 s) |"
echo "| ConfigMap swap -> every node on the new profile in Prometheus | $(col 2 1 s) |"
echo "| one reload on a node (read, check, plan, apply), median over nodes | $(col 3 1000 ms) |"
echo "| one reload on a node, slowest node | $(col 4 1000 ms) |"
echo "| peer: every daemon started -> all on the profile in Prometheus | $(col 5 1 s) |"
