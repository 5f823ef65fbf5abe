#!/usr/bin/env python3
"""The booted lab on arm64: rxtune's arm64 .debs on Debian 12 arm64 with systemd as PID 1, under
qemu-system-aarch64 (the `virt` machine, TCG), with Debian 12's arm64 kernel, a virtio-net-pci NIC
(MSI-X through the GICv3 ITS) and a virtio-mmio one (`virtio-net-device`: one wired interrupt, as
arm64 SoCs and microVMs have).

The vCPUs get two capacities through the device tree, as a big/little chip's firmware gives them:
QEMU's own tree for this machine (dumpdtb) with `capacity-dmips-mhz` added to each cpu node (CPUs
0-1 little, 410; CPUs 2-3 big, 1024), booted with -dtb. So the kernel computes cpu_capacity itself
and rxtune's capacity read path and its big-core choices run against it.

One boot: the .debs installed with apt; the kernel's capacities; detect (classes); plan --explain,
apply, verify, revert of a profile with `steering.cpus: big` and `irq.cpus: auto` (RPS on the big
cores, the NIC's IRQ on a big one, the exact originals back); threaded NAPI with its kthread on the
big cores; the daemon under its unit (READY=1, BPF softirq accounting, XDP steering native or the
reason, generic from the CLI, stop restoring the originals); mode auto under a flood from this
host; rxtune-dp with net_tap as its NIC and --no-huge, into a multi-queue TAP (virtio-user) and
into a net_null vdev, traffic through it, its counters adding up. The IRQs as arm64 prints them
(#50): detect's names and roles are /proc/interrupts' actions, irq.cpus pins the RX vector only,
and the virtio-mmio NIC's one interrupt is found (role rxtx), pinned and reverted.

Usage: arm64_lab.py BUILD_DIR RXTUNE_DEB DATAPATH_DEB [--json OUT]
Closes with one "N passed, N failed" line (the image is built once and cached in BUILD_DIR/vm-cache).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import system_lab  # noqa: E402
import vmlab  # noqa: E402

LITTLE, BIG = [0, 1], [2, 3]
# In the image beside the packages' dependencies: DPDK's null PMD, the tap.device the lab (and
# rxtune-dp's benchmarks) fan out into; not a dependency of rxtune-datapath.
LAB_PACKAGES = ["librte-net-null23"]
CAPACITY = {0: 410, 1: 410, 2: 1024, 3: 1024}

BIG_PROFILE = """match:
  interfaces: [@V@]
steering:
  mode: rps
  cpus: big
  rfs: {flow_entries: 32768}
sysctl:
  net.core.netdev_max_backlog: ">= 300000"
irq:
  cpus: auto
"""

# mode auto with quick windows: RPS only, so that the trials are rps_big and rps. The thresholds
# are low: how hard the flood through QEMU's user network loads the receive CPU depends on how
# busy this host is (NET_RX 86 % in one run, not saturated by the defaults in the next).
AUTO_PROFILE = """match:
  interfaces: [@V@]
steering:
  mode: auto
  cpus: all
  auto: {candidates: [rps], sustain: 2s, window: 6s, rx_share: 0.15, busy: 0.5}
"""
FLOOD_SECONDS = 45

SCENARIO = system_lab.HELPERS + r"""
# The virtio-net-pci NIC (V) and the virtio-mmio one (M), told apart by the bus above them.
for d in $(dev_of virtio_net); do case "$(readlink -f /sys/class/net/$d/device)" in *pci*) V=$d ;; *) M=$d ;; esac; done
VIRTIO=$(basename "$(readlink /sys/class/net/$V/device)")
VIN=$(irq_of "$VIRTIO-input.0")
MVIRTIO=$(basename "$(readlink /sys/class/net/$M/device)")
MIRQ=$(irq_of "$MVIRTIO")
knobs() {
  for f in /sys/class/net/$V/queues/rx-*/rps_cpus /sys/class/net/$V/queues/rx-*/rps_flow_cnt /sys/class/net/$V/queues/tx-*/xps_cpus; do
    echo "$f $(cat $f)"; done
  for k in netdev_max_backlog rmem_max wmem_max rps_sock_flow_entries; do echo "$k $(cat /proc/sys/net/core/$k)"; done
  echo "irq$VIN $(cat /proc/irq/$VIN/smp_affinity_list)"
  echo "threaded $(cat /sys/class/net/$V/threaded)"
  echo "xdp $(ip -o link show $V | grep -o 'xdp[a-z]*' | head -1)"
}
step uname sh -c "uname -r; uname -m"
step names echo "$V $VIRTIO $VIN"
step capacity sh -c 'for c in 0 1 2 3; do echo "$c $(cat /sys/devices/system/cpu/cpu$c/cpu_capacity)"; done'
step dt_capacity sh -c 'for c in /proc/device-tree/cpus/cpu@*; do printf "%s " "${c##*/}"; od -An -tu4 --endian=big "$c/capacity-dmips-mhz" | tr -d " "; done'
systemctl stop irqbalance
step install apt-get install -y /lab/rxtune.deb /lab/rxtune-datapath.deb
step arch sh -c "dpkg --print-architecture; dpkg-query -W -f='\${Package} \${Architecture}\n' rxtune rxtune-datapath"
step interrupts cat /proc/interrupts
step detect_json rxtune detect --json
step detect rxtune detect

# The CLI with steering.cpus: big and irq.cpus: auto.
sed "s/@V@/$V/" /lab/big.yaml > /etc/rxtune/big.yaml
step before knobs
step plan_big rxtune plan -p /etc/rxtune/big.yaml --explain
step apply_big rxtune apply -p /etc/rxtune/big.yaml
traffic $V
big_state() { knobs; echo "effective $(cat /proc/irq/$VIN/effective_affinity_list)"; }
step big_state big_state
step verify_big rxtune verify
step revert_big rxtune revert
step after_big knobs

# The virtio-mmio NIC: its one interrupt, pinned and reverted.
step mmio_names echo "$M $MVIRTIO $MIRQ"
MORIG=$(cat /proc/irq/$MIRQ/smp_affinity_list)
printf 'match:\n  interfaces: [%s]\n  verdict: any\n  virtual: include\nsteering:\n  mode: none\nirq:\n  cpus: "3"\n' "$M" > /etc/rxtune/mmio.yaml
step mmio_detect rxtune detect --json -i "$M"
step mmio_plan rxtune plan -p /etc/rxtune/mmio.yaml
step mmio_apply rxtune apply -p /etc/rxtune/mmio.yaml
step mmio_after cat /proc/irq/$MIRQ/smp_affinity_list
step mmio_revert rxtune revert
step mmio_reverted sh -c "echo $MORIG; cat /proc/irq/$MIRQ/smp_affinity_list"

# Threaded NAPI over all CPUs: its kthread(s) on the big ones.
printf 'match:\n  interfaces: [%s]\nsteering:\n  mode: napi\n  cpus: all\n' "$V" > /etc/rxtune/napi.yaml
step napi_apply rxtune apply -p /etc/rxtune/napi.yaml
step napi_state sh -c "cat /sys/class/net/$V/threaded; for p in \$(pgrep '^napi/$V'); do grep Cpus_allowed_list /proc/\$p/status; done"
step napi_revert rxtune revert
step after_napi knobs

# The daemon under its shipped unit: BPF accounting, XDP steering.
sed "s/@V@/$V/" /lab/lab.yaml > /etc/rxtune/lab.yaml
cp /lab/rxtune.yaml /etc/rxtune/rxtune.yaml
step before_daemon knobs
step start systemctl start rxtune
step unit systemctl show -p ActiveState -p SubState -p StatusText -p NRestarts -p Result rxtune
step applied wait_for 60 applied
step steered knobs
step metrics scrape
xdp_round 60
step journal journalctl -u rxtune -b --no-pager -o short-monotonic
step stop systemctl stop rxtune
step after_daemon knobs
# mode auto under a UDP flood from the host (QEMU's forward to the virtio-net): where the receive
# CPU saturates, RPS onto the big cores alone and onto all are trialled.
sed "s/@V@/$V/" /lab/auto.yaml > /etc/rxtune/lab.yaml
systemctl start rxtune
wait_for 60 applied
step flood_ready echo ready
sleep 10
step auto_status rxtune status
sleep @FLOOD_WAIT@
step auto_journal sh -c "journalctl -u rxtune -b --no-pager -o cat | grep 'auto $V' || true"
step auto_metrics sh -c "scrape | grep -E '^rxtune_steering_(trial_delivered_pps|decisions_total|auto_)' || true"
step auto_unit systemctl show -p ActiveState -p NRestarts rxtune
systemctl stop rxtune
step after_auto knobs
step denials sh -c "journalctl -b --no-pager | grep -iE 'operation not permitted|permission denied|type=1326' || true"

# XDP steering in generic mode, from the CLI, onto the big cores.
xdpg_round big

# rxtune-dp: DPDK's net_tap as the NIC (its kernel side dpnic0), --no-huge. Frames the kernel
# sends on dpnic0 are what rxtune-dp receives. Twice: fanned out into a multi-queue TAP
# (virtio-user where vhost-net works, as here), then into a net_null vdev (tap.device).
# (timeout: a hung rxtune-dp ends its step, not the run.)
dp_round() {
  name=$1; shift
  timeout -s KILL 300 rxtune-dp --nic net_tap0,iface=dpnic0 --rx-cpu 2 --worker-cpus 2-3 "$@" -- --no-huge -m 256 \
    --log-level=lib.eal:warning > /tmp/$name.out 2> /tmp/$name.err &
  DP=$!
  wait_for 60 sh -c "grep -q 'rxtune-dp: running:' /tmp/$name.err || ! kill -0 $DP"
  ip link set dpnic0 up
  ip addr add 10.99.0.1/24 dev dpnic0
  ip neigh replace 10.99.0.2 lladdr 02:00:00:00:00:02 dev dpnic0
  bash -c 'for i in $(seq 1 200); do echo "datagram $i" > /dev/udp/10.99.0.2/$((5000 + i % 16)); done' 2>/dev/null
  step ${name}_links sh -c "ip -o link show dpnic0; ip -o link show rxdp0 && ls /sys/class/net/rxdp0/queues"
  sleep 2
  kill -TERM $DP
  wait $DP
  echo $? > /tmp/$name.rc
  step $name sh -c "cat /tmp/$name.out; echo rc=\$(cat /tmp/$name.rc)"
  step ${name}_err cat /tmp/$name.err
}
dp_round dp --tap rxdp0
dp_round dp_null --tap-device net_null1,no-rx=1
echo "@@DONE"
sync
systemctl poweroff
"""


def capacity_dts(dts: str, capacity: dict[int, int]) -> str:
    """QEMU's tree with capacity-dmips-mhz on each cpu node (cpu@N: N is the vCPU's MPIDR)."""
    out, n = [], 0
    for line in dts.splitlines():
        out.append(line)
        m = re.match(r"\s*cpu@([0-9a-f]+) \{$", line)
        if m:
            out.append(f"\t\t\tcapacity-dmips-mhz = <{capacity[int(m.group(1), 16)]}>;")
            n += 1
    if n != len(capacity):
        raise vmlab.LabError(f"the device tree has {n} cpu nodes, the lab gives {len(capacity)} capacities")
    if "cpu-map" not in dts:
        # Linux reads capacity-dmips-mhz while it parses cpu-map (drivers/base/arch_topology.c).
        raise vmlab.LabError("QEMU's device tree has no cpu-map: the kernel would not read the capacities")
    return "\n".join(out) + "\n"


def interrupt_actions(text: str) -> dict[int, str]:
    """Each numbered line's action names, as the kernel prints them: after the trigger column."""
    out = {}
    for line in text.splitlines():
        head, _, rest = line.partition(":")
        if not head.strip().isdigit():
            continue
        toks = rest.split()
        for i, t in enumerate(toks):
            if t.lower() in ("edge", "level") or re.search(r"-(edge|level|fasteoi)$", t):
                out[int(head)] = " ".join(toks[i + 1:])
                break
    return out


def check(c: vmlab.Checks, boot: vmlab.Boot, matrix: dict) -> None:
    def ok(name: str, cond: bool, detail: str = "", capability: str | None = None, degraded: str | None = None) -> bool:
        r = c.check(name, cond, detail)
        if capability:
            matrix[capability] = ("works" if not degraded else f"degrades: {degraded}") if r else "fails"
        return r

    if not ok("the guest ran the scenario to its end", boot.done, vmlab.tail_text(boot.console, 60)):
        return
    ok("an arm64 kernel (aarch64)", boot["uname"].out.split()[-1:] == ["aarch64"], boot["uname"].out)
    v, virtio, vin = boot["names"].out.split()
    ok("the arm64 .debs install with apt", boot["install"].rc == 0 and "arm64" in boot["arch"].out.split()[:1],
       boot["install"].out[-2000:] + boot["arch"].out, "install (arm64 .debs with apt)")
    caps = dict(tuple(map(int, l.split())) for l in boot["capacity"].out.splitlines() if len(l.split()) == 2)
    ok("the kernel computes cpu_capacity from the device tree (410 little, 1024 big)", caps == CAPACITY,
       f"cpu_capacity {caps}; device tree: {boot['dt_capacity'].out}", "cpu_capacity from the device tree")
    try:
        doc = json.loads(boot["detect_json"].out)
        host = doc["host"]
        got = {int(k): v["capacity"] for k, v in host["cpu_capacity"].items()}
        classes = {x["class"]: x["cpus"] for x in host["cpu_classes"]}
        ok("detect --json: capacity per CPU as the kernel gives it", got == CAPACITY, json.dumps(host["cpu_capacity"]), "detect capacity")
        ok("detect --json: classes big 2-3, little 0-1", classes == {"big": "2-3", "little": "0-1"}, json.dumps(host["cpu_classes"]))
        found = next(i for i in doc["interfaces"] if i["name"] == v).get("irqs", [])
        irqs = [i["irq"] for i in found]
        ok("detect finds the virtio-net vectors (GICv3 ITS MSI-X)", int(vin) in irqs, f"detect {irqs}, input.0 {vin}", "IRQ discovery virtio_net")
        # Names as /proc/interrupts has them (arm64's Edge column, #50), roles from the names.
        actions = interrupt_actions(boot["interrupts"].out)
        want_role = lambda n: "rx" if "-input" in n else "tx" if "-output" in n else "other"
        ok("detect's IRQ names are /proc/interrupts' actions (arm64 format), roles rx/tx/other",
           len(found) == 3 and all(i["name"] == actions.get(i["irq"]) and i["role"] == want_role(i["name"]) for i in found),
           json.dumps(found) + "\n" + boot["interrupts"].out[:3000], "IRQ names and roles on arm64")
    except (ValueError, KeyError, StopIteration) as ex:
        ok("detect --json", False, f"{ex}: {boot['detect_json'].out[:1500]}", "detect capacity")
    ok("detect's table groups the cores", "cores  big 2-3 (capacity 1024)  little 0-1 (capacity 410)" in boot["detect"].out,
       boot["detect"].out[:1500])

    plan = boot["plan_big"].out
    ok("plan --explain: RPS on the big cores, the capacity said", "big: CPUs 2-3 (capacity 1024); left out 0-1 (capacity 410)" in plan, plan)
    # Chosen among the biggest cores, or kept on a big one where the kernel put it at boot (within
    # 10 % of the least interrupt work): which of the two depends on the boot's counts.
    ok("plan --explain: the IRQ's CPU among the biggest cores", "a smaller core (capacity 410" in plan and
       ("among the biggest cores" in plan or re.search(r"irq cpu [23] kept: the IRQ is there now", plan) is not None), plan)
    before, big, after = system_lab.knob_map(boot["before"].out), system_lab.knob_map(boot["big_state"].out), system_lab.knob_map(boot["after_big"].out)
    rps = f"/sys/class/net/{v}/queues/rx-0/rps_cpus"
    ok("apply: rps_cpus = the big cores (c)", boot["apply_big"].rc == 0 and big.get(rps, "").lstrip("0,") == "c",
       boot["apply_big"].out + f"\n{rps}: {big.get(rps)}", "steering.cpus big (RPS)")
    pinned = [ln for ln in boot["apply_big"].out.splitlines() if f"{v} irq " in ln]
    ok("irq.cpus pins the RX vector only (not config, not output)", len(pinned) == 1 and f"{virtio}-input.0" in pinned[0],
       boot["apply_big"].out, "irq.cpus: the RX vector only")
    irq_cpu = big.get(f"irq{vin}", "")
    ok("apply: the virtio-net input vector on a big core", irq_cpu in ("2", "3"), f"smp_affinity_list {irq_cpu}", "irq.cpus auto on a big core")
    ok("the vector's effective affinity follows (GICv3 ITS)", big.get("effective") == irq_cpu, boot["big_state"].out, "effective affinity follows")
    ok("verify in sync", boot["verify_big"].rc == 0, boot["verify_big"].out)
    ok("revert restores the exact originals", boot["revert_big"].rc == 0 and after == before,
       "\n".join(f"{k}: {before.get(k)} -> {after.get(k)}" for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)),
       "revert")

    m, mvirtio, mirq = (boot["mmio_names"].out.split() + ["", "", ""])[:3]
    try:
        mirqs = json.loads(boot["mmio_detect"].out)["interfaces"][0].get("irqs", [])
    except (ValueError, KeyError, IndexError):
        mirqs = []
    ok("virtio-mmio NIC: detect finds its one interrupt, named after the virtio device, role rxtx",
       bool(mirq) and len(mirqs) == 1 and str(mirqs[0].get("irq")) == mirq and mirqs[0].get("name") == mvirtio and mirqs[0].get("role") == "rxtx",
       f"{m} {mvirtio} irq {mirq}: " + json.dumps(mirqs), "IRQ discovery virtio-mmio")
    ok("virtio-mmio NIC: irq.cpus pins it (CPU 3)", boot["mmio_apply"].rc == 0 and boot["mmio_after"].out.strip() == "3",
       boot["mmio_plan"].out + boot["mmio_apply"].out + boot["mmio_after"].out, "irq.cpus on virtio-mmio")
    orig_after = boot["mmio_reverted"].out.split()
    ok("virtio-mmio NIC: revert restores the exact original affinity", boot["mmio_revert"].rc == 0 and len(orig_after) == 2 and
       orig_after[0] == orig_after[1], boot["mmio_revert"].out + boot["mmio_reverted"].out)

    st = boot["napi_state"].out.splitlines()
    cpus = [l.split(":")[1].strip() for l in st if l.startswith("Cpus_allowed_list")]
    ok("threaded NAPI over all CPUs: the kthread on the big cores (2-3)", boot["napi_apply"].rc == 0 and st[:1] == ["1"] and bool(cpus) and
       all(x == "2-3" for x in cpus), boot["napi_apply"].out + boot["napi_state"].out, "threaded NAPI kthread on big cores")
    ok("and reverted", boot["napi_revert"].rc == 0 and system_lab.knob_map(boot["after_napi"].out) == before, boot["after_napi"].out)

    unit, metrics = boot["unit"].out, boot["metrics"].out
    ok("systemctl start rxtune: active (running) after READY=1", boot["start"].rc == 0 and "SubState=running" in unit, unit,
       "daemon under its unit")
    ok("the daemon applied its profile", boot["applied"].rc == 0, boot["journal"].out[-2000:])
    bpf = re.search(r'rxtune_bpf_info\{program="softirq",state="(\w+)"\} 1', metrics)
    state = bpf.group(1) if bpf else "absent"
    ok("BPF softirq accounting loads under the unit (arm64 BPF objects)", state == "available", f"state {state}; " + boot["journal"].out[-1500:],
       "BPF softirq accounting (unit)")
    ok("/metrics shows the capacities", 'rxtune_cpu_capacity{cpu="2"} 1024' in metrics and 'rxtune_cpu_capacity{cpu="0"} 410' in metrics,
       "\n".join(l for l in metrics.splitlines() if "capacity" in l or "class" in l)[:1500], "capacity metrics")
    link, xlog = boot["xdp_link"].out, boot["xdp_log"].out
    if re.search(r"\bxdp\b", link) and "xdpgeneric" not in link:
        ok("XDP steering in native mode on virtio-net (daemon)", True, link, "XDP native (virtio-net)")
    else:
        reason = xlog.strip().splitlines()[-1] if xlog.strip() else "(no reason logged)"
        ok("XDP native on virtio-net: in place, or generic/refused with the reason said", "xdpgeneric" in link or bool(xlog.strip()),
           link + "\n" + xlog, "XDP native (virtio-net)", degraded=reason[:200])
    ok("systemctl stop restores the exact originals", boot["stop"].rc == 0 and system_lab.knob_map(boot["after_daemon"].out) ==
       system_lab.knob_map(boot["before_daemon"].out), boot["after_daemon"].out, "stop restores originals")
    aj = boot["auto_journal"].out
    enable = next((l for l in aj.splitlines() if ": enable (" in l), "")
    keep = next((l for l in aj.splitlines() if ": keep (" in l or ": undo (" in l), "")
    ok("mode auto under the flood: the daemon runs and restores the originals after", "ActiveState=active" in boot["auto_unit"].out and
       "NRestarts=0" in boot["auto_unit"].out and system_lab.knob_map(boot["after_auto"].out) == system_lab.knob_map(boot["before_daemon"].out),
       boot["auto_unit"].out + boot["after_auto"].out)
    trialled = "trying rps_big (CPUs " in enable and "then rps (CPUs " in enable
    ok("mode auto: where the receive CPU saturates, RPS on the big cores and on all are trialled, then judged", trialled and bool(keep) or
       not enable, aj[-3000:] + "\n" + boot["auto_metrics"].out, "mode auto: big cores against all",
       degraded=None if enable else "the receive CPU did not saturate under this flood (no trial)")
    if not enable:
        print("        (no trial: the receive CPU was not saturated; rxtune status 10 s into the flood:)\n        " +
              boot["auto_status"].out[:1500].replace("\n", "\n        "))
    if enable:
        print("        " + enable[:400] + ("\n        " + keep[:400] if keep else ""))
    ok("no EPERM or seccomp denial in the journal", boot["denials"].out.strip() == "", boot["denials"].out, "no sandbox denials")
    ok("XDP steering in generic mode (CLI, big cores)", boot["xdpg_apply"].rc == 0 and "xdpgeneric" in boot["xdpg_link"].out,
       boot["xdpg_apply"].out + boot["xdpg_link"].out, "XDP generic")
    ok("revert takes it off", boot["xdpg_revert"].rc == 0 and "xdp" not in boot["xdpg_after"].out, boot["xdpg_after"].out)

    dp = boot["dp"].out
    counters = dict(re.findall(r"(\w+)=(\d+)", dp))
    ok("rxtune-dp (net_tap NIC, TAP fan-out, --no-huge) runs and stops cleanly", counters.get("rc") == "0" and "rxdp0" in boot["dp_links"].out,
       dp + boot["dp_err"].out[-2000:] + boot["dp_links"].out, "rxtune-dp (net_tap, --no-huge)")
    ok("rxtune-dp received the datagrams and fanned them out (counters add up)", int(counters.get("rx_packets", 0)) >= 200 and
       int(counters.get("to_tap", 0)) >= 200 and counters.get("mbufs_in_use") == "0", dp)
    null = boot["dp_null"].out
    nc = dict(re.findall(r"(\w+)=(\d+)", null))
    ok("rxtune-dp into a net_null vdev (tap.device): runs, receives, its counters add up", nc.get("rc") == "0" and
       int(nc.get("rx_packets", 0)) >= 200 and nc.get("mbufs_in_use") == "0", null + boot["dp_null_err"].out[-1500:],
       "rxtune-dp (net_null tap.device)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("deb")
    ap.add_argument("dp_deb")
    ap.add_argument("--json")
    ap.add_argument("--reuse", action="store_true", help="check the last run's results again; boot nothing")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    work = build / "vm-runs" / "arm64"
    c = vmlab.Checks("arm64: ")
    matrix: dict = {}
    if a.reuse:
        steps, done = vmlab.parse_results((work / "results.log").read_text(errors="replace"))
        check(c, vmlab.Boot(steps, done, (work / "console.log").read_text(errors="replace"), 0), matrix)
        return c.close()
    debs = [Path(a.deb).resolve(), Path(a.dp_deb).resolve()]
    t0 = time.monotonic()
    image = vmlab.system_image(build / "vm-cache", sorted({p for d in debs for p in vmlab.deb_depends(d)} | set(LAB_PACKAGES)), ("6.1",),
                               arch="arm64")
    kernel = image.kernel("6.1")
    print(f"arm64 system image ready in {time.monotonic() - t0:.0f} s; kernel {kernel}")
    port = system_lab.free_udp_port()
    guest = vmlab.SystemGuest(image, kernel, nics=["virtio-net-pci", "virtio-net-device"], cpus=4, numa_nodes=1, memory_mb=2048, arch="arm64",
                              hostfwd=[f"udp:127.0.0.1:{port}-:5555"])
    dtb = work / "capacity.dtb"
    dts = guest.dumpdtb(work / "qemu.dtb", work)
    (work / "capacity.dts").write_text(capacity_dts(dts, CAPACITY))
    vmlab.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(work / "capacity.dts")])
    guest.dtb = dtb
    files = {"rxtune.deb": debs[0], "rxtune-datapath.deb": debs[1], "big.yaml": BIG_PROFILE, "lab.yaml": system_lab.LAB_PROFILE,
             "xdp.yaml": system_lab.XDP_PROFILE, "rxtune.yaml": system_lab.DAEMON_CONFIG, "auto.yaml": AUTO_PROFILE}
    print(f"guest: Debian 12 arm64, kernel {kernel}, virt (GICv3), 4 vCPUs: {LITTLE} capacity 410, {BIG} capacity 1024 (device tree), virtio-net")
    flooder, stop, sent = system_lab.flood_when_ready(work / "results.log", port, FLOOD_SECONDS)
    try:
        boot = guest.boot(SCENARIO.replace("@FLOOD_WAIT@", str(FLOOD_SECONDS + 4)), files, work, timeout=1800)
        print(f"  boot and scenario in {boot.seconds:.0f} s; {sent[0] if sent else 0} datagrams sent in the flood")
        check(c, boot, matrix)
        if "interrupts" in boot.steps:  # arm64's format as a real kernel prints it (tests/fixtures/interrupts)
            (work / "interrupts.txt").write_text(boot["interrupts"].out + "\n")
    except vmlab.LabError as ex:
        c.check("the guest boots and runs", False, str(ex))
    finally:
        stop.set()
        flooder.join(timeout=5)
    if a.json:
        Path(a.json).write_text(json.dumps({kernel: matrix}, indent=2) + "\n")
    system_lab.print_matrix({kernel: matrix})
    return c.close()


if __name__ == "__main__":
    sys.exit(main())
