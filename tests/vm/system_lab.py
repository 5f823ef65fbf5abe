#!/usr/bin/env python3
"""The booted lab: rxtune installed from its .deb on Debian 12 with systemd as PID 1, real NIC
drivers (virtio-net, e1000e, 8139too) and the kernels users run (6.1, 6.12 from backports).

Per kernel, one guest boots twice (a reboot inside the run):
- first boot: the .deb installed with apt; detect against /proc/interrupts; the daemon under its
  shipped unit (READY=1, steering, /metrics, BPF accounting, reload, a profile changed on disk,
  XDP steering native or the reason, the unit's seccomp filter with kill instead of EPERM, a UDP
  flood from this host into the guest, stop restoring the exact originals); rxtune-apply enabled;
- second boot: rxtune-apply tuned the host at boot and its stop reverts; irqbalance as Debian ships
  it with rxtune's drop-in and a 2 s interval, IRQs pinned with `irq.cpus` (one of them in place
  already on a CPU banned for irqbalance, which moves it before its rescan), never moved by it after,
  placed by it again after revert; ring sizes set, checked with ethtool, reverted; coalescing read.

Usage: system_lab.py BUILD_DIR DEB [--suite bookworm|trixie] [--kernels 6.1,6.12] [--json OUT] [--scenario irqpin [--rounds 5]]
--suite trixie boots Debian 13 (systemd 257, its irqbalance) with its 6.12 and trixie-backports' 7.3;
DEB is then the trixie .deb (make debian13).
Closes with one "N passed, N failed" line; --json writes the kernel matrix's raw results.
--scenario irqpin runs the IRQ-pin scenario alone, --rounds times in a row on one boot per kernel
(`make vm-test-irqpin`).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vmlab  # noqa: E402

FLOOD_SECONDS = 10
DEFAULT_KERNELS = "6.1,6.12"
TRIXIE_KERNELS = "6.12,7.3"  # --suite trixie: Debian 13's own 6.12 and trixie-backports' 7.3
RELEASE = "Debian 12"

LAB_PROFILE = """match:
  interfaces: [@V@]
steering:
  mode: rps
  cpus: all
  rfs: {flow_entries: 32768}
sysctl:
  net.core.netdev_max_backlog: ">= 300000"
  net.core.rmem_max: ">= 268435456"
irq:
  cpus: auto
"""

XDP_PROFILE = """match:
  interfaces: [@V@]
steering:
  mode: xdp
  cpus: all
  xdp: {mode: native}
sysctl:
  net.core.netdev_max_backlog: ">= 300000"
"""

DAEMON_CONFIG = """profile: /etc/rxtune/lab.yaml
listen: 127.0.0.1:9867
drift_interval: 5s
metrics_interval: 2s
on_stop: revert
"""

# What the scenarios of both labs (this one, arm64_lab.py) use.
HELPERS = r"""
irq_of() { grep -E " $1\$" /proc/interrupts | cut -d: -f1 | tr -d ' '; }
# A command (not a function), so that `sh -c "scrape | grep ..."` has it too.
printf '#!/bin/sh\nexec curl -s --max-time 5 http://127.0.0.1:9867/metrics\n' > /usr/local/bin/scrape
chmod +x /usr/local/bin/scrape
wait_for() { t=$1; shift; i=0; while [ $i -lt $((t * 5)) ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; i=$((i + 1)); done; return 1; }
applied() { scrape | grep -qE '^rxtune_applies_total\{result="(changed|unchanged)"\} [1-9]'; }
# Frames into each NIC: ARP requests for QEMU's gateway, whose replies raise the NIC's RX
# interrupt. -D (sender 0.0.0.0): a NIC without an address asks too, and QEMU answers.
traffic() { for d in "$@"; do arping -D -c 2 -w 3 -I "$d" 10.0.2.2 >/dev/null 2>&1; done; }
# The running daemon's profile switched to XDP steering (native asked for) and back: in place, or
# the daemon says why not. $1: seconds to wait for each switch; $V: the virtio-net.
xdp_round() {
  sed "s/@V@/$V/" /lab/xdp.yaml > /etc/rxtune/lab.yaml
  wait_for $1 sh -c "ip -o link show $V | grep -q xdp || journalctl -u rxtune -b --no-pager | grep -qi 'xdp.*\(fail\|not\|refus\)'"
  sleep 3
  step xdp_link ip -d link show $V
  step xdp_log sh -c "journalctl -u rxtune -b --no-pager | grep -i xdp | tail -5"
  step xdp_metrics sh -c "scrape | grep -E '^rxtune_(cpumap_packets_total|bpf_info|settings|applies_total)'"
  sed "s/@V@/$V/" /lab/lab.yaml > /etc/rxtune/lab.yaml
  wait_for $1 sh -c "! ip -o link show $V | grep -q xdp"
}
# XDP steering in generic mode from the CLI onto $1 (a steering.cpus value), and reverted.
xdpg_round() {
  printf 'match:\n  interfaces: [%s]\nsteering:\n  mode: xdp\n  cpus: %s\n  xdp: {mode: generic}\n' "$V" "$1" > /etc/rxtune/xdpg.yaml
  step xdpg_apply rxtune apply -p /etc/rxtune/xdpg.yaml
  step xdpg_link ip -d link show $V
  step xdpg_revert rxtune revert
  step xdpg_after ip -o link show $V
}
"""

# The IRQ-pin scenario (the second boot's, and --scenario irqpin's rounds).
PIN_ROUND = r"""
# irqbalance as Debian ships it, with rxtune's drop-in and a 2 s interval.
irqbalance_dropin() {
  mkdir -p /etc/systemd/system/irqbalance.service.d
  cp /usr/share/rxtune/irqbalance/irqbalance-rxtune.conf /etc/systemd/system/irqbalance.service.d/rxtune.conf
  echo 'IRQBALANCE_ARGS="--interval=2"' >> /etc/default/irqbalance
  systemctl daemon-reload
}
watch() { for i in $(seq 1 $1); do echo "t$i $(for n in $(ls /proc/irq | grep -E '^[0-9]+$' | sort -n); do [ -r /proc/irq/$n/smp_affinity_list ] && printf '%s=%s/%s ' $n $(cat /proc/irq/$n/smp_affinity_list) $(cat /proc/irq/$n/effective_affinity_list 2>/dev/null || echo -); done)"; traffic $E $V; sleep 1; done; }
# One round, its steps suffixed $1. irqbalance restarted with CPU T banned for it, the virtio-net
# input vector put on T by hand first, and apply run as soon as irqbalance has read its IRQs (its
# control socket made: it balances the vector; pinned-irqs does not name it) and before its first
# pass (2 s later): the vector is in place when apply plans (nothing to write for it), and that
# first pass moves it off T, before the rescan that bans it. The e1000e RX vector is written (T is
# the CPU after its own). Apply waits for the first pass (irqbalance drops a rescan request until
# then), tells it, waits for the rescan, and must then set the moved vector again. Then 8 s of
# irqbalance's passes, the revert, 8 s more.
pin_round() {
  s=$1
  systemctl stop irqbalance
  EFF=$(cat /proc/irq/$ERX/effective_affinity_list)
  T=$(( (EFF + 1) % $(nproc) ))
  sed -i '/^IRQBALANCE_BANNED_CPULIST=/d' /etc/default/irqbalance
  echo "IRQBALANCE_BANNED_CPULIST=$T" >> /etc/default/irqbalance
  printf 'match:\n  interfaces: [%s, %s]\nsteering:\n  mode: none\nirq:\n  cpus: "%s"\n' "$V" "$E" "$T" > /etc/rxtune/irqpin.yaml
  step pin_target$s echo "$T"
  echo "$T" > /proc/irq/$VIN/smp_affinity_list
  systemctl start irqbalance
  wait_for 60 sh -c 'test -S /run/irqbalance/irqbalance$(pidof irqbalance).sock'
  ARRANGED=$(cat /proc/irq/$VIN/smp_affinity_list)
  step pin$s rxtune apply -p /etc/rxtune/irqpin.yaml
  step irqbalance$s sh -c "echo $ARRANGED; systemctl show -p ActiveState irqbalance; tr '\0' ' ' < /proc/\$(pidof irqbalance)/cmdline"
  traffic $E $V
  step pinned_list$s cat /run/rxtune/pinned-irqs
  step watch_pinned$s watch 8
  step unpin$s rxtune revert
  step watch_unpinned$s watch 8
}
"""

# The IRQ-pin scenario alone, @ROUNDS@ rounds in a row on one boot (--scenario irqpin).
PIN_SCENARIO = HELPERS + PIN_ROUND + r"""
V=$(dev_of virtio_net); E=$(dev_of e1000e)
VIRTIO=$(basename "$(readlink /sys/class/net/$V/device)")
VIN=$(irq_of "$VIRTIO-input.0"); ERX=$(irq_of "$E-rx-0")
step uname uname -r
step names echo "$V $E"
step install apt-get install -y /lab/rxtune.deb
step irqnames echo "$VIN $ERX"
irqbalance_dropin
for k in $(seq 1 @ROUNDS@); do pin_round "_$k"; done
echo "@@DONE"
sync
systemctl poweroff
"""

SCENARIO = HELPERS + PIN_ROUND + r"""
mkdir -p /var/lib/rxtune-lab
PHASE=$(cat /var/lib/rxtune-lab/phase 2>/dev/null || echo 1)
# QEMU's rtl8139 is an RTL8139C+: 8139cp claims it where loaded, else 8139too.
V=$(dev_of virtio_net); E=$(dev_of e1000e); R=$(dev_of 8139cp); [ -n "$R" ] || R=$(dev_of 8139too)
VIRTIO=$(basename "$(readlink /sys/class/net/$V/device)")
VIN=$(irq_of "$VIRTIO-input.0"); ERX=$(irq_of "$E-rx-0")
# What rxtune may change, for before/after comparisons.
knobs() {
  for d in $V $E $R; do for f in /sys/class/net/$d/queues/rx-*/rps_cpus /sys/class/net/$d/queues/rx-*/rps_flow_cnt; do
    echo "$f $(cat $f)"; done; done
  for k in netdev_max_backlog rmem_max wmem_max rps_sock_flow_entries; do echo "$k $(cat /proc/sys/net/core/$k)"; done
  for k in tcp_rmem tcp_wmem; do echo "$k $(cat /proc/sys/net/ipv4/$k | tr -s '\t ' ' ')"; done
  for i in $VIN $ERX; do echo "irq$i $(cat /proc/irq/$i/smp_affinity_list)"; done
  echo "xdp $(ip -o link show $V | grep -o 'xdp[a-z]*' | head -1)"
}

if [ "$PHASE" = 1 ]; then
step uname uname -r
step names echo "$V $E $R $VIRTIO $VIN $ERX"
step links ip -o link
# The daemon's checks compare exact values: irqbalance must not move IRQs meanwhile (it is
# checked on its own after the reboot).
systemctl stop irqbalance
step install apt-get install -y /lab/rxtune.deb
step version rxtune --version
step interrupts cat /proc/interrupts
step detect_json rxtune detect --json
step detect rxtune detect
step ethtool sh -c "ethtool -g $E; ethtool -c $E; ethtool -g $V; ethtool -c $V"

# The daemon under its shipped unit.
sed "s/@V@/$V/" /lab/lab.yaml > /etc/rxtune/lab.yaml
cp /lab/rxtune.yaml /etc/rxtune/rxtune.yaml
step plan_lab rxtune plan -p /etc/rxtune/lab.yaml
step before_daemon knobs
step start systemctl start rxtune
step unit systemctl show -p ActiveState -p SubState -p StatusText -p NRestarts -p Result rxtune
step applied wait_for 30 applied
step steered knobs
step metrics scrape
step reload systemctl reload rxtune
step reload_metric sh -c "scrape | grep '^rxtune_config_reload_total'"
sed -i 's/">= 300000"/">= 400000"/' /etc/rxtune/lab.yaml
step followed wait_for 30 sh -c 'test "$(cat /proc/sys/net/core/netdev_max_backlog)" = 400000'
xdp_round 30
# The unit's seccomp filter with kill instead of EPERM: a syscall it refuses ends the daemon,
# and the kernel logs it (type=1326).
mkdir -p /etc/systemd/system/rxtune.service.d
printf '[Service]\nSystemCallErrorNumber=kill\n' > /etc/systemd/system/rxtune.service.d/seccomp-kill.conf
systemctl daemon-reload
step strict_restart systemctl restart rxtune
wait_for 30 applied
systemctl reload rxtune
sed "s/@V@/$V/" /lab/xdp.yaml > /etc/rxtune/lab.yaml
sleep 8
sed "s/@V@/$V/" /lab/lab.yaml > /etc/rxtune/lab.yaml
sleep 8
scrape > /dev/null
# The scrape endpoint locked, under the same filter: TLS and basic auth from a web config given by
# a reload (GnuTLS and libmicrohttpd in the unit's sandbox); certificates made on the host.
mkdir -p /etc/rxtune/tls
cp /lab/ca.crt /lab/tls.crt /lab/tls.key /etc/rxtune/tls/
cp /lab/web.yml /etc/rxtune/web.yml
echo "web_config: /etc/rxtune/web.yml" >> /etc/rxtune/rxtune.yaml
step tls_reload systemctl reload rxtune
TLSCURL="curl -s --max-time 5 --cacert /etc/rxtune/tls/ca.crt https://127.0.0.1:9867/metrics"
step tls_scrape sh -c "$TLSCURL -u prometheus:lab-password | grep -c '^rxtune_build_info'"
step tls_noauth sh -c "$TLSCURL -o /dev/null -w '%{http_code}' -u prometheus:wrong"
step tls_plain sh -c "curl -s --max-time 5 http://127.0.0.1:9867/metrics; echo rc=\$?"
sed -i '/^web_config:/d' /etc/rxtune/rxtune.yaml
step tls_off systemctl reload rxtune
step strict_unit systemctl show -p ActiveState -p SubState -p NRestarts -p Result rxtune
step audit sh -c "journalctl -k -b --no-pager | grep -E 'type=1326|audit.*seccomp' || true"
rm /etc/systemd/system/rxtune.service.d/seccomp-kill.conf
systemctl daemon-reload
systemctl restart rxtune
wait_for 30 applied
# A UDP flood from the host into the guest (QEMU's hostfwd to the virtio-net).
step flood_ready echo ready
sleep @FLOOD_WAIT@
step flood_after sh -c "systemctl show -p ActiveState -p NRestarts rxtune; cat /sys/class/net/$V/statistics/rx_packets; scrape | grep -E '^rxtune_(softnet_processed_packets_total|interface_packets_total|settings|rx_busiest_cpu_share)'"
step journal journalctl -u rxtune -b --no-pager -o short-monotonic
step journal_err journalctl -u rxtune -b -p warning --no-pager -q -o short-monotonic
step stop systemctl stop rxtune
step after_daemon knobs
step denials sh -c "journalctl -b --no-pager | grep -iE 'operation not permitted|permission denied|EPERM|type=1326' || true"
# Debian 13's irqbalance (1.9.4) logs each IRQ whose affinity it could not write ("Cannot change IRQ
# N affinity: Permission denied", its EIO read as EPERM): the IRQs the kernel keeps from user
# space (the timer, managed queue vectors). Those it names that refuse their own mask written back.
step unsettable sh -c 'for n in $(journalctl -b --no-pager -t irqbalance | grep -o "Cannot change IRQ [0-9]*" | grep -o "[0-9]*$" | sort -un); do { cat /proc/irq/$n/smp_affinity > /proc/irq/$n/smp_affinity; } 2>/dev/null || echo $n; done'
# rxtune-apply.service, enabled; the next boot is tuned by it.
step enable_apply systemctl enable rxtune-apply
echo 2 > /var/lib/rxtune-lab/phase
sync
systemctl reboot
exit 0
fi

step uname2 uname -r
step names2 echo "$V $E $R $VIRTIO $VIN $ERX"
step apply_unit systemctl show -p ActiveState -p Result -p ExecMainStatus rxtune-apply
step apply_journal journalctl -u rxtune-apply -b --no-pager
step tuned sh -c "cat /proc/sys/net/core/netdev_max_backlog; rxtune verify"
step stop_apply systemctl stop rxtune-apply
step untuned sh -c "cat /proc/sys/net/core/netdev_max_backlog; ls /var/lib/rxtune"
systemctl disable rxtune-apply

irqbalance_dropin
step arping sh -c "arping -D -c 1 -w 3 -I $V 10.0.2.2; arping -D -c 1 -w 3 -I $E 10.0.2.2"
# This boot's IRQ numbers (a driver may get other vectors than at the first boot).
step irqnames2 echo "$VIN $ERX"
pin_round ""
ip addr add 10.0.2.15/24 dev "$E" 2>/dev/null
# Rings: set through ethtool netlink, read back by the guest's own ethtool, reverted.
printf 'match:\n  interfaces: [%s, %s]\nsteering:\n  mode: none\nnic:\n  rings: {rx: max, tx: max}\n' "$E" "$V" > /etc/rxtune/rings.yaml
step rings_before sh -c "ethtool -g $E; ethtool -g $V"
step rings_apply rxtune apply -p /etc/rxtune/rings.yaml
step rings_after sh -c "ethtool -g $E; ethtool -g $V"
step rings_verify rxtune verify
step rings_revert rxtune revert
step rings_reverted sh -c "ethtool -g $E; ethtool -g $V"
step coalesce ethtool -c $E
step detect_json2 rxtune detect --json
# Threaded NAPI (kthreads found by napi-get from 6.8, else by name in /proc) and deferral.
printf 'match:\n  interfaces: [%s]\nsteering:\n  mode: napi\n  cpus: "1-2"\nnic:\n  gro_flush_timeout: 20000\n  napi_defer_hard_irqs: 2\n' "$V" > /etc/rxtune/napi.yaml
step napi_apply rxtune apply -p /etc/rxtune/napi.yaml
step napi_state sh -c "cat /sys/class/net/$V/threaded /sys/class/net/$V/gro_flush_timeout /sys/class/net/$V/napi_defer_hard_irqs; for p in \$(pgrep '^napi/$V'); do grep Cpus_allowed_list /proc/\$p/status; done"
step napi_detect rxtune detect --json -i $V
step napi_verify rxtune verify
step napi_revert rxtune revert
step napi_after sh -c "cat /sys/class/net/$V/threaded /sys/class/net/$V/gro_flush_timeout /sys/class/net/$V/napi_defer_hard_irqs; pgrep -c '^napi/$V' || true"
step napi_detect_after rxtune detect --json -i $V
xdpg_round all
# The shipped default profile's plan: what this kernel lacks is skipped with its reason.
step plan_default rxtune plan
echo "@@DONE"
sync
systemctl poweroff
"""


# Upgrade, downgrade and purge under a running daemon (--scenario upgrade): the .deb of one version
# installed, the daemon applies with on_stop: keep (so that only the journal holds the originals),
# a newer version installed over it, then the older again, then purged.
UPGRADE_SCENARIO = HELPERS + r"""
V=$(dev_of virtio_net)
VIRTIO=$(basename "$(readlink /sys/class/net/$V/device)")
VIN=$(irq_of "$VIRTIO-input.0")
knobs() {
  for f in /sys/class/net/$V/queues/rx-*/rps_cpus /sys/class/net/$V/queues/rx-*/rps_flow_cnt; do echo "$f $(cat $f)"; done
  for k in netdev_max_backlog rmem_max rps_sock_flow_entries; do echo "$k $(cat /proc/sys/net/core/$k)"; done
  echo "irq$VIN $(cat /proc/irq/$VIN/smp_affinity_list)"
}
daemon_pid() { systemctl show -p MainPID --value rxtune; }
step uname uname -r
# Exact values: irqbalance must not move the IRQ meanwhile.
systemctl stop irqbalance
step install apt-get install -y /lab/rxtune-old.deb
step version_old dpkg-query -W -f '${Version}' rxtune
sed "s/@V@/$V/" /lab/lab.yaml > /etc/rxtune/lab.yaml
printf 'profile: /etc/rxtune/lab.yaml\nlisten: 127.0.0.1:9867\ndrift_interval: 5s\nmetrics_interval: 2s\non_stop: keep\n' > /etc/rxtune/rxtune.yaml
step originals knobs
step start systemctl start rxtune
step applied wait_for 30 applied
step tuned knobs
step journal_before cat /var/lib/rxtune/journal.json
step pid_before daemon_pid
step upgrade apt-get install -y /lab/rxtune-new.deb
step version_new dpkg-query -W -f '${Version}' rxtune
step applied_upgraded wait_for 30 applied
step pid_upgraded daemon_pid
step unit_upgraded sh -c "systemctl status rxtune --no-pager; journalctl -u rxtune -b --no-pager | tail -40"
step tuned_upgraded knobs
step verify_upgraded rxtune verify
step journal_upgraded cat /var/lib/rxtune/journal.json
step downgrade apt-get install -y --allow-downgrades /lab/rxtune-old.deb
step version_down dpkg-query -W -f '${Version}' rxtune
step applied_down wait_for 30 applied
step pid_down daemon_pid
step tuned_down knobs
step verify_down rxtune verify
step journal_down cat /var/lib/rxtune/journal.json
step purge apt-get purge -y rxtune
step purged knobs
step purged_state sh -c "ls -a /var/lib/rxtune 2>&1; systemctl show -p ActiveState --value rxtune"
echo "@@DONE"
sync
systemctl poweroff
"""


def newer_deb(deb: Path, out: Path) -> Path:
    """The same package at a higher version (VERSION+lab1), repacked: what an upgrade installs."""
    work = out / "newer"
    if work.exists():
        shutil.rmtree(work)
    vmlab.run(["dpkg-deb", "-R", str(deb), str(work)])
    control = work / "DEBIAN" / "control"
    text = control.read_text()
    version = re.search(r"^Version: (\S+)$", text, re.M).group(1)
    control.write_text(text.replace(f"Version: {version}\n", f"Version: {version}+lab1\n"))
    new = out / f"rxtune_{version}+lab1.deb"
    vmlab.run(["dpkg-deb", "--root-owner-group", "-b", str(work), str(new)])
    shutil.rmtree(work)
    return new


def originals(journal: str) -> dict[str, str]:
    try:
        return {o["id"]: o["value"] for o in json.loads(journal)["originals"]}
    except (ValueError, KeyError, TypeError):
        return {}


def check_upgrade(c: vmlab.Checks, image: vmlab.SystemImage, series: str, deb: Path, work: Path) -> None:
    """--scenario upgrade: install, upgrade, downgrade and purge under a running daemon."""
    kernel = image.kernel(series)
    work.mkdir(parents=True, exist_ok=True)
    new = newer_deb(deb, work)
    guest = vmlab.SystemGuest(image, kernel, nics=["virtio-net-pci"])
    print(f"guest: {RELEASE}, kernel {kernel}, 4 vCPUs, virtio-net, systemd as PID 1; upgrade, downgrade, purge")
    boot = guest.boot(UPGRADE_SCENARIO, {"rxtune-old.deb": deb, "rxtune-new.deb": new, "lab.yaml": LAB_PROFILE}, work)
    print(f"  the boot and the scenario in {boot.seconds:.0f} s")
    c.prefix = f"{series} upgrade: "
    if not c.check("the guest ran the scenario to its end", boot.done, vmlab.tail_text(boot.console, 60)):
        return
    old_v, new_v = boot["version_old"].out.strip(), boot["version_new"].out.strip()
    c.check("the older version installs with apt", boot["install"].rc == 0 and bool(old_v), boot["install"].out[-2000:])
    c.check("the daemon applies (on_stop: keep)", boot["applied"].rc == 0, boot["tuned"].out)
    orig, tuned = boot["originals"].out, boot["tuned"].out
    c.check("the profile changed the host", orig != tuned, f"originals:\n{orig}\ntuned:\n{tuned}")
    before = originals(boot["journal_before"].out)
    c.check("the journal holds the originals", bool(before), boot["journal_before"].out[:1500])
    for step, what, version in (("upgraded", "upgrade", new_v), ("down", "downgrade", old_v)):
        install = boot["upgrade" if what == "upgrade" else "downgrade"]
        c.check(f"the {what} installs with apt", install.rc == 0, install.out[-2000:])
        got = boot["version_new" if what == "upgrade" else "version_down"].out.strip()
        c.check(f"after the {what} the package is {version}", got == version and old_v != new_v, f"{got} (old {old_v}, new {new_v})")
        c.check(f"the {what} restarted the daemon on the installed binary",
                boot[f"pid_{step}"].out.strip() not in ("", "0", boot["pid_before"].out.strip()) and boot[f"applied_{step}"].rc == 0,
                f"pid before {boot['pid_before'].out.strip()}, after {boot[f'pid_{step}'].out.strip()}\n" +
                (boot["unit_upgraded"].out if what == "upgrade" else ""))
        c.check(f"after the {what} the host is tuned as before", boot[f"tuned_{step}"].out == tuned,
                f"before:\n{tuned}\nafter:\n{boot[f'tuned_{step}'].out}")
        c.check(f"after the {what} rxtune verify is in sync", boot[f"verify_{step}"].rc == 0, boot[f"verify_{step}"].out)
        c.check(f"after the {what} the journal's originals are the first ones (not the tuned values)",
                originals(boot[f"journal_{step}"].out) == before, boot[f"journal_{step}"].out[:1500])
    c.check("purge exits 0", boot["purge"].rc == 0, boot["purge"].out[-2000:])
    c.check("purge says it reverts what it changed", "reverting what it changed" in boot["purge"].out, boot["purge"].out[-2000:])
    c.check("after purge every value is its original", boot["purged"].out == orig, f"originals:\n{orig}\nafter purge:\n{boot['purged'].out}")
    state = boot["purged_state"].out
    c.check("purge leaves no state and no daemon", "No such file" in state and "inactive" in state, state)
    c.prefix = ""


def ethtool_rings(text: str) -> dict[str, dict[str, str]]:
    """`ethtool -g` of one or more devices: {"max": {...}, "current": {...}} per block, in order."""
    blocks = []
    cur = None
    for line in text.splitlines():
        if line.startswith("Ring parameters for"):
            blocks.append({})
        elif line.startswith("Pre-set maximums"):
            cur = "max"
            blocks[-1][cur] = {}
        elif line.startswith("Current hardware settings"):
            cur = "current"
            blocks[-1][cur] = {}
        elif ":" in line and blocks and cur:
            k, _, v = line.partition(":")
            blocks[-1][cur][k.strip()] = v.strip()
    return blocks


def knob_map(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        out[k] = v.strip()
    return out


def irq_lines(interrupts: str) -> dict[int, list[str]]:
    """IRQ number -> its action names, from /proc/interrupts."""
    out = {}
    for line in interrupts.splitlines()[1:]:
        head, _, rest = line.partition(":")
        if not head.strip().isdigit():
            continue
        fields = rest.split()
        # counts, then the controller's words, then the actions ("virtio0-input.0", "eth1, eth2").
        names = rest.split("  ")[-1].strip() if fields else ""
        out[int(head)] = [a.strip() for a in re.split(r",\s*", names) if a.strip()]
    return out


def flood(port: int, seconds: float, stop: threading.Event, sent: list[int]) -> None:
    """UDP to QEMU's forward on this host's loopback: bounded in time, never anywhere else."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = b"x" * 512
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not stop.is_set():
        try:
            s.sendto(payload, ("127.0.0.1", port))
            n += 1
        except OSError:
            time.sleep(0.001)
    s.close()
    sent.append(n)


def flood_when_ready(results: Path, port: int, seconds: float) -> tuple[threading.Thread, threading.Event, list[int]]:
    """A thread that floods `port` for `seconds` once the guest says "flood_ready" on its results
    channel; set the event to end it early. The list gets the number of datagrams sent."""
    stop = threading.Event()
    sent: list[int] = []

    def flooder() -> None:
        while not stop.is_set():
            if results.exists() and "@@BEGIN flood_ready" in results.read_text(errors="replace"):
                flood(port, seconds, stop, sent)
                return
            time.sleep(0.5)

    t = threading.Thread(target=flooder, daemon=True)
    t.start()
    return t, stop, sent


WEB_CONFIG = """tls_server_config:
  cert_file: tls/tls.crt
  key_file: tls/tls.key
basic_auth_users:
  prometheus: @HASH@
"""


def tls_files(d: Path) -> dict[str, Path | str]:
    """A CA and the guest's server certificate (IP SAN 127.0.0.1), made here by openssl, and a web
    config with one user (password lab-password) whose bcrypt hash libxcrypt makes."""
    import ctypes
    import subprocess
    d.mkdir(parents=True, exist_ok=True)
    def ossl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=lab CA",
         "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"))
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=rxtune",
         "-keyout", str(d / "tls.key"), "-out", str(d / "tls.csr"))
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    ossl("x509", "-req", "-in", str(d / "tls.csr"), "-CA", str(d / "ca.crt"), "-CAkey", str(d / "ca.key"), "-CAcreateserial",
         "-days", "2", "-extfile", str(d / "san.ext"), "-out", str(d / "tls.crt"))
    lib = ctypes.CDLL("libcrypt.so.1")
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt.restype = ctypes.c_char_p
    salt = lib.crypt_gensalt(b"$2y$", 10, None, 0)
    hashed = lib.crypt(b"lab-password", salt).decode()
    return {"ca.crt": d / "ca.crt", "tls.crt": d / "tls.crt", "tls.key": d / "tls.key",
            "web.yml": WEB_CONFIG.replace("@HASH@", hashed)}


def free_udp_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check_kernel(c: vmlab.Checks, image: vmlab.SystemImage | None, series: str, deb: Path, work: Path, matrix: dict,
                 reuse: bool = False) -> None:
    if reuse:
        # The results of the last run, checked again (for work on the checks; nothing boots).
        steps, done = vmlab.parse_results((work / "results.log").read_text(errors="replace"))
        boot = vmlab.Boot(steps, done, (work / "console.log").read_text(errors="replace"), 0)
        check_boot(c, boot, series, boot["uname"].out.strip(), matrix, [1])
        return
    kernel = image.kernel(series)
    port = free_udp_port()
    guest = vmlab.SystemGuest(image, kernel, nics=["virtio-net-pci", "e1000e", "rtl8139"], hostfwd=[f"udp:127.0.0.1:{port}-:5555"])
    files = {"rxtune.deb": deb, "lab.yaml": LAB_PROFILE, "xdp.yaml": XDP_PROFILE, "rxtune.yaml": DAEMON_CONFIG,
             **tls_files(work / "tls")}
    scenario = SCENARIO.replace("@FLOOD_WAIT@", str(FLOOD_SECONDS + 4))
    t, stop, sent = flood_when_ready(work / "results.log", port, FLOOD_SECONDS)
    print(f"guest: {RELEASE}, kernel {kernel}, 4 vCPUs in 2 NUMA nodes, virtio-net + e1000e + rtl8139, systemd as PID 1")
    try:
        boot = guest.boot(scenario, files, work)
    finally:
        stop.set()
        t.join(timeout=5)
    print(f"  two boots and the scenario in {boot.seconds:.0f} s; {sent[0] if sent else 0} datagrams sent in the flood")
    check_boot(c, boot, series, kernel, matrix, sent)


def check_pin_rounds(c: vmlab.Checks, image: vmlab.SystemImage, series: str, deb: Path, work: Path, rounds: int) -> None:
    """--scenario irqpin: the IRQ-pin scenario alone, `rounds` rounds in a row on one boot."""
    kernel = image.kernel(series)
    guest = vmlab.SystemGuest(image, kernel, nics=["virtio-net-pci", "e1000e"])
    print(f"guest: {RELEASE}, kernel {kernel}, 4 vCPUs, virtio-net + e1000e, systemd as PID 1; {rounds} rounds of the IRQ-pin scenario")
    boot = guest.boot(PIN_SCENARIO.replace("@ROUNDS@", str(rounds)), {"rxtune.deb": deb}, work)
    print(f"  the boot and {rounds} rounds in {boot.seconds:.0f} s")
    c.prefix = f"{series}: "
    if not c.check("the guest ran every round to the end", boot.done, vmlab.tail_text(boot.console, 60)):
        return
    c.check("booted the kernel asked for", boot["uname"].out.strip() == kernel, boot["uname"].out)
    c.check("the .deb installs with apt", boot["install"].rc == 0, boot["install"].out[-2000:])
    vin, erx = boot["irqnames"].out.split()[:2]
    for k in range(1, rounds + 1):
        c.prefix = f"{series} round {k}: "
        check_pin(lambda name, cond, detail="", *rest, **kw: c.check(name, cond, detail), boot, f"_{k}", vin, erx)
    c.prefix = ""


def check_boot(c: vmlab.Checks, boot: vmlab.Boot, series: str, kernel: str, matrix: dict, sent: list[int]) -> None:
    m = matrix.setdefault(kernel, {})
    p = f"{series}: "
    c.prefix = p

    def ok(name: str, cond: bool, detail: str = "", capability: str | None = None, degraded: str | None = None,
           note: str | None = None) -> bool:
        r = c.check(name, cond, detail)
        if capability:
            m[capability] = ("works" + (f" ({note})" if note else "")) if r and not degraded else (f"degrades: {degraded}" if r else "fails")
        return r

    if not ok("the guest ran both boots to the end", boot.done, vmlab.tail_text(boot.console, 60)):
        return
    c.check("booted the kernel asked for", boot["uname"].out.strip() == kernel and boot["uname2"].out.strip() == kernel,
            boot["uname"].out + " / " + boot["uname2"].out)
    v, e, *rest = boot["names"].out.split()
    virtio, vin, erx = rest[-3:]
    ok("the .deb installs with apt", boot["install"].rc == 0, boot["install"].out[-2000:], "install (.deb with apt)")

    # detect and its IRQ discovery per driver, against the guest's /proc/interrupts.
    dj = boot["detect_json"]
    try:
        doc = json.loads(dj.out)
        ifs = {i["name"]: i for i in doc["interfaces"]}
        r = next((n for n, i in ifs.items() if i.get("driver", {}).get("name") in ("8139cp", "8139too")), "")
        ok("detect --json lists the three NICs", all(n in ifs for n in (v, e, r)) and bool(r), str(sorted(ifs)), "detect")
    except (ValueError, KeyError) as ex:
        ok("detect --json is JSON", False, f"{ex}: {dj.out[:1500]}", "detect")
        return
    lines = irq_lines(boot["interrupts"].out)
    for dev, owner, want in ((v, virtio, "MSI-X, named after the virtio device"), (e, e, "MSI-X, named after the device"),
                             (r, r, "legacy INTx line")):
        found = sorted(i["irq"] for i in ifs[dev].get("irqs", []))
        named = sorted(n for n, acts in lines.items() if any(a == owner or a.startswith(owner + "-") for a in acts))
        ok(f"detect finds {dev}'s IRQs ({want}) as /proc/interrupts shows them", found == named and bool(found),
           f"detect {found}, /proc/interrupts {named}", f"IRQ discovery {ifs[dev]['driver']['name']}")
    co = ifs[e].get("coalesce", {})
    eth_c = boot["coalesce"].out
    m_usecs = re.search(r"rx-usecs:\s+(\d+)", eth_c)
    ok("coalescing read as ethtool -c shows it (e1000e rx-usecs)", bool(m_usecs) and str(co.get("rx_usecs")) == m_usecs.group(1),
       f"detect {co}, ethtool: {m_usecs.group(1) if m_usecs else eth_c}", "coalescing read")

    # The daemon under its unit.
    before, steered, after = knob_map(boot["before_daemon"].out), knob_map(boot["steered"].out), knob_map(boot["after_daemon"].out)
    unit = boot["unit"].out
    ok("systemctl start rxtune: active (running) after READY=1", boot["start"].rc == 0 and "ActiveState=active" in unit and
       "SubState=running" in unit, unit + boot["start"].out, "daemon under its unit")
    ok("the daemon applied its profile", boot["applied"].rc == 0, boot["journal"].out[-2000:])
    rps = f"/sys/class/net/{v}/queues/rx-0/rps_cpus"
    ok("the daemon steers the virtio-net (RPS)", steered.get(rps, "0").strip("0,") != "", f"{rps}: {steered.get(rps)}", "RPS/RFS apply")
    ok("and sets the backlog", steered.get("netdev_max_backlog") == "300000", str(steered.get("netdev_max_backlog")), "sysctls")
    metrics = boot["metrics"].out
    ok("/metrics serves the families", "rxtune_build_info" in metrics and "rxtune_softnet_processed_packets_total" in metrics,
       metrics[:800], "/metrics")
    bpf = re.search(r'rxtune_bpf_info\{program="softirq",state="(\w+)"\} 1', metrics)
    state = bpf.group(1) if bpf else "absent"
    ok("BPF softirq accounting loads under the unit", state == "available", f"state {state}; " + boot["journal"].out[-1500:],
       "BPF softirq accounting (unit)")
    ok("systemctl reload works", boot["reload"].rc == 0 and 'result="success"} 1' in boot["reload_metric"].out,
       boot["reload"].out + boot["reload_metric"].out, "reload")
    ok("a profile changed on disk is followed", boot["followed"].rc == 0, "", "profile followed on disk")
    link = boot["xdp_link"].out
    native = re.search(r"\bxdp\b", link) and "xdpgeneric" not in link
    generic = "xdpgeneric" in link
    xlog = boot["xdp_log"].out
    if native:
        ok("XDP steering in native mode on virtio-net", True, link, "XDP native (virtio-net)")
    else:
        reason = xlog.strip().splitlines()[-1] if xlog.strip() else "(no reason logged)"
        ok("XDP native on virtio-net: in place, or generic/refused with the reason said", generic or bool(xlog.strip()),
           link + "\n" + xlog, "XDP native (virtio-net)", degraded=reason[:200])
    ok("XDP steering's counters and state in /metrics", "rxtune_bpf_info" in boot["xdp_metrics"].out, boot["xdp_metrics"].out)
    tls_ok = boot["tls_reload"].rc == 0 and boot["tls_scrape"].out.strip() == "1"
    ok("the scrape endpoint locked by a reload under the unit: TLS with basic auth serves, a wrong password gets 401, "
       "plain HTTP gets no answer, and it opens again", tls_ok and boot["tls_noauth"].out.strip() == "401" and
       "rxtune_" not in boot["tls_plain"].out and "rc=0" not in boot["tls_plain"].out and boot["tls_off"].rc == 0,
       " | ".join(f"{k}: rc {boot[k].rc} {boot[k].out.strip()[:300]}" for k in ("tls_reload", "tls_scrape", "tls_noauth", "tls_plain", "tls_off")),
       "scrape endpoint TLS + basic auth (unit)")
    su = boot["strict_unit"].out
    ok("under seccomp kill (instead of EPERM) the daemon lives through start, reload, XDP and back", "ActiveState=active" in su and
       "NRestarts=0" in su, su, "seccomp filter (kill mode)")
    ok("the kernel logs no seccomp kill", boot["audit"].out.strip() == "", boot["audit"].out)
    fa = boot["flood_after"].out
    ok("under the flood from the host: the daemon runs, no restart, metrics there", "ActiveState=active" in fa and "NRestarts=0" in fa and
       "rxtune_softnet_processed_packets_total" in fa and bool(sent), fa, "daemon under a flood")
    # Warnings and errors, but those of the XDP native attempt (said above, as its degrade).
    errors = [l for l in boot["journal_err"].out.splitlines() if l.strip() and "xdp" not in l.lower()]
    ok("the daemon's journal has no warning or error (the XDP attempt aside)", not errors, "\n".join(errors[:12]))
    ok("systemctl stop restores the exact originals (on_stop: revert)", boot["stop"].rc == 0 and after == before,
       "\n".join(f"{k}: {before.get(k)} -> {after.get(k)}" for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)),
       "stop restores originals")
    # irqbalance's own failed writes to IRQs user space cannot move are not a sandbox's denial; an
    # IRQ it names that takes its mask (one rxtune pins, say) still counts.
    unsettable = set(boot["unsettable"].out.split())
    def irqbalance_own(line: str) -> bool:
        m = re.search(r"irqbalance\[\d+\]: Cannot change IRQ (\d+) affinity", line)
        return bool(m) and m.group(1) in unsettable
    denials = [l for l in boot["denials"].out.splitlines() if l.strip() and not irqbalance_own(l)]
    ok("no EPERM or seccomp denial in the journal", not denials, "\n".join(denials[:12]), "no sandbox denials")
    if unsettable:
        print(f"        (irqbalance could not move IRQs {', '.join(sorted(unsettable, key=int))}: the kernel keeps them from user space)")

    # rxtune-apply.service across a reboot.
    au = boot["apply_unit"].out
    tuned = boot["tuned"].out.split()
    ok("rxtune-apply.service tuned the host at boot", "ActiveState=active" in au and tuned[:1] == ["300000"] and boot["tuned"].rc == 0,
       au + boot["tuned"].out + boot["apply_journal"].out[-1500:], "rxtune-apply.service at boot")
    ok("systemctl stop rxtune-apply reverts", boot["stop_apply"].rc == 0 and boot["untuned"].out.split()[:1] == [before.get("netdev_max_backlog")],
       boot["untuned"].out)

    vin, erx = boot["irqnames2"].out.split()[:2]  # this boot's
    check_pin(ok, boot, "", vin, erx)

    # Rings, with the guest's own ethtool.
    rb, ra, rr = ethtool_rings(boot["rings_before"].out), ethtool_rings(boot["rings_after"].out), ethtool_rings(boot["rings_reverted"].out)
    ok("rings on e1000e set to the maximum (ethtool -g)", len(ra) >= 1 and ra[0]["current"].get("RX") == ra[0]["max"].get("RX") and
       ra[0]["current"].get("TX") == ra[0]["max"].get("TX"), boot["rings_apply"].out + boot["rings_after"].out, "rings e1000e")
    vring = len(ra) > 1 and ra[1]["current"].get("RX") == ra[1]["max"].get("RX")
    ap = boot["rings_apply"].out
    vskip = re.search(rf"skip\s+{v} ring rx\s+(.*)", ap)
    vset = re.search(rf"set\s+{v} ring rx", ap)
    ok("rings on virtio-net: at the maximum (set, or there already), or skipped with the driver's answer", vring or bool(vskip),
       ap + boot["rings_after"].out, "rings virtio-net", degraded=vskip.group(1)[:160] if vskip and not vring else None,
       note=None if vset or not vring else f"at its maximum already ({ra[1]['max'].get('RX')}): nothing to write")
    ok("verify in sync after the ring change", boot["rings_verify"].rc == 0, boot["rings_verify"].out)
    ok("revert restores the ring sizes", boot["rings_revert"].rc == 0 and rr == rb, boot["rings_revert"].out + boot["rings_reverted"].out)
    check_cli_families(c, boot, v, ok)


def samples(text: str) -> list[dict[int, tuple[str, str]]]:
    """`watch` lines: IRQ -> (smp_affinity_list, effective_affinity_list), one dict a second."""
    out = []
    for line in text.splitlines():
        row = {}
        for kv in line.split()[1:]:
            n, _, val = kv.partition("=")
            aff, _, eff = val.partition("/")
            row[int(n)] = (aff, eff)
        out.append(row)
    return out


def check_pin(ok, boot: vmlab.Boot, s: str, vin: str, erx: str) -> None:
    """One round of the IRQ-pin scenario (pin_round), its steps suffixed `s`."""
    ib = boot[f"irqbalance{s}"].out
    ok("irqbalance runs Debian's unit with rxtune's policy script", "ActiveState=active" in ib and "--policyscript=/usr/share/rxtune" in ib,
       ib, "irqbalance policy script")
    target = boot[f"pin_target{s}"].out.strip()
    arranged = ib.splitlines()[0].strip() if ib else ""
    pin = boot[f"pin{s}"]
    ok("rxtune apply pins the e1000e RX and virtio-net input vectors", pin.rc == 0, pin.out, "IRQ pin (apply)")
    waited = re.search(r"irqbalance \(pid \d+\) has not made its first pass.*", pin.out)
    print(f"        (irqbalance restarted just before: {waited.group(0) if waited else 'its first pass had come, told once'})")
    ok(f"the virtio-net input vector was in place on CPU {target} when apply began (put there by hand; CPU {target} banned for "
       "irqbalance, which had read its IRQs)",
       arranged == target, ib)
    # irqbalance may not keep it on a CPU banned for it: its first pass moves it, before the rescan.
    moved = re.search(rf"^\s*moved\s+\S+ irq {vin} .*$", pin.out, re.M)
    ok("irqbalance moved it before the rescan that bans it; apply says so and set it again", bool(moved) and
       re.search(rf"^\s*set\s+\S+ irq {vin} .* -> {target}$", pin.out, re.M) is not None, pin.out,
       "IRQ in place, moved before irqbalance's rescan")
    if moved:
        print(f"        ({moved.group(0).strip()})")
    pinned = set(boot[f"pinned_list{s}"].out.split())
    ok("pinned-irqs names both for irqbalance's policy script", {vin, erx} <= pinned, boot[f"pinned_list{s}"].out)
    wp = samples(boot[f"watch_pinned{s}"].out)
    held = all(row.get(int(vin), ("", ""))[0] == target and row.get(int(erx), ("", ""))[0] == target for row in wp) and bool(wp)
    ok(f"over 8 s of irqbalance's 2 s passes the pinned vectors stay on CPU {target}", held,
       "\n".join(f"{row.get(int(vin))} {row.get(int(erx))}" for row in wp))
    # An x86 MSI vector moves at its next interrupt: the e1000e one fires every ~2 s (its
    # watchdog), the virtio-net one when a frame reaches it (the ARP replies of `traffic`).
    follow = bool(wp) and wp[-1].get(int(erx), ("", ""))[1] == target
    ok("effective_affinity_list follows on the e1000e vector", follow, str(wp[-1] if wp else {}), "effective affinity follows")
    v_follow = bool(wp) and wp[-1].get(int(vin), ("", ""))[1] == target
    ok("effective_affinity_list follows on the virtio-net input vector (ARP replies reach it)", v_follow,
       str(wp[-1] if wp else {}), "effective affinity follows")
    others = [n for n in (wp[0] if wp else {}) if n not in (int(vin), int(erx))]
    moved_others = [n for n in others if any(row.get(n) != wp[0].get(n) for row in wp) or wp[0][n][0] not in ("0-3", "")]
    ok("irqbalance places other IRQs meanwhile", bool(moved_others), boot[f"watch_pinned{s}"].out[-1500:])
    wu = samples(boot[f"watch_unpinned{s}"].out)
    placed = bool(wu) and any(row.get(int(erx), ("", ""))[0] != wu[0].get(int(erx), ("", ""))[0] for row in wu[1:]) or \
        (bool(wu) and wu[-1].get(int(erx), ("", ""))[0] not in ("0-3", target))
    ok("after rxtune revert irqbalance places the e1000e vector again", boot[f"unpin{s}"].rc == 0 and placed,
       boot[f"unpin{s}"].out + "\n" + "\n".join(str(row.get(int(erx))) for row in wu), "irqbalance after revert")


def check_cli_families(c: vmlab.Checks, boot: vmlab.Boot, v: str, ok) -> None:
    """Threaded NAPI, deferral, XDP generic and the shipped profile's skips, from phase 2."""
    st = boot["napi_state"].out.split("\n")
    cpus = [l.split(":")[1].strip() for l in st if l.startswith("Cpus_allowed_list")]
    ok("threaded NAPI on virtio-net: threaded on, its kthread pinned to 1-2", boot["napi_apply"].rc == 0 and st[:1] == ["1"] and
       bool(cpus) and all(x == "1-2" for x in cpus), boot["napi_apply"].out + boot["napi_state"].out, "threaded NAPI")
    try:
        napi = json.loads(boot["napi_detect"].out)["interfaces"][0].get("napi", {})
        src = napi.get("source", "?")
        ok("detect finds the NAPI kthread(s)", len(napi.get("instances", [])) >= 1, json.dumps(napi), "NAPI kthread discovery",
           degraded=None if src.startswith("netdev-genl") else f"found by name in /proc (source {src}: no napi-get before 6.8)")
    except (ValueError, KeyError, IndexError) as ex:
        ok("detect --json -i for NAPI", False, f"{ex}: {boot['napi_detect'].out[:800]}")
    # Where the kernel's napi-set takes the deferral (6.13+, its policy says: detect's napi_set),
    # it is written per NAPI and the device's sysfs files stay; elsewhere through sysfs.
    def napi_of(step):
        try:
            return json.loads(boot[step].out)["interfaces"][0].get("napi", {})
        except (ValueError, KeyError, IndexError):
            return {}
    during, after = napi_of("napi_detect"), napi_of("napi_detect_after")
    per_napi = during.get("napi_set", {}).get("gro_flush_timeout") is True
    listed = [i for i in during.get("instances", []) if i.get("id")]
    if per_napi:
        ok("deferral set per NAPI through napi-set (each listed NAPI: gro_flush_timeout 20000, defer_hard_irqs 2; sysfs as it was)",
           bool(listed) and all(i.get("gro_flush_timeout") == 20000 and i.get("defer_hard_irqs") == 2 for i in listed) and
           st[1:3] == ["0", "0"], json.dumps(during) + boot["napi_state"].out, "NAPI deferral")
    else:
        ok("deferral set (gro_flush_timeout 20000, napi_defer_hard_irqs 2)", st[1:3] == ["20000", "2"], boot["napi_state"].out, "NAPI deferral")
    back = [i for i in after.get("instances", []) if i.get("id")]
    ok("verify in sync, revert: threaded and deferral as they were (sysfs and each NAPI)", boot["napi_verify"].rc == 0 and
       boot["napi_revert"].rc == 0 and boot["napi_after"].out.split()[:3] == ["0", "0", "0"] and
       all(i.get("gro_flush_timeout") in (0, None) and i.get("defer_hard_irqs") in (0, None) for i in back),
       boot["napi_verify"].out + boot["napi_after"].out + json.dumps(after))
    link = boot["xdpg_link"].out
    ok("XDP steering in generic mode on virtio-net (CLI)", boot["xdpg_apply"].rc == 0 and "xdpgeneric" in link, boot["xdpg_apply"].out + link,
       "XDP generic")
    ok("revert takes it off", boot["xdpg_revert"].rc == 0 and "xdp" not in boot["xdpg_after"].out, boot["xdpg_after"].out)
    plan = boot["plan_default"].out
    ok("the shipped profile plans on this kernel (exit 0 or 2)", boot["plan_default"].rc in (0, 2), plan, "plan (shipped profile)")
    lab = boot["plan_lab"].out
    dm = re.search(r"skip\s+sysctl net.core.rps_default_mask\s+(.*)", lab)
    ok("rps_default_mask (mode rps): planned, or skipped with the kernel's reason", "rps_default_mask" in lab, lab, "rps_default_mask",
       degraded=dm.group(1).strip() if dm else None)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("deb")
    ap.add_argument("--kernels", default=None)
    ap.add_argument("--json")
    ap.add_argument("--reuse", action="store_true", help="check the last run's results again; boot nothing")
    ap.add_argument("--scenario", choices=("all", "irqpin", "upgrade"), default="all",
                    help="irqpin: the IRQ-pin scenario alone, --rounds times in a row per kernel; "
                         "upgrade: install, upgrade, downgrade and purge under a running daemon")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--suite", choices=("bookworm", "trixie"), default="bookworm",
                    help="trixie: Debian 13's system (systemd 257, its irqbalance), kernels 6.12 and 7.3, the trixie .deb")
    a = ap.parse_args()
    global RELEASE
    RELEASE = "Debian 13" if a.suite == "trixie" else "Debian 12"
    defaults = DEFAULT_KERNELS if a.suite == "bookworm" else TRIXIE_KERNELS
    if a.kernels is None:
        a.kernels = defaults
    runs = "" if a.suite == "bookworm" else f"{a.suite}-"
    build = Path(a.build).resolve()
    deb = Path(a.deb).resolve()
    t0 = time.monotonic()
    image = None
    if not a.reuse:
        # Both default kernels always: one cached image serves every run (a key per kernel set).
        kernels = tuple(sorted(set(defaults.split(",")) | set(a.kernels.split(","))))
        image = vmlab.system_image(build / "vm-cache", vmlab.deb_depends(deb), kernels, suite=a.suite)
        print(f"system image ready in {time.monotonic() - t0:.0f} s; kernels {', '.join(sorted(image.kernels))}")
    c = vmlab.Checks()
    if a.scenario == "irqpin":
        for series in a.kernels.split(","):
            t1 = time.monotonic()
            try:
                check_pin_rounds(c, image, series, deb, build / "vm-runs" / f"irqpin-{runs}{series}", a.rounds)
            except vmlab.LabError as ex:
                c.check(f"{series}: the guest boots and runs", False, str(ex))
            print(f"  kernel {series}: {time.monotonic() - t1:.0f} s")
        return c.close()
    if a.scenario == "upgrade":
        for series in a.kernels.split(","):
            t1 = time.monotonic()
            try:
                check_upgrade(c, image, series, deb, build / "vm-runs" / f"upgrade-{runs}{series}")
            except vmlab.LabError as ex:
                c.check(f"{series}: the guest boots and runs", False, str(ex))
            print(f"  kernel {series}: {time.monotonic() - t1:.0f} s")
        return c.close()
    matrix: dict = {}
    for series in a.kernels.split(","):
        t1 = time.monotonic()
        try:
            check_kernel(c, image, series, deb, build / "vm-runs" / f"system-{runs}{series}", matrix, a.reuse)
        except vmlab.LabError as ex:
            c.check(f"{series}: the guest boots and runs", False, str(ex))
        print(f"  kernel {series}: {time.monotonic() - t1:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(matrix, indent=2) + "\n")
    print_matrix(matrix)
    return c.close()


def print_matrix(matrix: dict) -> None:
    """The kernel matrix as docs/VM.md shows it: capability by kernel."""
    kernels = sorted(matrix)
    caps: list[str] = []
    for k in kernels:
        for cap in matrix[k]:
            if cap not in caps:
                caps.append(cap)
    print("\n| capability | " + " | ".join(kernels) + " |")
    print("|---|" + "---|" * len(kernels))
    for cap in caps:
        print(f"| {cap} | " + " | ".join(matrix[k].get(cap, "not run") for k in kernels) + " |")


if __name__ == "__main__":
    sys.exit(main())
