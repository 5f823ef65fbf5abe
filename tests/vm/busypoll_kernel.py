#!/usr/bin/env python3
"""steering mode busypoll on a kernel that has it: Debian 13's trixie-backports 7.3, booted.

This VM's kernel (6.18) has no busy-poll NAPI (its napi-set takes threaded up to 1), so the mode
is proven in a guest of Debian's 7.3 kernel, 4 vCPUs, once per NIC model (virtio-net-pci, e1000e),
the NIC on QEMU's user network with a UDP port forwarded from this host's loopback. A thread here
sends a steady UDP stream into that port for the whole boot (a flood for a TCG guest, at a rate
that leaves this host's CPUs to QEMU) to a socket in the guest. rxtune plans busypoll
on the NIC with the targets 1-3 (so the poll CPU is 3, the highest of them). The checks: detect
says busy-poll is available and names rx-0; the plan sets rx-0's threaded to 2 and its kthread to
CPU 3; after apply, napi-get shows threaded busy-poll, the kthread is on CPU 3 alone and takes
(nearly) all of it, the NIC's RX interrupt count stops growing while packets keep arriving
(it grew before); verify is in sync, a second plan has nothing to do; revert restores rx-0's
threaded exactly and, where a kthread ran before (the e1000e boot sets the device threaded and
pins its kthread to CPUs 0-1 first), that kthread's CPUs; the 6.18-style refusal is
tests/integration/napi_test.cpp's on this host's 6.18 and this script's on 6.1 and 6.12 (a boot
each: the plan says "busy-poll needs Linux 6.19 (this kernel: ...)", apply writes nothing). What the poll costs and gives is not judged here (TCG is not a
performance machine); the counts are printed as measured. In the virtio-net boot the daemon then
runs mode auto with busypoll its one candidate: it must trial it and log the judgement with its
core charged ("busypoll: 1.00x none, 0.50x after its core ..."), its prediction before the trial
must be demand-bound (the host's stream, not the receive CPU, is the limit), and its on_stop revert must leave
threaded as it was; keep or undo is its measurement, not checked. `steering.busypoll.tx: threaded`
is checked in both boots: on virtio-net (whose TX NAPI has no id) the plan sets the device's
threaded before rx-0's busy-poll, the TX kthread runs on the poll CPU, verify is in sync and revert
stops every kthread; on e1000e (one NAPI for RX and TX) the plan says there is no TX-only NAPI.

Usage: busypoll_kernel.py BUILD_DIR [--kernels 6.1,6.12,7.3]   (closes with one "N passed, N failed" line)
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vmlab  # noqa: E402

PROFILE = """match: {interfaces: [eth0], verdict: any}
steering:
  mode: busypoll
  cpus: 1-3
  xps: false
"""

PROFILE_TX = PROFILE + "  busypoll: {tx: threaded}\n"

# The forwarded port on this host's loopback (a free one is found per boot) -> the guest's 9000.
GUEST_PORT = 9000

SCENARIO = r"""
IP=/usr/sbin/ip
$IP link set lo up
$IP link set eth0 up
$IP addr add 10.0.2.15/24 dev eth0
sleep 2
napis() { for p in /proc/[0-9]*; do c=$(cat $p/comm 2>/dev/null); case "$c" in napi/*) echo "${p#/proc/} $c $(cut -d' ' -f14,15 $p/stat) $(grep Cpus_allowed_list: $p/status | cut -f2)";; esac; done; }
if [ "$PRESET" = threaded ]; then
  echo 1 > /sys/class/net/eth0/threaded
  sleep 0.5
  for p in $(napis | cut -d' ' -f1); do taskset -p 3 $p >/dev/null; done
fi
# What one look sees: the guest's uptime, the interrupt counts, UDP's counters, the NAPI kthreads.
sample() { cut -d' ' -f1 /proc/uptime; cat /proc/interrupts; grep '^Udp:' /proc/net/snmp; napis; }
udp_flood sink 10.0.2.15 9000 120 >/dev/null 2>&1 &
SINK=$!
sleep 3
step detect_json rxtune detect --json -i eth0
step kthreads_before napis
step sample_before_a sample
sleep 3
step sample_before_b sample
step plan rxtune plan -p /etc/lab/busypoll.yaml
step apply rxtune apply -p /etc/lab/busypoll.yaml
step detect_after rxtune detect --json -i eth0
sleep 1
step sample_a sample
sleep 4
step sample_b sample
step verify rxtune verify
step plan_again rxtune plan -p /etc/lab/busypoll.yaml
step revert rxtune revert
sleep 0.5
step detect_reverted rxtune detect --json -i eth0
step kthreads_reverted napis
# steering.busypoll.tx threaded: the TX NAPI's kthread beside the poll (virtio-net's TX NAPI has
# no id: the device's threaded file reaches it), then reverted.
step plan_tx rxtune plan -p /etc/lab/busypoll-tx.yaml
step apply_tx rxtune apply -p /etc/lab/busypoll-tx.yaml
sleep 0.5
step kthreads_tx napis
step detect_tx rxtune detect --json -i eth0
step verify_tx rxtune verify
step revert_tx rxtune revert
sleep 0.5
step kthreads_tx_reverted napis
step detect_tx_reverted rxtune detect --json -i eth0
if [ "$DAEMON" = 1 ]; then
  # The daemon, mode auto with busy-poll its one candidate and saturation thresholds of 0 (this
  # boot checks the trial and its judgement; when a CPU counts as saturated is the unit and
  # integration tests' part: the guest's ~20k datagrams/s take about 2 % of its RX CPU under TCG,
  # too close to any threshold to be sure of): it measures none, trials busy-poll, judges it after
  # its core; SIGTERM: on_stop revert. plan --explain's one look first says what it measured.
  mkdir -p /tmp/rxd/state /tmp/rxd/run
  step auto_look rxtune plan --explain -p /etc/lab/auto.yaml
  step daemon timeout -s TERM 40 rxtune daemon --config /etc/lab/rxtune.yaml
  step detect_daemon rxtune detect --json -i eth0
fi
kill $SINK 2>/dev/null
"""

AUTO_PROFILE = """match: {interfaces: [eth0], verdict: any}
steering:
  mode: auto
  xps: false
  default_mask: false
  auto: {rx_share: 0, busy: 0, min_spare: 0.2, sustain: 1s, window: 4s, backoff: 10m, candidates: [busypoll]}
"""

DAEMON_CONFIG = """profile: /etc/lab/auto.yaml
interfaces: [eth0]
listen: 127.0.0.1:19875
state_dir: /tmp/rxd/state
run_dir: /tmp/rxd/run
bpf_accounting: off
datapaths: []
on_stop: revert
"""


class Stream:
    """A steady UDP stream into the forwarded port until stopped: `rate` datagrams a second, sent
    in bursts every 10 ms. Before QEMU listens, the datagrams go nowhere (no error on an unconnected
    socket)."""

    def __init__(self, port: int, rate: int = 20000) -> None:
        self.port, self.rate, self.sent = port, rate, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        payload = b"x" * 18
        burst = max(1, self.rate // 100)
        while not self.stop.is_set():
            t0 = time.monotonic()
            for _ in range(burst):
                try:
                    s.sendto(payload, ("127.0.0.1", self.port))
                    self.sent += 1
                except OSError:
                    pass
            time.sleep(max(0.0, 0.01 - (time.monotonic() - t0)))
        s.close()

    def __enter__(self) -> "Stream":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def free_udp_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def irq_count(interrupts: str, irq: int | None, names: list[str]) -> int | None:
    """The interrupt count of one IRQ summed over CPUs: by number, else the first line naming one of `names`."""
    for line in interrupts.splitlines():
        head, _, rest = line.partition(":")
        if not rest:
            continue
        fields = rest.split()
        counts = []
        for f in fields:
            if not f.isdigit():
                break
            counts.append(int(f))
        label = " ".join(fields[len(counts):])
        if (irq is not None and head.strip() == str(irq)) or (irq is None and any(n in label for n in names)):
            return sum(counts)
    return None


def uptime(text: str) -> float:
    return float(text.split()[0])


def udp_in(text: str) -> int | None:
    """Udp: InDatagrams (delivered to a socket) from /proc/net/snmp's two Udp: lines."""
    rows = [ln.split()[1:] for ln in text.splitlines() if ln.startswith("Udp:")]
    if len(rows) >= 2 and "InDatagrams" in rows[0]:
        return int(rows[1][rows[0].index("InDatagrams")])
    return None


def kthreads(text: str) -> dict[int, dict]:
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0].isdigit():
            out[int(f[0])] = {"name": f[1], "ticks": int(f[2]) + int(f[3]), "cpus": f[4]}
    return out


def rx0(detect: str) -> dict | None:
    try:
        for i in json.loads(detect)["interfaces"][0]["napi"]["instances"]:
            if i.get("role") == "rx-0":
                return i
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    return None


def one_nic(build: Path, series: str, model: str, preset: str, c: vmlab.Checks) -> None:
    kernel = vmlab.series_kernel(series, build / "vm-cache")
    port = free_udp_port()
    print(f"guest: {kernel.package}, 4 vCPUs, {model} on QEMU's user network, udp 127.0.0.1:{port} -> guest {GUEST_PORT}"
          + (", the device threaded before, its kthread on CPUs 0-1" if preset else ""))
    guest = vmlab.Guest(kernel, nics=[model], numa_nodes=1, hostfwd=[f"udp:127.0.0.1:{port}-:{GUEST_PORT}"],
                        binaries={"usr/sbin/rxtune": build / "agent" / "rxtune", "usr/sbin/ip": Path("/usr/sbin/ip"),
                                  "usr/bin/udp_flood": build / "bench" / "udp_flood"},
                        files={"etc/lab/busypoll.yaml": PROFILE, "etc/lab/busypoll-tx.yaml": PROFILE_TX, "etc/lab/auto.yaml": AUTO_PROFILE, "etc/lab/rxtune.yaml": DAEMON_CONFIG})
    daemon = not preset  # the daemon's auto trial: in the virtio-net boot
    with Stream(port) as stream:
        boot = guest.boot(f"PRESET={preset}\nDAEMON={int(daemon)}\n" + SCENARIO, build / "vm-runs" / f"busypoll-{series}-{model}")
    print(f"booted and ran in {boot.seconds:.1f} s; this host sent {stream.sent} datagrams")
    p = f"{model}: "
    if not c.check(p + "the scenario ran to its end", boot.done, vmlab.tail_text(boot.console)):
        return
    before = rx0(boot["detect_json"].out)
    if not c.check(p + "detect: napi-set takes busy-poll, and rx-0 is a NAPI with an id", before is not None and before.get("busy_poll") is True,
                   boot["detect_json"].out[:3000]):
        return
    plan = boot["plan"].out
    c.check(p + "plan: rx-0's threaded to 2, its kthread to CPU 3 (mask 8)",
            re.search(r"eth0 napi rx-0 threaded\s+\S+\s+->\s+2", plan) is not None and
            re.search(r"eth0 napi rx-0 kthread\s+.*->\s+8\b", plan) is not None and boot["plan"].rc == 2, plan)
    c.check(p + "apply exits 0", boot["apply"].rc == 0, boot["apply"].out)
    after = rx0(boot["detect_after"].out) or {}
    c.check(p + "napi-get: rx-0 threaded busy-poll, with a kthread on CPU 3", after.get("threaded") == "busy-poll" and after.get("pid")
            and after.get("cpus") == "3", json.dumps(after))
    pid = after.get("pid")
    sa, sb = boot["sample_a"].out, boot["sample_b"].out
    ka, kb = kthreads(sa), kthreads(sb)
    span = uptime(sb) - uptime(sa)
    if pid in ka and pid in kb and span > 0:
        share = (kb[pid]["ticks"] - ka[pid]["ticks"]) / (100.0 * span)  # USER_HZ 100
        print(f"  {p}busy-poll kthread {ka[pid]['name']}: {share:.0%} of CPU {kb[pid]['cpus']} over {span:.1f} s of the guest's time")
        c.check(p + "the busy-poll kthread takes (nearly) all of its CPU", share >= 0.85 and kb[pid]["cpus"] == "3",
                f"{ka[pid]} -> {kb[pid]}")
    else:
        c.check(p + "the busy-poll kthread is in /proc", False, sa + sb)
    irq = before.get("irq")
    names = ["virtio0-input.0", "eth0-rx-0"] if irq is None else []
    looks = [boot[s].out for s in ("sample_before_a", "sample_before_b", "sample_a", "sample_b")]
    counts = [irq_count(t, irq, names) for t in looks]
    delivered = [udp_in(t) for t in looks]
    if not c.check(p + "the RX IRQ's count and UDP's counters are read", None not in counts and None not in delivered, looks[2][:3000]):
        return
    irqs_before, irqs_after = counts[1] - counts[0], counts[3] - counts[2]
    pk_before, pk_after = delivered[1] - delivered[0], delivered[3] - delivered[2]
    print(f"  {p}RX IRQ {irq if irq is not None else names}: {irqs_before} interrupts for {pk_before} datagrams delivered before, "
          f"{irqs_after} for {pk_after} busy-polling (as measured; TCG, not a performance figure)")
    c.check(p + "datagrams keep arriving at the guest's socket while busy-polling", pk_before > 0 and pk_after > 0, str(delivered))
    if model.startswith("virtio"):
        # virtio_net re-arms its virtqueue callback at each completion (virtqueue_napi_complete:
        # enable_cb_prepare, then napi_complete_done, which busy-poll answers false, then
        # disable_cb): the device can interrupt in that window. Fewer per packet, not none.
        c.check(p + "fewer RX interrupts per delivered datagram under busy-poll than before",
                pk_after > 0 and irqs_after / pk_after < irqs_before / max(pk_before, 1), f"{counts} {delivered}")
    else:
        c.check(p + "the RX interrupt count grew before and stops growing under busy-poll", irqs_before > 0 and irqs_after <= 1,
                f"{counts} {delivered}")
    c.check(p + "verify: in sync", boot["verify"].rc == 0, boot["verify"].out)
    c.check(p + "a second plan has nothing to do", boot["plan_again"].rc == 0, boot["plan_again"].out)
    c.check(p + "revert exits 0", boot["revert"].rc == 0, boot["revert"].out)
    back = rx0(boot["detect_reverted"].out) or {}
    c.check(p + "revert restores rx-0's threaded exactly", back.get("threaded") == before.get("threaded"), f"{before} -> {back}")
    kbefore, kback = kthreads(boot["kthreads_before"].out), kthreads(boot["kthreads_reverted"].out)
    if preset:
        c.check(p + "revert puts the kthread that ran before back on its CPUs (0-1)",
                bool(kbefore) and all(kback.get(k, {}).get("cpus") == v["cpus"] == "0-1" for k, v in kbefore.items()),
                f"{kbefore} -> {kback}")
    else:
        c.check(p + "revert leaves no kthread where there was none", not kback, boot["kthreads_reverted"].out)
    tx_plan = boot["plan_tx"].out
    if model.startswith("virtio"):
        c.check(p + "tx threaded: the plan sets the device's threaded to 1 and its kthreads to CPU 3 before rx-0 to busy-poll",
                re.search(r"eth0 threaded\s+\S+\s+->\s+1", tx_plan) is not None and
                re.search(r"eth0 napi kthreads\s+.*->\s+8\b", tx_plan) is not None and
                tx_plan.find("eth0 threaded") < tx_plan.find("eth0 napi rx-0 threaded") and boot["plan_tx"].rc == 2, tx_plan)
        ktx = kthreads(boot["kthreads_tx"].out)
        tx_only = {k: v for k, v in ktx.items() if v["name"] == "napi/eth0-0"}
        c.check(p + "tx threaded: apply exits 0, the TX NAPI's kthread (napi/eth0-0) runs on CPU 3 beside the poll",
                boot["apply_tx"].rc == 0 and bool(tx_only) and all(v["cpus"] == "3" for v in ktx.values()),
                boot["apply_tx"].out + boot["kthreads_tx"].out)
        c.check(p + "tx threaded: rx-0 busy-polls all the same", (rx0(boot["detect_tx"].out) or {}).get("threaded") == "busy-poll",
                boot["detect_tx"].out[:3000])
        c.check(p + "tx threaded: verify in sync", boot["verify_tx"].rc == 0, boot["verify_tx"].out)
        c.check(p + "tx threaded: revert stops every kthread and restores rx-0's threaded",
                boot["revert_tx"].rc == 0 and not kthreads(boot["kthreads_tx_reverted"].out) and
                (rx0(boot["detect_tx_reverted"].out) or {}).get("threaded") == before.get("threaded"),
                boot["revert_tx"].out + boot["kthreads_tx_reverted"].out)
    else:
        c.check(p + "tx threaded: the plan says the RX NAPI serves TX too, and plans busy-poll as without it",
                "eth0 has no TX-only NAPI (its RX NAPIs serve its TX queues too)" in tx_plan and
                re.search(r"eth0 napi rx-0 threaded\s+\S+\s+->\s+2", tx_plan) is not None, tx_plan)
        c.check(p + "tx threaded: apply, verify and revert as without it",
                boot["apply_tx"].rc == 0 and boot["verify_tx"].rc == 0 and boot["revert_tx"].rc == 0 and
                (rx0(boot["detect_tx_reverted"].out) or {}).get("threaded") == before.get("threaded"),
                boot["apply_tx"].out + boot["verify_tx"].out + boot["revert_tx"].out)
    if daemon:
        log = boot["daemon"].out
        judged = re.search(r"auto eth0: (keep|undo) \([a-z_]+\):.*; busypoll: [0-9.]+x none, [0-9.]+x after its core \(none kept "
                           r"[0-9.]+ CPUs busy; the poll spends one more whole\)", log)
        c.check(p + "the daemon's mode auto trials busy-poll and logs its charged judgement", judged is not None and
                re.search(r"auto eth0: (enable|try) \([a-z_]+\):.*trying busypoll", log) is not None,
                log[-6000:] + "\nplan --explain's one look before it:\n" + boot["auto_look"].out[-3000:])
        if judged:
            print(f"  {p}daemon: {judged.group(0)[:400]}")
        # The host's stream, not the receive CPU (a few per cent busy), is the limit: the
        # prediction is what arrived, not the capacity model's many times more.
        bound = re.search(r"busypoll \(CPUs [0-9,-]+\) predicted [0-9.]+x none \([^)]*demand-bound[^)]*\)", log)
        c.check(p + "the daemon's prediction before the trial is demand-bound", bound is not None, log[-6000:])
        versus = re.search(r"busypoll: delivered [^\n]*?; predicted [0-9.]+x, measured [0-9.]+x \(off by -?[0-9]+%\)", log)
        if versus:
            print(f"  {p}daemon: ...{versus.group(0)[-60:]}")
        done = rx0(boot["detect_daemon"].out) or {}
        c.check(p + "the daemon's on_stop revert leaves rx-0's threaded as it found it", done.get("threaded") == back.get("threaded"),
                f"{back} -> {done}")


REFUSAL = r"""
IP=/usr/sbin/ip
$IP link set lo up
$IP link set eth0 up
step uname uname -r
step plan rxtune plan -p /etc/lab/busypoll.yaml
step apply rxtune apply -p /etc/lab/busypoll.yaml
step threaded cat /sys/class/net/eth0/threaded
"""


def refused(build: Path, series: str, c: vmlab.Checks) -> None:
    """A kernel without busy-poll: the plan says so with its version, apply writes nothing of it."""
    kernel = vmlab.series_kernel(series, build / "vm-cache")
    print(f"guest: {kernel.package}, 4 vCPUs, virtio-net-pci (a kernel without busy-poll)")
    guest = vmlab.Guest(kernel, nics=["virtio-net-pci"], numa_nodes=1,
                        binaries={"usr/sbin/rxtune": build / "agent" / "rxtune", "usr/sbin/ip": Path("/usr/sbin/ip")},
                        files={"etc/lab/busypoll.yaml": PROFILE})
    boot = guest.boot(REFUSAL, build / "vm-runs" / f"busypoll-{series}-refused")
    print(f"booted and ran in {boot.seconds:.1f} s")
    if not c.check("the scenario ran to its end", boot.done, vmlab.tail_text(boot.console)):
        return
    message = f"mode busypoll: busy-poll needs Linux 6.19 (this kernel: {boot['uname'].out.strip()})"
    c.check("plan refuses busypoll with the kernel's version, and has nothing else to do",
            message in boot["plan"].out and boot["plan"].rc == 0, boot["plan"].out)
    c.check("apply writes nothing: nothing to do, threaded still 0",
            boot["apply"].rc == 0 and "nothing to do" in boot["apply"].out and boot["threaded"].out.strip() == "0",
            boot["apply"].out + boot["threaded"].out)


def one_kernel(build: Path, series: str, c: vmlab.Checks) -> None:
    if series in ("5.10", "6.1", "6.12"):
        refused(build, series, c)
        return
    one_nic(build, series, "virtio-net-pci", "", c)
    one_nic(build, series, "e1000e", "threaded", c)


def main() -> int:
    return vmlab.run_kernels(sys.argv[1:], one_kernel, default="7.3")


if __name__ == "__main__":
    sys.exit(main())
