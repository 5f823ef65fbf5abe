#!/usr/bin/env bash
# The scrape endpoint's CPU per scrape as Prometheus scrapes it (one kept-alive connection per
# target), plain and with TLS + basic auth, beside prometheus-node-exporter configured the same way
# (its netdev collector only; Go's TLS through the same exporter-toolkit web config), in one run.
# Three rxtune daemons (not scraped, plain, TLS + basic auth) and two node_exporters run in a test
# namespace while one real Prometheus scrapes four of them every second. A process's CPU time is
# the sum of its threads' (/proc/PID/task/*/schedstat, nanoseconds); rxtune's per scrape is
# (scraped daemon - the unscraped one) / scrapes, node_exporter's its whole CPU / scrapes.
# Usage: bench/scrape_cpu.sh [ROUNDS] [SECONDS]   (default 3 60; needs root; cleans up after itself)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-60}
BIN=${RXTUNE_BIN:-build/agent/rxtune}
NS=rxt-scpu-$$
WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
[ -x "$BIN" ] || { echo "build first: make build" >&2; exit 1; }
for t in prometheus prometheus-node-exporter openssl curl python3; do
  command -v "$t" >/dev/null || { echo "needs $t (make deps)" >&2; exit 1; }
done

ip netns add "$NS"
ip -n "$NS" link set lo up
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=bench \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/tls.key" -out "$WORK/tls.crt" >/dev/null 2>&1
HASH=$(python3 -c 'import ctypes; c = ctypes.CDLL("libcrypt.so.1"); c.crypt_gensalt.restype = c.crypt.restype = ctypes.c_char_p
print(c.crypt(b"bench", c.crypt_gensalt(b"$2y$", 10, None, 0)).decode())')
printf 'tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: %s\n' "$HASH" > "$WORK/web.yml"
printf 'match:\n  interfaces: [none0]\nsteering:\n  mode: rps\n' > "$WORK/p.yaml"

daemon() {  # NAME PORT [web config]
  mkdir -p "$WORK/$1"
  printf 'profile: %s\nlisten: 127.0.0.1:%s\nstate_dir: %s\nrun_dir: %s\nmetrics_interval: 5s\n%s' \
    "$WORK/p.yaml" "$2" "$WORK/$1/state" "$WORK/$1/run" "${3:+web_config: $3
}" > "$WORK/$1/rxtune.yaml"
  ip netns exec "$NS" "$BIN" daemon --config "$WORK/$1/rxtune.yaml" 2>"$WORK/$1/log" &
  pids+=("$!")
  eval "PID_$1=$!"
}
daemon idle 19941
daemon plain 19942
daemon tls 19943 "$WORK/web.yml"
ip netns exec "$NS" prometheus-node-exporter --collector.disable-defaults --collector.netdev \
  --web.listen-address=127.0.0.1:19944 2>/dev/null &
PID_ne_plain=$!; pids+=("$!")
ip netns exec "$NS" prometheus-node-exporter --collector.disable-defaults --collector.netdev \
  --web.listen-address=127.0.0.1:19945 --web.config.file="$WORK/web.yml" 2>/dev/null &
PID_ne_tls=$!; pids+=("$!")
cat > "$WORK/prometheus.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - {job_name: plain, static_configs: [{targets: ['127.0.0.1:19942']}]}
  - {job_name: tls, scheme: https, tls_config: {ca_file: $WORK/tls.crt},
     basic_auth: {username: prometheus, password: bench}, static_configs: [{targets: ['127.0.0.1:19943']}]}
  - {job_name: ne_plain, static_configs: [{targets: ['127.0.0.1:19944']}]}
  - {job_name: ne_tls, scheme: https, tls_config: {ca_file: $WORK/tls.crt},
     basic_auth: {username: prometheus, password: bench}, static_configs: [{targets: ['127.0.0.1:19945']}]}
YAML
mkdir -p "$WORK/data"
ip netns exec "$NS" prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/data" \
  --web.listen-address=127.0.0.1:19940 >"$WORK/prometheus.log" 2>&1 &
pids+=("$!")

query() { ip netns exec "$NS" curl -s -G http://127.0.0.1:19940/api/v1/query --data-urlencode "query=$1" |
  python3 -c 'import json,sys
try: r = json.load(sys.stdin)["data"]["result"]
except ValueError: r = []  # not answering yet
print(r[0]["value"][1] if r else "nan")'; }
for _ in $(seq 60); do
  [ "$(query 'sum(up)')" = 4 ] && break
  sleep 1
done
[ "$(query 'sum(up)')" = 4 ] || { echo "not every target is up:"; query 'up'; cat "$WORK/tls/log"; exit 1; }
cpu_ns() { awk '{s += $1} END {print s}' /proc/"$1"/task/*/schedstat; }

echo "scrape_cpu: $ROUNDS rounds of $SECS s, Prometheus every 1 s, kept-alive connections; $(nproc) CPUs; $(date -u +%FT%TZ)"
printf '%-6s %-30s %8s %12s %14s\n' round target scrapes "CPU us/scr" "scrape ms (avg)"
for r in $(seq "$ROUNDS"); do
  declare -A before
  for p in idle plain tls ne_plain ne_tls; do v="PID_$p"; before[$p]=$(cpu_ns "${!v}"); done
  sleep "$SECS"
  declare -A used
  for p in idle plain tls ne_plain ne_tls; do v="PID_$p"; used[$p]=$(( $(cpu_ns "${!v}") - before[$p] )); done
  for job in plain tls ne_plain ne_tls; do
    n=$(query "count_over_time(up{job=\"$job\"}[${SECS}s])")
    ms=$(query "avg_over_time(scrape_duration_seconds{job=\"$job\"}[${SECS}s]) * 1000")
    case $job in
      plain|tls) cost=$(( used[$job] - used[idle] )); name="rxtune $job (minus unscraped)";;
      *) cost=${used[$job]}; name="node_exporter ${job#ne_}";;
    esac
    printf '%-6s %-30s %8s %12.0f %14.2f\n' "$r" "$name" "$n" "$(python3 -c "print($cost / 1000 / max(1, float('$n')))")" "$ms"
  done
done
