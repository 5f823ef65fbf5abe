#!/usr/bin/env python3
"""The RPS flow limit family (steering.flow_limit) on a real kernel: Debian's own, booted.

This VM's kernel is built without CONFIG_NET_FLOW_LIMIT (no net.core.flow_limit_cpu_bitmap), so
the family's writes are proven in a guest of Debian's kernel (linux-image-amd64: 6.1; --kernels
6.12,7.3 for trixie's and trixie-backports'), 4 vCPUs, with a veth pair whose far end is in a
network namespace of its own. rxtune plans RPS on the near end to CPUs 1-3 and the flow limit on
those CPUs with a table of 8192; the checks: detect shows the flow limit; apply writes the table
length and the bitmap in the kernel's own format, verify is in sync, a second plan has nothing to
do; an elephant flow through the veth leaves the kernel's flow-limit count in
/proc/net/softnet_stat readable (reported, not judged: that is bench/flow_limit_bench.py's);
revert restores the exact originals of both files and of netdev_max_backlog.

Usage: flow_limit_kernel.py BUILD_DIR [--kernels 6.1,6.12,7.3]   (closes with one "N passed, N failed" line)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vmlab  # noqa: E402

PROFILE = """match: {interfaces: [fl0], verdict: any, virtual: include}
steering:
  mode: rps
  cpus: 1-3
  xps: false
  flow_limit: {table_len: 8192}
sysctl:
  net.core.netdev_max_backlog: 2000
"""

# The veth pair: fl0 here, fl1 in the namespace of a process that only sleeps ($P).
VETH = r"""
IP=/usr/sbin/ip
$IP link add fl0 type veth peer name fl1
unshare -n sleep 900 & P=$!
sleep 0.5
$IP link set fl1 netns $P
nsenter -t $P -n $IP link set lo up
nsenter -t $P -n $IP addr add 10.9.0.2/24 dev fl1
nsenter -t $P -n $IP link set fl1 up
$IP addr add 10.9.0.1/24 dev fl0
$IP link set fl0 up
sleep 1
"""

SCENARIO = VETH + r"""
files() { cat /proc/sys/net/core/flow_limit_cpu_bitmap /proc/sys/net/core/flow_limit_table_len /proc/sys/net/core/netdev_max_backlog; }
step before files
step detect rxtune detect
step detect_json rxtune detect --json
step plan rxtune plan -p /etc/lab/flow.yaml
step apply rxtune apply -p /etc/lab/flow.yaml
step after_apply files
step rps cat /sys/class/net/fl0/queues/rx-0/rps_cpus
step verify rxtune verify
step plan_again rxtune plan -p /etc/lab/flow.yaml
step traffic sh -c "udp_flood sink 10.9.0.1 9000 4 & nsenter -t $P -n udp_flood send 10.9.0.1 9000 3 1 >/dev/null; wait"
step softnet cat /proc/net/softnet_stat
step revert rxtune revert
step after_revert files
"""


def one_kernel(build: Path, series: str, c: vmlab.Checks) -> None:
    kernel = vmlab.series_kernel(series, build / "vm-cache")
    print(f"guest: {kernel.package}, 4 vCPUs, a veth pair (one end in its own namespace)")
    guest = vmlab.Guest(kernel, nics=["virtio-net-pci"], numa_nodes=1, extra_modules=["veth"],
                        binaries={"usr/sbin/rxtune": build / "agent" / "rxtune", "usr/sbin/ip": Path("/usr/sbin/ip"),
                                  "usr/bin/udp_flood": build / "bench" / "udp_flood"},
                        files={"etc/lab/flow.yaml": PROFILE})
    boot = guest.boot(SCENARIO, build / "vm-runs" / f"flow-limit-{series}")
    print(f"booted and ran in {boot.seconds:.1f} s")
    if not c.check("the scenario ran to its end", boot.done, vmlab.tail_text(boot.console)):
        return
    before = boot["before"].out.split()
    c.check("the kernel has the flow limit: bitmap, table length, backlog", len(before) == 3, boot["before"].out)
    if len(before) != 3:
        return
    try:
        fl = json.loads(boot["detect_json"].out)["host"]["flow_limit"]
        c.check("detect --json shows the flow limit, no CPU in it yet, and where it acts",
                fl.get("cpus") == "" and fl.get("table_len") == before[1] and fl.get("acts_above_backlog") == int(before[2]) // 2,
                json.dumps(fl))
    except (ValueError, KeyError, TypeError) as ex:
        c.check("detect --json is one JSON document with host.flow_limit", False, f"{ex}: {boot['detect_json'].out[:2000]}")
    c.check("detect's table shows it", "flow limit" in boot["detect"].out and "CPUs none" in boot["detect"].out, boot["detect"].out)
    plan = boot["plan"].out
    c.check("plan: the table length, then the bitmap to CPUs 1-3",
            "net.core.flow_limit_table_len" in plan and "net.core.flow_limit_cpu_bitmap" in plan and
            plan.index("flow_limit_table_len") < plan.index("flow_limit_cpu_bitmap") and boot["plan"].rc == 2, plan)
    c.check("apply exits 0", boot["apply"].rc == 0, boot["apply"].out)
    after = boot["after_apply"].out.split()
    c.check("the kernel holds CPUs 1-3 in the bitmap (printed as it prints masks)", len(after) == 3 and int(after[0].replace(",", ""), 16) == 0b1110,
            boot["after_apply"].out)
    c.check("the kernel holds the table length 8192 and the backlog 2000", after[1:] == ["8192", "2000"], boot["after_apply"].out)
    c.check("RPS on fl0 to CPUs 1-3", int(boot["rps"].out.strip().replace(",", ""), 16) == 0b1110, boot["rps"].out)
    c.check("verify: in sync with the kernel's own format", boot["verify"].rc == 0, boot["verify"].out)
    c.check("a second plan has nothing to do", boot["plan_again"].rc == 0, boot["plan_again"].out)
    rows = [ln.split() for ln in boot["softnet"].out.splitlines() if ln.strip()]
    if rows and len(rows[0]) > 10:
        counts = [int(r[10], 16) for r in rows]
        print(f"  softnet_stat flow_limit_count per CPU after an elephant flood: {counts} (reported, not judged)")
    c.check("/proc/net/softnet_stat has the flow-limit column", bool(rows) and len(rows[0]) > 10, boot["softnet"].out)
    c.check("revert exits 0", boot["revert"].rc == 0, boot["revert"].out)
    c.check("revert restores the bitmap, the table length and the backlog exactly", boot["after_revert"].out.split() == before,
            f"before {before}, after revert {boot['after_revert'].out.split()}")


def main() -> int:
    return vmlab.run_kernels(sys.argv[1:], one_kernel)


if __name__ == "__main__":
    sys.exit(main())
