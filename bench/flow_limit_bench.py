#!/usr/bin/env python3
"""The RPS flow limit (steering.flow_limit), where it should help and where it should not.

One command: python3 bench/flow_limit_bench.py BUILD_DIR [--rounds 3] [--seconds 4] [--kernel 6.1] [--busy]

Where: a guest of Debian's own kernel (this VM's kernel has no CONFIG_NET_FLOW_LIMIT), 4 vCPUs
under QEMU TCG, booted by the lab's harness (tests/vm/vmlab.py). A veth pair: fl0 here, steered
by rxtune with RPS to CPUs 1-3; fl1 in a namespace of its own, where the load comes from. Per
cell, for `--seconds`: 8 request/response flows (udp_flood rr: one 64-byte datagram, wait for the
echo, again; a late answer (100 ms) counts as lost) and, in the elephant cells, one UDP flood flow
(64-byte datagrams, sendmmsg) to a sink, sent by three processes from one source port
(SO_REUSEPORT): one sender alone under TCG cannot outrun the CPU that receives it. Cells: flow limit off/on x backlog
(net.core.netdev_max_backlog 2000, and the story's 300000) x elephant or not; each round runs
every cell, the order reversed every other round (interleaved); rxtune reverts and applies the
cell's profile before it. Reported per cell, medians over the rounds (and the spread): the small
flows' answers per second (all 8), their p99 (the worst of the 8 flows' p99s), their losses, the
elephant's datagrams delivered per second, and the kernel's flow-limit and backlog drops
(/proc/net/softnet_stat, summed over CPUs).

--busy: the RPS targets busy (one spinning process at nice -20 on each of CPUs 1-3, the
benchmark's own processes on CPU 0), so that their backlog is served late: an attempt to make
the backlog deep enough for the flow limit to act where the senders alone cannot.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "vm"))
import vmlab  # noqa: E402
from flow_limit_kernel import VETH  # noqa: E402

PROFILE = """match: {interfaces: [fl0], verdict: any, virtual: include}
steering:
  mode: rps
  cpus: 1-3
  xps: false
  flow_limit: @FL@
sysctl:
  net.core.netdev_max_backlog: @BL@
"""

CELLS = [(fl, bl, el) for el in (1, 0) for bl in (2000, 300000) for fl in ("false", "true")]


def cell_name(fl: str, bl: int, el: int) -> str:
    return f"{'on' if fl == 'true' else 'off'}_{bl}_{'elephant' if el else 'quiet'}"


def scenario(rounds: int, seconds: int, busy: bool) -> str:
    lines = [VETH, f"D={seconds}", f"HOG={1 if busy else 0}", "NICE=-20", f"PIN='{'taskset -c 0' if busy else ''}'", r"""
softnet() { cat /proc/net/softnet_stat; }
cell() {  # profile elephant
  rxtune revert >/dev/null 2>&1
  rxtune apply -p "$1" >/tmp/apply.log 2>&1 || { echo "APPLY FAILED"; cat /tmp/apply.log; }
  softnet > /tmp/sn0
  HOGS=""
  if [ "$HOG" = 1 ]; then for c in 1 2 3; do taskset -c $c sh -c "renice -n $NICE \$\$ >/dev/null; while :; do :; done" & HOGS="$HOGS $!"; done; fi
  $PIN udp_flood sink 10.9.0.1 9000 $((D + 2)) > /tmp/sink & S=$!
  $PIN udp_flood echo 10.9.0.1 9100 $((D + 2)) > /dev/null & E=$!
  sleep 0.5
  PIDS=""
  if [ "$2" = 1 ]; then
    for s in 1 2 3; do $PIN nsenter -t $P -n udp_flood send 10.9.0.1 9000 $D 1 40000 > /tmp/sent$s & PIDS="$PIDS $!"; done
  fi
  for i in 1 2 3 4 5 6 7 8; do $PIN nsenter -t $P -n udp_flood rr 10.9.0.1 9100 $D > /tmp/rr$i & PIDS="$PIDS $!"; done
  for p in $PIDS; do wait $p; done
  softnet > /tmp/sn1
  for h in $HOGS; do kill $h; wait $h 2>/dev/null; done
  wait $S; wait $E
  echo "SINK $(cat /tmp/sink)"
  for i in 1 2 3 4 5 6 7 8; do echo "RR $(cat /tmp/rr$i)"; done
  sed 's/^/SN0 /' /tmp/sn0; sed 's/^/SN1 /' /tmp/sn1
}
"""]
    for fl, bl, el in CELLS:
        name = cell_name(fl, bl, el)
        lines.append(f"sed -e 's/@FL@/{fl}/' -e 's/@BL@/{bl}/' /etc/lab/bench.yaml.in > /tmp/{name}.yaml")
    for r in range(rounds):
        order = CELLS if r % 2 == 0 else list(reversed(CELLS))
        for fl, bl, el in order:
            name = cell_name(fl, bl, el)
            lines.append(f"step r{r}_{name} cell /tmp/{name}.yaml {el}")
    lines.append("rxtune revert > /dev/null 2>&1")
    return "\n".join(lines) + "\n"


def softnet_sum(rows: list[list[str]], col: int) -> int:
    return sum(int(r[col], 16) for r in rows if len(r) > col)


def parse(out: str, seconds: int) -> dict:
    rr, sn0, sn1, sink = [], [], [], 0
    for ln in out.splitlines():
        f = ln.split()
        if not f:
            continue
        if f[0] == "SINK" and len(f) > 1:
            sink = int(f[1])
        elif f[0] == "RR" and len(f) == 5:
            rr.append([int(float(x)) for x in f[1:]])
        elif f[0] == "SN0":
            sn0.append(f[1:])
        elif f[0] == "SN1":
            sn1.append(f[1:])
        elif f[0] == "APPLY":
            raise vmlab.LabError(out)
    if len(rr) != 8:
        raise vmlab.LabError("not 8 rr results:\n" + out)
    return {"answers_per_s": sum(r[0] for r in rr) / seconds, "p99_us": max(r[2] for r in rr), "p50_us": statistics.median(r[1] for r in rr),
            "lost": sum(r[3] for r in rr), "elephant_per_s": sink / seconds,
            "flow_limit_drops": softnet_sum(sn1, 10) - softnet_sum(sn0, 10), "backlog_drops": softnet_sum(sn1, 1) - softnet_sum(sn0, 1)}


def main() -> int:
    args = sys.argv[1:]
    opts = {"--rounds": "3", "--seconds": "4", "--kernel": "6.1"}
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = args[i + 1]
            del args[i:i + 2]
    rounds, seconds, series = int(opts["--rounds"]), int(opts["--seconds"]), opts["--kernel"]
    busy = "--busy" in args
    if busy:
        args.remove("--busy")
    build = Path(args[0] if args else "build").resolve()
    kernel = vmlab.series_kernel(series, build / "vm-cache")
    guest = vmlab.Guest(kernel, nics=["virtio-net-pci"], numa_nodes=1, memory_mb=2048, extra_modules=["veth"],
                        binaries={"usr/sbin/rxtune": build / "agent" / "rxtune", "usr/sbin/ip": Path("/usr/sbin/ip"),
                                  "usr/bin/udp_flood": build / "bench" / "udp_flood"},
                        files={"etc/lab/bench.yaml.in": PROFILE})
    print(f"guest: {kernel.package}, 4 vCPUs (TCG), {rounds} rounds of {len(CELLS)} cells, {seconds} s each" + (", targets busy" if busy else ""))
    boot = guest.boot(scenario(rounds, seconds, busy), build / "vm-runs" / "flow-limit-bench",
                      timeout=120 + rounds * len(CELLS) * (seconds + 8))
    if not boot.done:
        print(vmlab.tail_text(boot.console))
        return 1
    results: dict[str, list[dict]] = {}
    for fl, bl, el in CELLS:
        name = cell_name(fl, bl, el)
        results[name] = [parse(boot[f"r{r}_{name}"].out, seconds) for r in range(rounds)]
    (build / "vm-runs" / "flow-limit-bench" / "results.json").write_text(json.dumps(results, indent=1) + "\n")

    def med(name: str, key: str) -> str:
        v = [x[key] for x in results[name]]
        return f"{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})"

    print("| load | backlog | flow limit | small flows: answers/s | small p99 us | small lost | elephant delivered/s | flow-limit drops | backlog drops |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fl, bl, el in CELLS:
        name = cell_name(fl, bl, el)
        print(f"| {'elephant + 8 rr' if el else '8 rr'} | {bl} | {'on' if fl == 'true' else 'off'} | " +
              " | ".join(med(name, k) for k in ("answers_per_s", "p99_us", "lost", "elephant_per_s", "flow_limit_drops", "backlog_drops")) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
