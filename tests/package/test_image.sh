#!/usr/bin/env bash
# The container image, for real: built from the package stage's .deb (build-deb/; made here if it is
# missing), run with podman exactly as packaging/kubernetes/daemonset.yaml runs it (its image,
# command, dropped and added capabilities, read-only root, user, port and mounts, read from the
# manifest) inside a test network namespace holding a 1-queue veth. The containerised daemon must
# steer the veth, serve /metrics that promtool accepts, and revert when the container stops.
# The OCI archive must load back into podman under the DaemonSet's image name.
set -euo pipefail
cd "$(dirname "$0")/../.."
NS=rxt-img-$$
NAME=rxt-img-$$
TMP=$(mktemp -d)
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs)  # cgroups v1 hybrid hosts need both
cleanup() {
  "${PODMAN[@]}" rm --force --time 0 "$NAME" >/dev/null 2>&1 || true
  umount "$TMP/sys" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
step() { echo "--- $*"; }
fail() { echo "FAIL: $*"; [ -f "$TMP/log" ] && tail -30 "$TMP/log"; exit 1; }

step "build the image from the .deb"
if ! ls build-deb/rxtune_*_*.deb >/dev/null 2>&1; then
  tests/package/build_deb.sh "$TMP/deb.log"
fi
DEB=$(ls build-deb/rxtune_*_*.deb | grep -v dbgsym)
packaging/image/build.sh "$DEB" build-image
VERSION=$(dpkg-deb -f "$DEB" Version)
ARCHIVE=build-image/rxtune-$VERSION.oci.tar

step "the DaemonSet's container, as the test will run it"
python3 - packaging/kubernetes/daemonset.yaml > "$TMP/ds.env" <<'PY'
import shlex, sys, yaml
ds = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "DaemonSet")
c = ds["spec"]["template"]["spec"]["containers"][0]
sc = c["securityContext"]
out = {
    "IMAGE": c["image"], "PULL": c.get("imagePullPolicy", ""), "COMMAND": " ".join(c["command"]),
    "CAP_DROP": ",".join(sc["capabilities"]["drop"]), "CAP_ADD": ",".join(sc["capabilities"]["add"]),
    "READ_ONLY": str(sc["readOnlyRootFilesystem"]).lower(), "USER": str(sc["runAsUser"]),
    "ESCALATION": str(sc["allowPrivilegeEscalation"]).lower(), "PRIVILEGED": str(sc["privileged"]).lower(),
    "PORT": str(c["ports"][0]["containerPort"]),
    "SECCOMP": sc.get("seccompProfile", {}).get("type", "") or ds["spec"]["template"]["spec"].get("securityContext", {}).get("seccompProfile", {}).get("type", ""),
    "MOUNTS": " ".join("%s:%s" % (m["mountPath"], "ro" if m.get("readOnly") else "rw") for m in c["volumeMounts"]),
}
for k, v in out.items():
    print("%s=%s" % (k, shlex.quote(v)))
PY
# shellcheck disable=SC1091
. "$TMP/ds.env"
cat "$TMP/ds.env"
[ "$IMAGE" = "localhost/rxtune:$VERSION" ] || fail "the DaemonSet runs $IMAGE, the build makes localhost/rxtune:$VERSION"
[ "$PULL" = "Never" ] || fail "the DaemonSet must not pull a locally loaded image (imagePullPolicy $PULL)"
[ "$PRIVILEGED" = false ] && [ "$ESCALATION" = false ] || fail "the DaemonSet's container is privileged or may escalate"

step "the OCI archive loads back under that name"
podman rmi --force "$IMAGE" >/dev/null
podman load --quiet -i "$ARCHIVE" > "$TMP/load.txt"
podman image exists "$IMAGE" || fail "podman load of $ARCHIVE gave $(cat "$TMP/load.txt"), not $IMAGE"

step "a test network namespace with a 1-queue veth, its own writable sysfs"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add sq0 type veth peer name sq1
ip -n "$NS" link set sq0 up
ip -n "$NS" link set sq1 up
mkdir -p "$TMP/sys" "$TMP/etc" "$TMP/state" "$TMP/run"
nsenter --net=/run/netns/"$NS" mount -t sysfs sysfs "$TMP/sys"
rps() { ip netns exec "$NS" cat /sys/class/net/sq0/queues/rx-0/rps_cpus | tr -d ',\n'; }
[ -z "$(rps | tr -d 0)" ] || fail "sq0 starts steered"
printf 'include: single-queue-gateway\nmatch:\n  interfaces: [sq0]\n  virtual: include\nsteering:\n  mode: rps\n' > "$TMP/etc/p.yaml"
# The ConfigMap's rxtune.yaml, with this test's profile, scrape address, revert on stop and a
# short metrics interval; the rest (proc_sys, ...) as the ConfigMap has it.
python3 - packaging/kubernetes/configmap.yaml "$PORT" > "$TMP/etc/rxtune.yaml" <<'PY'
import sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "ConfigMap")
cfg = yaml.safe_load(cm["data"]["rxtune.yaml"])
cfg.update({"profile": "/etc/rxtune/p.yaml", "listen": "127.0.0.1:" + sys.argv[2], "on_stop": "revert", "metrics_interval": "1s"})
print(yaml.safe_dump(cfg, sort_keys=False), end="")
PY
cat "$TMP/etc/rxtune.yaml"

step "podman run, as the DaemonSet declares it"
args=(--name "$NAME" --detach --network ns:/run/netns/"$NS" --user "$USER" --cap-drop "$CAP_DROP" --cap-add "$CAP_ADD"
      --security-opt no-new-privileges
      # Explicit limits (cgroups v1 hosts need them), within this shell's: the container cannot raise them.
      --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
[ "$READ_ONLY" = true ] && args+=(--read-only)
case $SECCOMP in
  Unconfined) args+=(--security-opt seccomp=unconfined) ;;
  RuntimeDefault) ;;  # podman's default profile
  *) fail "the DaemonSet must say which seccomp profile it wants (got '$SECCOMP')" ;;
esac
for m in $MOUNTS; do
  path=${m%:*} mode=${m##*:}
  case $path in
    /etc/rxtune) src=$TMP/etc ;;
    /sys) src=$TMP/sys ;;
    /host/proc/sys) src=/proc/sys ;;  # net/ in it shows the reader's network namespace: the test's
    /var/lib/rxtune) src=$TMP/state ;;
    /run/rxtune) src=$TMP/run ;;
    *) fail "the DaemonSet mounts $path, which this test does not know" ;;
  esac
  args+=(-v "$src:$path:$mode")
done
set -- $COMMAND
"${PODMAN[@]}" run "${args[@]}" --entrypoint "$1" "$IMAGE" "${@:2}" > /dev/null
for _ in $(seq 100); do
  [ -n "$(rps | tr -d 0)" ] && break
  sleep 0.1
done
"${PODMAN[@]}" logs "$NAME" > "$TMP/log" 2>&1 || true
[ -n "$(rps | tr -d 0)" ] || fail "the containerised daemon did not steer sq0 (rps_cpus $(rps))"
echo "sq0 rps_cpus $(rps), rps_flow_cnt $(ip netns exec "$NS" cat /sys/class/net/sq0/queues/rx-0/rps_flow_cnt)"
[ "$("${PODMAN[@]}" inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$NAME")" = true ] || [ "$READ_ONLY" != true ] || fail "root is writable"
# The daemon runs with exactly the capabilities the DaemonSet adds, no others.
hex=$(awk '/^CapEff/ {print $2}' "/proc/$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' "$NAME")/status")
have=$(capsh --decode="$hex" | sed 's/.*=//' | tr ',' '\n' | sort | paste -sd,)
want=$(echo "$CAP_ADD" | tr 'A-Z' 'a-z' | tr ',' '\n' | sed 's/^/cap_/' | sort | paste -sd,)
echo "effective capabilities: $have"
[ "$have" = "$want" ] || fail "effective capabilities $have, the DaemonSet adds $want"

step "/metrics, checked by promtool"
for _ in $(seq 50); do
  ip netns exec "$NS" curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" > "$TMP/metrics" && grep -q '^rxtune_' "$TMP/metrics" && break
  sleep 0.2
done
promtool check metrics < "$TMP/metrics" || fail "promtool rejects the metrics"
grep -q 'rxtune_queues{.*interface="sq0"' "$TMP/metrics" || grep -q 'interface="sq0"' "$TMP/metrics" || fail "no sq0 in the metrics"
echo "$(grep -c '^rxtune_' "$TMP/metrics") rxtune samples"

step "rxtune reload in the container (it has no shell and no kill): a good profile, then a broken one"
# The daemon is PID 1 there: the kernel drops a signal whose disposition is the default before it
# reaches PID 1, so this also shows that the daemon hears SIGHUP as one.
printf 'include: single-queue-gateway\nmatch:\n  interfaces: [sq0]\n  virtual: include\nsteering:\n  mode: rps\n  cpus: "0"\n' > "$TMP/etc/p.yaml"
out=$("${PODMAN[@]}" exec "$NAME" rxtune reload 2>&1) || fail "rxtune reload in the container: $out"
echo "$out"
case $out in "reloaded: profile p "*) ;; *) fail "rxtune reload said: $out" ;; esac
for _ in $(seq 50); do [ "$(rps | sed 's/^0*//')" = 1 ] && break; sleep 0.1; done
[ "$(rps | sed 's/^0*//')" = 1 ] || fail "the reloaded profile (cpus 0) is not applied: rps_cpus $(rps)"
printf 'stering: {}\n' > "$TMP/etc/p.yaml"
set +e; out=$("${PODMAN[@]}" exec "$NAME" rxtune reload 2>&1); rc=$?; set -e
echo "$out"
[ $rc = 1 ] || fail "rxtune reload of a broken profile exited $rc: $out"
case $out in *"refused, the running configuration stays"*"p.yaml:1:1: stering: unknown key"*) ;; *) fail "rxtune reload said: $out" ;; esac
[ "$(rps | sed 's/^0*//')" = 1 ] || fail "a refused reload changed rps_cpus: $(rps)"

step "podman stop: the daemon reverts (on_stop: revert) and exits 0"
"${PODMAN[@]}" stop --time 20 "$NAME" > /dev/null
"${PODMAN[@]}" logs "$NAME" > "$TMP/log" 2>&1 || true
code=$("${PODMAN[@]}" inspect -f '{{.State.ExitCode}}' "$NAME")
[ "$code" = 0 ] || fail "the daemon exited $code"
[ -z "$(rps | tr -d 0)" ] || fail "sq0 still steered after stop: $(rps)"
# The capabilities given are enough for everything the daemon does, BPF softirq accounting included.
grep -q "BPF softirq accounting unavailable" "$TMP/log" && fail "the BPF softirq accounting did not load in the container"
[ "$(ip netns exec "$NS" cat /sys/class/net/sq0/queues/rx-0/rps_flow_cnt)" = 0 ] || fail "rps_flow_cnt not reverted"
[ ! -e "$TMP/state/journal.json" ] || fail "the journal is still there after the revert"
echo "the daemon's log in the container:"
sed 's/^/  /' "$TMP/log" | tail -n 12
echo "image test passed: $(du -h "$ARCHIVE" | cut -f1) archive"
