#!/usr/bin/env python3
"""The single-queue lab: the story's gateway on one machine, measured against its peers.

A client netns (the load generator) and a server netns (the gateway) are joined by lab_wire, a
frame forwarder pinned to one CPU (the "NIC CPU"): every frame it writes into the server's TAP is
received by the kernel on that CPU, as frames of a one-queue NIC are on its IRQ CPU. Scenarios run
one after another on the same lab, each from the untuned state:

  untuned   nothing changed
  tunesh    bench/tune.sh (the story's script: RPS/RFS/XPS on all cores, backlog, buffers)
  gateway   rxtune apply --profile single-queue-gateway
  balanced  rxtune apply --profile balanced
  xdp       rxtune apply, single-queue-gateway with steering mode xdp (generic)
  napi      rxtune apply, single-queue-gateway with steering mode napi (threaded NAPI, the kthread
            on every CPU the profile allows: the scheduler places it)
  napi-away the same, the kthread pinned to the CPUs other than the NIC CPU
  dp        rxtune-dp polls the wire (af_packet on a veth) and fans flows out to a 2+ queue TAP
  auto      rxtune daemon with steering: mode: auto (it decides from what it measures; a warm-up
            load runs first so that it has something to decide on)
  auto-napi the same with candidates [rps, xdp, napi]

Usage: bench/lab.py [--smoke] [--duration S] [--connections 250,1000] [--scenarios a,b]
                    [--safe-point] [--recv-cost nft:N] [--wire napi|plain] [--json FILE]

--wire napi (the default) opens the server's TAP with IFF_NAPI: the wire's writes schedule the
TAP's NAPI, whose poll runs in the NIC CPU's softirq as a NIC's poll runs on its IRQ CPU (or in
the napi/tapS-0 kthread under mode napi). --wire plain is the lab before 2026-12-01: no NAPI, each
frame goes up the stack inside the wire's write; mode napi has nothing to act on there.

--recv-cost nft:N makes the gateway's receive path expensive, as a real gateway's is: conntrack
plus N netfilter rules in the server netns that every packet walks and none matches.
Needs root. Cleans up (processes, namespaces, host sysctls restored and checked) even on Ctrl-C.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
RXTUNE = os.path.join(BUILD, "agent", "rxtune")
RXTUNE_DP = os.path.join(BUILD, "datapath", "rxtune-dp")
WIRE = os.path.join(BUILD, "bench", "lab_wire")
HTTPD = os.path.join(BUILD, "bench", "lab_httpd")
LOAD = os.path.join(BUILD, "bench", "http_load")
TUNESH = os.path.join(ROOT, "bench", "tune.sh")
HOST_SYSCTLS = ["net.core.netdev_max_backlog", "net.core.rps_sock_flow_entries", "net.core.rmem_max", "net.core.wmem_max"]
SERVER_IP, CLIENT_IP, PORT = "10.77.0.2", "10.77.0.1", 8080


def sh(*args, check=True, capture=True, **kw):
    r = subprocess.run(list(args), stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None,
                       text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s" % (r.returncode, " ".join(args), r.stderr))
    return r


def sysctl_get(key):
    with open("/proc/sys/" + key.replace(".", "/")) as f:
        return f.read().strip()


def sysctl_set(key, value):
    with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
        f.write(value)


def softnet():
    """Per-CPU (processed, dropped, squeezed) from /proc/net/softnet_stat (row = CPU on 6.x: column 13)."""
    out = {}
    with open("/proc/net/softnet_stat") as f:
        for i, line in enumerate(f):
            cols = line.split()
            cpu = int(cols[12], 16) if len(cols) > 12 else i
            out[cpu] = (int(cols[0], 16), int(cols[1], 16), int(cols[2], 16))
    return out


def cpu_times():
    """Per-CPU (busy, total) jiffies from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                cols = line.split()
                vals = [int(x) for x in cols[1:9]]
                out[int(cols[0][3:])] = (sum(vals) - vals[3] - vals[4], sum(vals))
    return out


def delta(before, after):
    d = {}
    for cpu, v in after.items():
        b = before.get(cpu, (0, 0, 0))
        d[cpu] = tuple((x - y) & 0xffffffff for x, y in zip(v, b))
    return d


class Lab:
    def __init__(self, nic_cpu, tmp, recv_cost="", wire="napi"):
        self.pid = os.getpid()
        self.cli, self.srv = "rxlab-c-%d" % self.pid, "rxlab-s-%d" % self.pid
        self.nic_cpu = nic_cpu
        self.tmp = tmp
        self.procs = []
        self.wire = None
        self.httpd = None
        self.dp = None
        self.host_saved = {k: sysctl_get(k) for k in HOST_SYSCTLS}
        self.state = ["--state-dir", os.path.join(tmp, "state"), "--run-dir", os.path.join(tmp, "run"),
                      "--bpf-dir", os.path.join(tmp, "bpffs", "rxtune")]
        self.applied = False
        self.daemon = None
        self.recv_cost = recv_cost
        self.wire_napi = wire == "napi"
        ncpu = os.cpu_count()
        self.load_cpus = ",".join(str(c) for c in range(ncpu) if c != nic_cpu) if ncpu > 1 else str(nic_cpu)

    # ---- setup and teardown ----
    def up(self):
        for ns in (self.cli, self.srv):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        os.makedirs(os.path.join(self.tmp, "bpffs"), exist_ok=True)
        sh("mount", "-t", "bpf", "bpf", os.path.join(self.tmp, "bpffs"))
        if self.recv_cost:
            self.firewall(self.recv_cost)
        self.start_wire(veth=False)
        self.start_httpd()

    def firewall(self, spec):
        """conntrack plus N rules every packet walks (none matches), like a long linear firewall."""
        kind, _, n = spec.partition(":")
        if kind != "nft" or not n.isdigit():
            raise SystemExit("lab: --recv-cost takes nft:N, got %r" % spec)
        rules = ["table inet rxlab {",
                 "  chain pre { type filter hook prerouting priority 0; ct state new,established,related counter; }",
                 "  chain in { type filter hook input priority 0;"]
        rules += ["    ip saddr 192.0.2.%d tcp dport %d drop" % (i % 250 + 1, 20000 + i) for i in range(1, int(n) + 1)]
        rules += ["  }", "}"]
        path = os.path.join(self.tmp, "rules.nft")
        with open(path, "w") as f:
            f.write("\n".join(rules) + "\n")
        self.srv_exec("nft", "-f", path)

    def start_wire(self, veth):
        self.stop_wire()
        if veth:
            sh("ip", "-n", self.srv, "link", "add", "vs0", "type", "veth", "peer", "name", "vs1")
            for d in ("vs0", "vs1"):
                sh("ip", "netns", "exec", self.srv, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % d)
                sh("ip", "-n", self.srv, "link", "set", d, "up")
            server = ["--server-veth", "vs1"]
        else:
            server = ["--server-tap", "tapS", "--napi", "on" if self.wire_napi else "off"]
        log = open(os.path.join(self.tmp, "wire.log"), "w")
        self.wire = subprocess.Popen([WIRE, "--cpu", str(self.nic_cpu), "--client-ns", self.cli, "--client-tap", "tapC",
                                      "--server-ns", self.srv] + server, stdout=log, stderr=log)
        self.wait_for(lambda: "ready" in open(os.path.join(self.tmp, "wire.log")).read(), "lab_wire")
        sh("ip", "-n", self.cli, "addr", "add", CLIENT_IP + "/24", "dev", "tapC")
        sh("ip", "-n", self.cli, "link", "set", "tapC", "up")
        if not veth:
            sh("ip", "-n", self.srv, "addr", "add", SERVER_IP + "/24", "dev", "tapS")
            sh("ip", "-n", self.srv, "link", "set", "tapS", "up")

    def stop_wire(self):
        if self.wire:
            self.wire.send_signal(signal.SIGTERM)
            self.wire.wait(timeout=10)
            self.wire = None
        sh("ip", "-n", self.srv, "link", "del", "vs0", check=False)

    def start_httpd(self, upstream_ms=0, jitter_ms=0):
        self.stop_httpd()
        args = ["ip", "netns", "exec", self.srv, HTTPD, "--listen", "0.0.0.0:%d" % PORT, "--threads", str(os.cpu_count())]
        if upstream_ms or jitter_ms:
            args += ["--upstream-ms", str(upstream_ms), "--jitter-ms", str(jitter_ms)]
        self.httpd = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp, "httpd.log"), "w"))
        time.sleep(0.2)

    def stop_httpd(self):
        if self.httpd:
            self.httpd.send_signal(signal.SIGTERM)
            self.httpd.wait(timeout=10)
            self.httpd = None

    def wait_for(self, cond, what, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            try:
                if cond():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("timed out waiting for " + what)

    def reachable(self):
        r = sh("ip", "netns", "exec", self.cli, LOAD, "--host", SERVER_IP, "--port", str(PORT), "--connections", "1",
               "--requests", "1", "--timeout-ms", "500", check=False)
        return r.returncode == 0

    def down(self):
        errors = []
        self.stop_daemon()
        self.revert()
        self.stop_dp()
        self.stop_httpd()
        try:
            self.stop_wire()
        except Exception as e:  # noqa: BLE001 - cleanup goes on
            errors.append(str(e))
        for ns in (self.cli, self.srv):
            sh("ip", "netns", "del", ns, check=False)
        sh("umount", os.path.join(self.tmp, "bpffs"), check=False)
        for k, v in self.host_saved.items():
            if sysctl_get(k) != v:
                sysctl_set(k, v)
            if sysctl_get(k) != v:
                errors.append("host sysctl %s not restored: %s != %s" % (k, sysctl_get(k), v))
        return errors

    # ---- scenarios ----
    def srv_exec(self, *args, check=True):
        return sh("ip", "netns", "exec", self.srv, *args, check=check)

    def host_tune(self):
        sh(TUNESH, "host")

    def host_restore(self):
        for k, v in self.host_saved.items():
            sysctl_set(k, v)

    def apply(self, profile_text):
        path = os.path.join(self.tmp, "profile.yaml")
        with open(path, "w") as f:
            f.write(profile_text)
        self.srv_exec(RXTUNE, "apply", "-p", path, "-i", "tapS", *self.state)
        self.applied = True

    def revert(self):
        if self.applied:
            self.srv_exec(RXTUNE, "revert", *self.state, check=False)
            self.applied = False

    def start_daemon(self, profile_text):
        """rxtune daemon in the server netns (mode auto decides in the daemon, from samples)."""
        prof = os.path.join(self.tmp, "auto-profile.yaml")
        with open(prof, "w") as f:
            f.write(profile_text)
        cfg = os.path.join(self.tmp, "rxtune.yaml")
        with open(cfg, "w") as f:
            f.write("profile: %s\ninterfaces: [tapS]\nlisten: 127.0.0.1:19899\nmetrics_interval: 2s\non_stop: revert\n"
                    "datapaths: []\nstate_dir: %s\nrun_dir: %s\nbpf_dir: %s\n" % (
                        prof, os.path.join(self.tmp, "dstate"), os.path.join(self.tmp, "drun"),
                        os.path.join(self.tmp, "bpffs", "rxtune")))
        self.daemon = subprocess.Popen(["ip", "netns", "exec", self.srv, RXTUNE, "daemon", "--config", cfg],
                                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp, "daemon.log"), "w"))
        self.wait_for(lambda: "running:" in open(os.path.join(self.tmp, "daemon.log")).read(), "rxtune daemon")

    def stop_daemon(self):
        if self.daemon:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=30)
            self.daemon = None
            log = open(os.path.join(self.tmp, "daemon.log")).read()
            return [l.split("rxtune: ", 1)[-1] for l in log.splitlines() if "auto tapS" in l or "BPF softirq" in l]
        return []

    def start_dp(self, workers):
        cpus = [c for c in range(os.cpu_count()) if c != self.nic_cpu][:workers] or [self.nic_cpu]
        self.start_wire(veth=True)
        args = ["ip", "netns", "exec", self.srv, RXTUNE_DP, "--nic", "net_af_packet0,iface=vs0", "--rx-cpu",
                str(self.nic_cpu), "--worker-cpus", ",".join(map(str, cpus)), "--tap", "gw0", "--tap-address",
                SERVER_IP + "/24", "--idle-sleep-us", "20", "--", "--no-huge", "-m", "512",
                "--file-prefix=rxlab-%d" % self.pid, "--log-level=lib.eal:error"]
        log = os.path.join(self.tmp, "dp.log")
        self.dp = subprocess.Popen(args, stdout=open(log + ".out", "w"), stderr=open(log, "w"))
        self.wait_for(lambda: "running:" in open(log).read() or self.dp.poll() is not None, "rxtune-dp")
        if self.dp.poll() is not None:
            raise RuntimeError("rxtune-dp did not start:\n" + open(log).read())

    def stop_dp(self):
        if self.dp:
            self.dp.send_signal(signal.SIGTERM)
            self.dp.wait(timeout=30)
            self.dp = None
            self.start_wire(veth=False)

    def dp_counters(self):
        """rxtune-dp's busy cycles (RX core, each worker) and uptime, from its telemetry socket."""
        if not self.dp:
            return None
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect("/var/run/dpdk/rxlab-%d/dpdk_telemetry.v2" % self.pid)
            s.recv(65536)
            s.send(b"/rxtune_dp/stats")
            d = json.loads(s.recv(1 << 20))["/rxtune_dp/stats"]
        finally:
            s.close()
        return {"rx": d["rx_busy_cycles"], "workers": d["worker_busy_cycles"], "up": d["uptime_cycles"],
                "rx_cpu": d["rx_cpu"], "worker_cpus": d["worker_cpu"]}

    # ---- measurement ----
    def measure(self, connections, duration, rate=0, timeout_ms=2000):
        dp0 = self.dp_counters()
        before, cpu0 = softnet(), cpu_times()
        args = ["taskset", "-c", self.load_cpus, "ip", "netns", "exec", self.cli, LOAD, "--host", SERVER_IP, "--port",
                str(PORT), "--connections", str(connections), "--duration", str(duration), "--timeout-ms", str(timeout_ms)]
        if rate:
            args += ["--rate", str(rate)]
        r = sh(*args, check=False)
        after, cpu1 = softnet(), cpu_times()
        try:
            res = json.loads(r.stdout)
        except ValueError:
            raise RuntimeError("http_load: " + r.stdout + r.stderr)
        d = delta(before, after)
        total = sum(v[0] for v in d.values()) or 1
        res["netrx_share"] = {str(c): round(v[0] / total, 3) for c, v in sorted(d.items())}
        res["busiest_cpu_share"] = round(max(v[0] for v in d.values()) / total, 3)
        res["nic_cpu_share"] = round(d.get(self.nic_cpu, (0,))[0] / total, 3)
        res["softnet_dropped"] = sum(v[1] for v in d.values())
        res["softnet_squeezed"] = sum(v[2] for v in d.values())
        res["cpu_busy"] = {str(c): round((cpu1[c][0] - cpu0[c][0]) / max(1, cpu1[c][1] - cpu0[c][1]), 2) for c in sorted(cpu1)}
        dp1 = self.dp_counters()
        if dp0 and dp1:
            # The share of their time rxtune-dp's cores spent on packets (not polling empty
            # queues): the RX core's headroom at this rate is what a bigger host's workers could use.
            up = max(1, dp1["up"] - dp0["up"])
            res["dp_rx_busy"] = round((dp1["rx"] - dp0["rx"]) / up, 3)
            res["dp_worker_busy"] = [round((b - a) / up, 3) for a, b in zip(dp0["workers"], dp1["workers"])]
            res["dp_cpus"] = [dp1["rx_cpu"]] + dp1["worker_cpus"]
        return res

    def wrk(self, connections, duration):
        """The same closed-loop load from Debian's wrk: checks our load generator against a known one."""
        r = sh("taskset", "-c", self.load_cpus, "ip", "netns", "exec", self.cli, "wrk", "-t1", "-c%d" % connections,
               "-d%ds" % max(1, int(duration)), "--latency", "http://%s:%d/" % (SERVER_IP, PORT), check=False)
        out = {"tool": "wrk", "connections": connections}
        for line in r.stdout.splitlines():
            f = line.split()
            if line.startswith("Requests/sec:"):
                out["rps"] = float(f[1])
            elif len(f) == 2 and f[0] in ("50%", "99%"):
                v = f[1]
                scale = 1000.0 if v.endswith("ms") else 1e6 if v.endswith("s") and not v.endswith("us") else 1.0
                out["p%s_us" % f[0][:-1]] = round(float(v.rstrip("mus")) * scale)
            elif "Non-2xx" in line or "Socket errors" in line:
                out["errors"] = line.strip()
        return out


GATEWAY = "include: single-queue-gateway\nmatch:\n  virtual: include\nsteering:\n  mode: rps\n"
AUTO = "include: single-queue-gateway\nmatch:\n  virtual: include\nsteering:\n  mode: auto\n  auto: {sustain: 2s, window: 6s}\n"
AUTO_NAPI = AUTO.replace("window: 6s}", "window: 6s, candidates: [rps, xdp, napi]}")
SCENARIOS = {
    "untuned": None,
    "tunesh": "tunesh",
    "gateway": GATEWAY,
    "balanced": "include: balanced\nmatch:\n  virtual: include\nsteering:\n  mode: rps\n",
    "xdp": GATEWAY.replace("mode: rps", "mode: xdp"),
    "napi": GATEWAY.replace("mode: rps", "mode: napi"),
    "napi-away": "napi-away",
    "dp": "dp",
    "auto": "auto",
    "auto-napi": "auto-napi",
}


def napi_away(nic_cpu):
    """mode napi with the kthread kept off the NIC CPU (the wire's CPU), where the CPUs allow."""
    others = [c for c in range(os.cpu_count()) if c != nic_cpu] or [nic_cpu]
    return GATEWAY.replace("mode: rps", "mode: napi\n  cpus: \"%s\"" % ",".join(map(str, others)))


def enter(lab, name):
    kind = SCENARIOS[name]
    if kind is None:
        return
    if kind == "tunesh":
        lab.tcp_saved = [lab.srv_exec("sysctl", "-n", k).stdout.strip() for k in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")]
        lab.srv_exec(TUNESH, "device", "tapS")
        lab.host_tune()
    elif kind == "dp":
        lab.start_dp(workers=max(1, os.cpu_count() - 1))
    elif kind in ("auto", "auto-napi"):
        lab.start_daemon(AUTO if kind == "auto" else AUTO_NAPI)
        lab.host_tune()
    elif kind == "napi-away":
        lab.apply(napi_away(lab.nic_cpu))
        lab.host_tune()
    else:
        lab.apply(kind)
        lab.host_tune()  # the host-global sysctls rxtune skips inside a netns, as tune.sh sets them


def leave(lab, name):
    kind = SCENARIOS[name]
    if kind == "tunesh":
        # tune.sh keeps no journal: undo by hand what it wrote.
        lab.srv_exec("sh", "-c", "for q in /sys/class/net/tapS/queues/rx-*; do echo 0 > $q/rps_cpus; echo 0 > $q/rps_flow_cnt; done;"
                     " for q in /sys/class/net/tapS/queues/tx-*; do echo 0 > $q/xps_cpus 2>/dev/null || true; done;"
                     " sysctl -qw net.ipv4.tcp_rmem='%s' net.ipv4.tcp_wmem='%s'" % tuple(lab.tcp_saved))
    elif kind == "dp":
        lab.stop_dp()
    elif kind in ("auto", "auto-napi"):
        for line in lab.stop_daemon():
            print("lab: auto decided:", line, flush=True)
    elif kind is not None:
        lab.revert()
    lab.host_restore()


def smoke(lab):
    """Seconds, not minutes: the lab works, untuned NET_RX is on the NIC CPU, rxtune moves some away."""
    failures = []
    lab.wait_for(lab.reachable, "the gateway through the wire")
    base = lab.measure(16, 2)
    print("untuned:", json.dumps(base))
    if base["ok"] == 0 or base["failures"]:
        failures.append("untuned: no clean traffic through the lab")
    if base["nic_cpu_share"] < 0.9:
        failures.append("untuned: NIC CPU did %.0f%% of NET_RX work, expected nearly all" % (100 * base["nic_cpu_share"]))
    lab.apply(GATEWAY)
    tuned = lab.measure(16, 2)
    print("gateway:", json.dumps(tuned))
    # Moved, not a fixed share: with 16 flows over 2 CPUs, one of them busy with the load, the
    # other CPUs' share after apply was 28 % in one run and 9.5 % in the next, against 0 % untuned.
    before, others = 1 - base["nic_cpu_share"], 1 - tuned["nic_cpu_share"]
    if tuned["ok"] == 0 or tuned["failures"]:
        failures.append("gateway: no clean traffic after apply")
    if os.cpu_count() > 1 and others - before < 0.05:
        failures.append("gateway: other CPUs did %.0f%% of NET_RX work after apply, %.0f%% before: not 5 points more" %
                        (100 * others, 100 * before))
    lab.revert()
    rps = lab.srv_exec("cat", "/sys/class/net/tapS/queues/rx-0/rps_cpus").stdout.strip()
    if rps.strip("0,") != "":
        failures.append("revert left rps_cpus at " + rps)
    return failures


def report(results, duration):
    """Markdown tables: closed loop side by side with ratios, then the open-loop safe points."""
    closed_all = [r for r in results if r.get("method") == "closed"]
    # Repeated runs (--repeat): one row per scenario and connection count, the run with the median
    # req/s, with the range of all runs beside it.
    groups = {}
    for r in closed_all:
        groups.setdefault((r["scenario"], r["connections"]), []).append(r)
    closed, spread = [], {}
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["rps"])
        closed.append(rs[len(rs) // 2])
        spread[key] = (len(rs), rs[0]["rps"], rs[-1]["rps"])
    base = {r["connections"]: r["rps"] for r in closed if r["scenario"] == "untuned"}
    tunesh = {r["connections"]: r["rps"] for r in closed if r["scenario"] == "tunesh"}
    lines = ["| scenario | connections | req/s | runs (min-max) | vs untuned | vs tune.sh | p50 ms | p99 ms | busiest CPU NET_RX share |"
             " CPU busy | softnet drops | squeezes | failures |", "|" + "---|" * 13]
    for r in sorted(closed, key=lambda r: (r["connections"], list(SCENARIOS).index(r["scenario"]))):
        c = r["connections"]
        ratio = lambda ref: "%.2fx" % (r["rps"] / ref[c]) if ref.get(c) else "-"  # noqa: E731
        busy = "/".join("%d%%" % round(100 * v) for v in r["cpu_busy"].values())
        n, lo, hi = spread[(r["scenario"], c)]
        lines.append("| %s | %d | %.0f | %s | %s | %s | %.1f | %.1f | %.2f | %s | %d | %d | %d |" % (
            r["scenario"], c, r["rps"], "%d (%.0f-%.0f)" % (n, lo, hi) if n > 1 else "1", ratio(base), ratio(tunesh),
            r["p50_us"] / 1000, r["p99_us"] / 1000,
            r["busiest_cpu_share"], busy, r["softnet_dropped"], r["softnet_squeezed"], r["failures"]))
    dps = [r for r in closed if "dp_rx_busy" in r]
    if dps:
        lines += ["", "rxtune-dp's cores at the measured rate (share of time on packets, not on empty polls; the RX "
                  "core's headroom is what more workers on a bigger host could use):", "",
                  "| connections | req/s | RX core busy (CPU) | RX core headroom | workers busy (CPUs) | req/s the RX core alone could carry |",
                  "|---|---|---|---|---|---|"]
        for r in sorted(dps, key=lambda r: r["connections"]):
            cpus = r.get("dp_cpus", [])
            lines.append("| %d | %.0f | %d%% (%s) | %d%% | %s (%s) | %s |" % (
                r["connections"], r["rps"], round(100 * r["dp_rx_busy"]), cpus[0] if cpus else "?",
                round(100 * (1 - r["dp_rx_busy"])), "/".join("%d%%" % round(100 * w) for w in r["dp_worker_busy"]),
                ",".join(map(str, cpus[1:])), "%.0f" % (r["rps"] / r["dp_rx_busy"]) if r["dp_rx_busy"] > 0 else "-"))
    wrk = [r for r in results if r.get("method") == "wrk"]
    for w in wrk:
        lines.append("")
        lines.append("Load generator check (untuned, %d connections): wrk %.0f req/s, p50 %.1f ms, p99 %.1f ms." % (
            w["connections"], w.get("rps", 0), w.get("p50_us", 0) / 1000, w.get("p99_us", 0) / 1000))
    opened = [r for r in results if r.get("method") == "open"]
    if opened:
        lines += ["", "| scenario | offered req/s | served | p95 ms | failures | holds |", "|---|---|---|---|---|---|"]
        safe, broken, top = {}, set(), max(r["offered_rps"] for r in opened)
        for r in sorted(opened, key=lambda r: (r["scenario"], r["offered_rps"])):
            # Answered, out of what was answered, failed or overdue (requests still in flight at the
            # end, not yet overdue, count neither way).
            served = r["ok"] / max(1, r["ok"] + r["failures"])
            holds = r["failures"] == 0 and served >= 0.99
            # The safe point: the highest rate that holds with every lower rate holding too.
            if holds and r["scenario"] not in broken:
                safe[r["scenario"]] = (r["offered_rps"], r["p95_us"] / 1000)
            elif not holds:
                broken.add(r["scenario"])
            lines.append("| %s | %.0f | %.1f%% | %.1f | %d | %s |" % (r["scenario"], r["offered_rps"], 100 * min(served, 1.0),
                                                                 r["p95_us"] / 1000, r["failures"], "yes" if holds else "no"))
        lines += ["", "Safe points (highest offered rate served in full with zero failures, every lower rate too; "
                  "p95 there): " + ", ".join("%s %d req/s%s (p95 %.0f ms)" % (k, v[0], "+ (top of the ladder)" if v[0] == top else "", v[1])
                                             for k, v in sorted(safe.items(), key=lambda kv: list(SCENARIOS).index(kv[0])))]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--connections", default="250,1000")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--safe-point", action="store_true", help="also run the open-loop capacity ladder")
    ap.add_argument("--rates", default="1000,2000,4000,6000,8000,10000,12000")
    ap.add_argument("--open-connections", type=int, default=2000)
    ap.add_argument("--open-duration", type=float, default=5)
    ap.add_argument("--nic-cpu", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="run the scenario list this many times, interleaved")
    ap.add_argument("--auto-warmup", type=float, default=26,
                    help="seconds of load before measuring auto (2 samples of 2 s, then two 6 s trials)")
    ap.add_argument("--recv-cost", default="", help="nft:N: conntrack and N netfilter rules on the gateway's receive path")
    ap.add_argument("--wire", choices=("napi", "plain"), default="napi",
                    help="napi: the server's TAP has NAPI (IFF_NAPI), as a NIC does; plain: none (the lab before 2026-12-01)")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--report", help="print the tables for a results file written by --json, and exit")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            data = json.load(f)
        print("lab:", json.dumps(data["machine"]))
        print(report(data["results"], data["machine"]["duration_s"]))
        return
    if os.geteuid() != 0:
        sys.exit("lab: needs root (network namespaces, TAPs, sysctls)")
    for b in (RXTUNE, WIRE, HTTPD, LOAD):
        if not os.access(b, os.X_OK):
            sys.exit("lab: %s is not built (make build)" % b)
    tmp = tempfile.mkdtemp(prefix="rxlab-")
    lab = Lab(a.nic_cpu, tmp, a.recv_cost, a.wire)
    interrupted = []

    def on_signal(sig, _frame):
        interrupted.append(sig)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    failures, results = [], []
    try:
        lab.up()
        if a.smoke:
            failures = smoke(lab)
        else:
            conns = [int(c) for c in a.connections.split(",")]
            machine = {"cpus": os.cpu_count(), "kernel": os.uname().release, "date": time.strftime("%Y-%m-%d"),
                       "nic_cpu": a.nic_cpu, "duration_s": a.duration, "recv_cost": a.recv_cost or "none", "wire": a.wire}
            print("lab:", json.dumps(machine), flush=True)
            for name in [n for _ in range(a.repeat) for n in a.scenarios.split(",")]:
                if name == "dp" and not os.access(RXTUNE_DP, os.X_OK):
                    print("lab: skipping dp (rxtune-dp not built)")
                    continue
                enter(lab, name)
                try:
                    lab.wait_for(lab.reachable, "the gateway in scenario " + name)
                    for c in conns:
                        if name.startswith("auto"):  # give the daemon load to decide on before measuring
                            lab.measure(c, a.auto_warmup)
                        r = lab.measure(c, a.duration)
                        r.update({"scenario": name, "method": "closed"})
                        results.append(r)
                        print(json.dumps(r), flush=True)
                        if name == "untuned" and shutil.which("wrk") and not any(x.get("method") == "wrk" and x["connections"] == c for x in results):
                            w = lab.wrk(c, a.duration)
                            w.update({"scenario": name, "method": "wrk"})
                            results.append(w)
                            print(json.dumps(w), flush=True)
                    if a.safe_point:
                        lab.start_httpd(upstream_ms=20, jitter_ms=30)
                        lab.wait_for(lab.reachable, "the slow gateway")
                        for rate in [int(x) for x in a.rates.split(",")]:
                            r = lab.measure(a.open_connections, a.open_duration, rate=rate, timeout_ms=2000)
                            r.update({"scenario": name, "method": "open", "schedule_s": a.open_duration})
                            results.append(r)
                            print(json.dumps(r), flush=True)
                        lab.start_httpd()
                finally:
                    leave(lab, name)
            print()
            print(report(results, a.duration))
            if a.json:
                with open(a.json, "w") as f:
                    json.dump({"machine": machine, "results": results}, f, indent=1)
    except KeyboardInterrupt:
        failures.append("interrupted")
    finally:
        errors = lab.down()
        for e in errors:
            print("lab cleanup:", e)
        failures += errors
        sh("rm", "-rf", tmp, check=False)
    for f in failures:
        print("lab: FAILED:", f)
    if a.smoke and not failures:
        print("lab smoke: ok")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
