"""The booted lab's harness: Debian kernels from Debian's own packages, guests booted under QEMU.

One harness for every guest: a test names the kernel, the NICs, the vCPUs and NUMA nodes and what
runs inside; the harness fetches and unpacks the kernel package (cached by package file in the
build dir), packs an initramfs (busybox, the binaries asked for with the shared libraries they
load, the NIC drivers' modules in dependency order), boots it under qemu-system-x86_64 (TCG; KVM
where /dev/kvm exists) and brings back what the guest wrote on its results port.

Two serial ports: ttyS0 is the console (kept in a log for a failure's digest), ttyS1 the results
channel, which carries only what the guest's scenario writes there, framed as

    @@BEGIN <name>
    ...output...
    @@END <name> <exit code>

Networking is QEMU user networking with restrict=on: the guest reaches nothing but QEMU's own
gateway (10.0.2.2), never this machine's eth0, and this machine's IRQs are never touched.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

# What a guest needs on the host: QEMU, a static busybox to run the guest's scenario.
HOST_PACKAGES = ["qemu-system-x86", "busybox-static"]
BUSYBOX = "/bin/busybox"

# A guest's NIC models, QEMU device name -> the kernel module that drives it.
NIC_DRIVERS = {
    "virtio-net-pci": "virtio_net",
    "virtio-net-device": "virtio_net",  # virtio-mmio: microvm, arm64 virt
    "e1000e": "e1000e",
    "rtl8139": "8139too",
}
# Modules every guest loads before its NICs' (virtio's PCI transport).
BASE_MODULES = ["virtio_pci"]


class LabError(RuntimeError):
    pass


def run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


# ---------------------------------------------------------------------------------------------
# Kernels


@dataclass
class Kernel:
    package: str  # linux-image-6.1.0-57-amd64
    version: str  # 6.1.0-57-amd64 (the modules directory's name)
    root: Path  # the package(s) unpacked

    @property
    def vmlinuz(self) -> Path:
        # /boot/vmlinuz-VERSION up to Debian 12's kernels; /usr/lib/modules/VERSION/vmlinuz from
        # Debian 13's 6.12.117 on (and trixie-backports' 7.3).
        old = self.root / "boot" / f"vmlinuz-{self.version}"
        return old if old.exists() else self.root / "usr" / "lib" / "modules" / self.version / "vmlinuz"

    @property
    def modules(self) -> Path:
        old = self.root / "lib" / "modules" / self.version
        return old if old.exists() else self.root / "usr" / "lib" / "modules" / self.version

    def module_bytes(self, rel: str) -> bytes:
        """A module as insmod takes it: Debian 13's kernels ship them xz-compressed (.ko.xz), which
        busybox's insmod does not read; rel names the uncompressed .ko."""
        plain = self.modules / rel
        if plain.exists():
            return plain.read_bytes()
        return lzma.decompress((self.modules / (rel + ".xz")).read_bytes())

    def module_order(self, names: list[str]) -> list[str]:
        """The .ko files (relative to the modules dir, without .xz) to insmod for names, dependencies first.

        From each module's own .modinfo (depends=): the package ships no modules.dep (depmod
        makes it when the package is installed)."""
        by_name: dict[str, str] = {}
        for ko in self.modules.rglob("*.ko*"):
            if ko.name.endswith(".ko") or ko.name.endswith(".ko.xz"):
                rel = str(ko.relative_to(self.modules)).removesuffix(".xz")
                by_name[ko.name.split(".ko")[0].replace("-", "_")] = rel
        order: list[str] = []

        def visit(name: str) -> None:
            rel = by_name.get(name.replace("-", "_"))
            if rel is None:
                return  # built into this kernel
            if rel in order:
                return
            m = re.search(rb"(?:^|\0)depends=([^\0]*)", self.module_bytes(rel))
            for dep in (m.group(1).decode().split(",") if m else []):
                if dep:
                    visit(dep)
            order.append(rel)

        for n in names:
            visit(n)
        return order


# The suites a kernel can come from beside the host's own (bookworm): Debian 11's 5.10, Debian 13's
# 6.12 and trixie-backports' 7.3. Their package lists live in the cache, apart from the host's apt.
KERNEL_SUITES = {"bullseye": "deb http://deb.debian.org/debian bullseye main",
                 "trixie": "deb http://deb.debian.org/debian trixie main",
                 "trixie-backports": "deb http://deb.debian.org/debian trixie-backports main"}


def apt_for(suite: str | None, cache: Path) -> list[str]:
    """apt-get/apt-cache options that read suite's lists (fetched into the cache at most daily);
    [] for the host's own sources."""
    if suite is None:
        return []
    if suite not in KERNEL_SUITES:
        raise LabError(f"kernel suite {suite}: the lab knows {', '.join(KERNEL_SUITES)}")
    d = cache / f"apt-{suite}"
    (d / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (d / "sources.list").write_text(KERNEL_SUITES[suite] + "\n")
    opts = ["-o", f"Dir::Etc::SourceList={d / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={d / 'lists'}", "-o", f"Dir::Cache={d / 'cache'}"]
    stamp = d / "updated"
    if not stamp.exists() or time.time() - stamp.stat().st_mtime > 86400:
        run(["apt-get", *opts, "update", "-qq"])
        stamp.touch()
    return opts


def debian_kernel(meta_package: str, cache: Path, suite: str | None = None) -> Kernel:
    """Debian's kernel behind a metapackage (linux-image-amd64: Debian 12's 6.1; with suite, that
    suite's), unpacked once.

    The package file is fetched with the host's own apt sources (or suite's); it is the cache key
    (its name carries the version), so a new kernel upload is fetched anew and an old one reused.
    trixie-backports' 7.3 splits the image package into linux-binary-VERSION (the image) and
    linux-modules-VERSION: all three are unpacked together."""
    cache.mkdir(parents=True, exist_ok=True)
    apt = apt_for(suite, cache)
    dep = run(["apt-cache", *apt, "depends", meta_package]).stdout
    m = re.search(r"Depends: (linux-image-[0-9][^\s]*)", dep)
    if not m:
        raise LabError(f"{meta_package}: no linux-image package in apt-cache depends (run apt-get update?)")
    package = m.group(1)
    version = package.removeprefix("linux-image-")
    parts = [package] + re.findall(rf"Depends: (linux-(?:binary|modules)-{re.escape(version)})\b",
                                   run(["apt-cache", *apt, "depends", package]).stdout)
    root = cache / package
    k = Kernel(package, version, root)
    if not k.vmlinuz.exists():
        tmp = Path(tempfile.mkdtemp(dir=cache))
        for part in parts:
            debs = list(cache.glob(f"{part}_*.deb"))
            if not debs:
                run(["apt-get", *apt, "download", part], cwd=cache)
                debs = list(cache.glob(f"{part}_*.deb"))
            if not debs:
                raise LabError(f"apt-get download {part} left no package in {cache}")
            run(["dpkg-deb", "-x", str(debs[0]), str(tmp)])
        if root.exists():
            shutil.rmtree(root)
        tmp.rename(root)
    if not k.vmlinuz.exists():
        raise LabError(f"{package}: no vmlinuz under boot/ or usr/lib/modules/{version}/ in {', '.join(parts)}")
    return k


# ---------------------------------------------------------------------------------------------
# The initramfs (newc cpio, gzip), written here so that it is byte-for-byte the same for the
# same inputs and needs no root.


class Initramfs:
    def __init__(self) -> None:
        self.entries: dict[str, tuple[int, bytes]] = {}  # path -> (mode, data or link target)

    def dir(self, path: str) -> None:
        path = path.strip("/")
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p and p not in self.entries:
                self.entries[p] = (stat.S_IFDIR | 0o755, b"")

    def file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        path = path.strip("/")
        self.dir(os.path.dirname(path))
        self.entries[path] = (stat.S_IFREG | mode, data.encode() if isinstance(data, str) else data)

    def copy(self, host: Path | str, guest: str | None = None, mode: int | None = None) -> None:
        host = Path(host)
        st = host.stat()
        self.file(guest or str(host), host.read_bytes(), mode if mode is not None else (st.st_mode & 0o777))

    def symlink(self, path: str, target: str) -> None:
        path = path.strip("/")
        self.dir(os.path.dirname(path))
        self.entries[path] = (stat.S_IFLNK | 0o777, target.encode())

    def binary(self, host: Path | str, guest: str) -> None:
        """An executable and every shared library it loads (ldd), at the same paths as here."""
        self.copy(host, guest, 0o755)
        out = run(["ldd", str(host)]).stdout
        for line in out.splitlines():
            m = re.search(r"(/\S+)\s+\(0x", line)
            if not m:
                continue
            lib = Path(m.group(1))
            if str(lib).lstrip("/") in self.entries:
                continue
            real = lib.resolve()
            self.file(str(lib), real.read_bytes(), 0o755)

    def write(self, out: Path) -> str:
        """Writes the archive; returns its content hash."""
        buf = io.BytesIO()
        ino = 1
        for path in sorted(self.entries):
            mode, data = self.entries[path]
            self._entry(buf, path, mode, data, ino)
            ino += 1
        self._entry(buf, "TRAILER!!!", 0, b"", 0)
        raw = buf.getvalue()
        out.write_bytes(gzip.compress(raw, compresslevel=1, mtime=0))
        return hashlib.sha256(raw).hexdigest()

    @staticmethod
    def _entry(buf: io.BytesIO, name: str, mode: int, data: bytes, ino: int) -> None:
        nb = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1 if not stat.S_ISDIR(mode) else 2, 0, len(data), 0, 0, 0, 0, len(nb), 0]
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
        buf.write(hdr + nb)
        buf.write(b"\0" * ((4 - (len(hdr) + len(nb)) % 4) % 4))
        buf.write(data)
        buf.write(b"\0" * ((4 - len(data) % 4) % 4))


# The guest's PID 1: mounts, modules, the scenario (its output on the results port), power off.
INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mkdir -p /sys/fs/bpf /var/lib/rxtune && mount -t bpf bpf /sys/fs/bpf 2>/dev/null
# Each module with its parameters from the kernel command line (modname.param=value), as modprobe
# gives them (microvm's virtio-mmio devices come as virtio_mmio.device=SIZE@ADDR:IRQ).
for m in $(cat /etc/lab/modules); do
  n=$(basename "$m" .ko | tr - _)
  insmod /lib/modules/$m $(tr ' ' '\n' < /proc/cmdline | sed -n "s/^$n\.//p") || echo "lab: insmod $m failed"
done
ip link set lo up
# The results port: the second UART, or (microvm: one UART) the virtio-serial port "results".
R=/dev/ttyS1
if [ -e /etc/lab/results-virtio ]; then
  i=0; while ! ls /dev/vport*p1 >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  R=$(ls /dev/vport*p1 2>/dev/null | head -n 1)
  [ -n "$R" ] || { echo "lab: no virtio-serial results port: results on the console"; R=/dev/ttyS0; }
fi
sh /etc/lab/scenario.sh > "$R" 2>&1
echo "@@DONE" > "$R"
sync
# microvm cannot power off: it resets (reboot=t), and QEMU's -no-reboot ends it.
if [ -e /etc/lab/results-virtio ]; then reboot -f; fi
poweroff -f
"""

# Shell helpers every scenario has: `step NAME CMD...` frames a command's output and exit code.
SCENARIO_HEAD = r"""
# (The output is printed with one newline at its end: a command whose last line has none would
# otherwise swallow the end marker.)
step() { n=$1; shift; echo "@@BEGIN $n"; out=$("$@" 2>&1); rc=$?; [ -n "$out" ] && printf '%s\n' "$out"; echo "@@END $n $rc"; return $rc; }
# The interface a driver's device got (probe order names them eth0, eth1, ...).
dev_of() { for d in /sys/class/net/*; do [ "$(basename "$(readlink "$d/device/driver" 2>/dev/null)")" = "$1" ] && basename "$d"; done; }
"""


@dataclass
class Step:
    name: str
    rc: int
    out: str


@dataclass
class Boot:
    steps: dict[str, Step]
    done: bool  # the scenario ran to its end
    console: str
    seconds: float

    def __getitem__(self, name: str) -> Step:
        if name not in self.steps:
            raise KeyError(f"the guest reported no step {name!r}; it reported {sorted(self.steps)}")
        return self.steps[name]


def parse_results(text: str) -> tuple[dict[str, Step], bool]:
    steps: dict[str, Step] = {}
    cur: str | None = None
    lines: list[str] = []
    done = False
    for line in text.replace("\r", "").splitlines():
        end = re.search(r"@@END (\S+) (-?\d+)$", line)
        if line.startswith("@@BEGIN "):
            cur, lines = line[8:].strip(), []
        elif end and cur is not None and end.group(1) == cur:
            if line[:end.start()]:
                lines.append(line[:end.start()])
            steps[cur] = Step(cur, int(end.group(2)), "\n".join(lines))
            cur = None
        elif line.startswith("@@DONE"):
            done = True
        elif cur is not None:
            lines.append(line)
    return steps, done


def host_accel() -> str:
    """kvm where this host's KVM runs a stock guest: /dev/kvm usable and a hardware-virtualisation
    module loaded (kvm_intel, kvm_amd). /dev/kvm alone is not enough: a VM may offer it through
    kvm_pvm (pagetable-based virtualisation, no VMX), which boots only PVM-built guest kernels and
    left Debian's kernel hanging with an empty console. RXTUNE_VM_ACCEL=tcg|kvm overrides."""
    forced = os.environ.get("RXTUNE_VM_ACCEL")
    if forced in ("tcg", "kvm"):
        return forced
    hardware = any(Path("/sys/module", m).exists() for m in ("kvm_intel", "kvm_amd"))
    return "kvm" if hardware and os.access("/dev/kvm", os.R_OK | os.W_OK) else "tcg"


def machine_args(cpus: int, memory_mb: int, numa_nodes: int, nics: list[str], console: Path, results: Path,
                 hostfwd: list[str] | None = None, arch: str = "amd64", machine: str = "q35") -> list[str]:
    """QEMU's machine: q35 (amd64) or virt (arm64) under TCG (KVM where host_accel finds it and the
    guest is this host's architecture), the vCPUs split evenly over the NUMA nodes, the console and
    the results channel, and each NIC on a user network of its own. machine "microvm": QEMU's
    Firecracker-style amd64 machine (no PCI, no firmware; virtio-mmio devices described by ACPI),
    one UART, so results go through a virtio-serial port as on arm64."""
    if machine == "microvm":
        accel = host_accel()
        # ACPI describes the virtio-mmio devices (LNRO0005): Debian's kernels do not take them
        # from the command line (no VIRTIO_MMIO_CMDLINE_DEVICES). Under TCG the kernel finds no
        # reference to calibrate the TSC against (no HPET or PM timer, the PIT's gate absent) and
        # hung there: the guest's command line gives the TSC's rate and the delay loop (qemu_args).
        args = ["qemu-system-x86_64", "-machine", f"microvm,accel={accel},acpi=on,rtc=on",
                "-cpu", "max" if accel == "tcg" else "host",
                "-smp", str(cpus), "-m", str(memory_mb), "-nodefaults", "-display", "none", "-monitor", "none",
                "-serial", f"file:{console}", "-device", "virtio-serial-device,id=vs",
                "-chardev", f"file,id=results,path={results}", "-device", "virtserialport,bus=vs.0,chardev=results,name=results"]
    elif arch == "arm64":
        # virt with GICv3 (its ITS gives PCI devices MSI-X, as on a server); `max` with the
        # implementation-defined pointer-auth algorithm, which TCG runs far faster than QARMA.
        # virt has one UART (the console): results go through a virtio-serial port named
        # "results" (/dev/virtio-ports/results in the guest).
        args = ["qemu-system-aarch64", "-machine", "virt,gic-version=3", "-cpu", "max,pauth-impdef=on",
                "-smp", str(cpus), "-m", str(memory_mb), "-nodefaults", "-display", "none", "-monitor", "none",
                "-serial", f"file:{console}", "-device", "virtio-serial-pci,id=vs",
                "-chardev", f"file,id=results,path={results}", "-device", "virtserialport,bus=vs.0,chardev=results,name=results",
                "-device", "virtio-rng-pci"]
    else:
        accel = host_accel()
        args = ["qemu-system-x86_64", "-machine", f"q35,accel={accel}", "-cpu", "max" if accel == "tcg" else "host",
                "-smp", str(cpus), "-m", str(memory_mb), "-nodefaults", "-display", "none", "-monitor", "none",
                "-serial", f"file:{console}", "-serial", f"file:{results}"]
    if numa_nodes > 1:
        per_mem, per_cpu = memory_mb // numa_nodes, cpus // numa_nodes
        for n in range(numa_nodes):
            args += ["-object", f"memory-backend-ram,id=m{n},size={per_mem}M",
                     "-numa", f"node,nodeid={n},cpus={n * per_cpu}-{(n + 1) * per_cpu - 1},memdev=m{n}"]
    for i, model in enumerate(nics):
        # restrict=on: the guest reaches nothing but QEMU's gateway; distinct MACs so that the
        # guest's devices are told apart; the first NIC carries the forwards from this host's loopback.
        fwd = "".join(f",hostfwd={f}" for f in (hostfwd or [])) if i == 0 else ""
        args += ["-netdev", f"user,id=n{i},restrict=on{fwd}", "-device", f"{model},netdev=n{i},mac=52:54:00:12:34:{0x10 + i:02x}"]
    return args


# microvm's guests: reset to end (no ACPI power-off there; QEMU's -no-reboot ends the run), and
# under TCG the TSC's rate and the delay loop given, since nothing calibrates them (machine_args).
MICROVM_CMDLINE = " reboot=t tsc_early_khz=2000000 lpj=4000000"


@dataclass
class Guest:
    kernel: Kernel
    nics: list[str] = field(default_factory=lambda: ["virtio-net-pci"])
    cpus: int = 4
    numa_nodes: int = 2
    memory_mb: int = 1024
    binaries: dict[str, Path] = field(default_factory=dict)  # guest path -> host file
    files: dict[str, str] = field(default_factory=dict)  # guest path -> text
    extra_modules: list[str] = field(default_factory=list)
    machine: str = "q35"  # or "microvm" (virtio-mmio devices only: NICs "virtio-net-device")
    hostfwd: list[str] = field(default_factory=list)  # QEMU hostfwd rules on the first NIC ("udp:127.0.0.1:P-:9000")

    def initramfs(self, scenario: str, out: Path) -> str:
        fs = Initramfs()
        for d in ["proc", "sys", "dev", "tmp", "run", "etc/lab", "var/lib", "root"]:
            fs.dir(d)
        fs.copy(BUSYBOX, "bin/busybox", 0o755)
        fs.file("init", INIT, 0o755)
        fs.file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
        fs.file("etc/group", "root:x:0:\n")
        base = ["virtio_mmio", "virtio_console"] if self.machine == "microvm" else BASE_MODULES
        if self.machine == "microvm":
            fs.file("etc/lab/results-virtio", "")
        mods = self.kernel.module_order(base + [NIC_DRIVERS[n] for n in self.nics] + self.extra_modules)
        for m in mods:
            fs.file(f"lib/modules/{m}", self.kernel.module_bytes(m), 0o644)
        fs.file("etc/lab/modules", "\n".join(mods) + "\n")
        for guest, host in self.binaries.items():
            fs.binary(host, guest)
        for guest, text in self.files.items():
            fs.file(guest, text)
        fs.file("etc/lab/scenario.sh", SCENARIO_HEAD + scenario, 0o755)
        return fs.write(out)

    def qemu_args(self, initrd: Path, console: Path, results: Path) -> list[str]:
        return machine_args(self.cpus, self.memory_mb, self.numa_nodes, self.nics, console, results, hostfwd=self.hostfwd,
                            machine=self.machine) + [
            "-no-reboot", "-kernel", str(self.kernel.vmlinuz), "-initrd", str(initrd),
            "-append", "console=ttyS0 loglevel=4 panic=-1 rdinit=/init" + (MICROVM_CMDLINE if self.machine == "microvm" else "")]

    def boot(self, scenario: str, workdir: Path, timeout: float = 240) -> Boot:
        workdir.mkdir(parents=True, exist_ok=True)
        initrd, console, results = workdir / "initrd.gz", workdir / "console.log", workdir / "results.log"
        for p in (console, results):
            p.unlink(missing_ok=True)
        self.initramfs(scenario, initrd)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(self.qemu_args(initrd, console, results), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LabError(f"guest did not power off within {timeout:.0f} s; console:\n{tail(console)}")
        seconds = time.monotonic() - t0
        if proc.returncode != 0:
            raise LabError(f"qemu exited {proc.returncode}: {proc.stderr.strip()}\nconsole:\n{tail(console)}")
        text = results.read_text(errors="replace") if results.exists() else ""
        steps, done = parse_results(text)
        return Boot(steps, done, console.read_text(errors="replace") if console.exists() else "", seconds)


def tail(p: Path, n: int = 40) -> str:
    if not p.exists():
        return "(none)"
    return "\n".join(p.read_text(errors="replace").splitlines()[-n:])


# ---------------------------------------------------------------------------------------------
# System guests: a Debian 12 root filesystem with systemd as PID 1, booted from its own disk.

# What every system guest has besides rxtune's own dependencies: systemd and udev, the network
# tools a user has, irqbalance as Debian ships it, curl to scrape /metrics from inside.
SYSTEM_PACKAGES = ["systemd-sysv", "udev", "kmod", "iproute2", "ethtool", "irqbalance", "procps", "curl",
                   "ca-certificates", "libcap2-bin", "e2fsprogs", "iputils-arping"]
# The kernels: Debian 12's own (the metapackage's version in bookworm, with its security updates)
# and the LTS one in bookworm-backports.
BACKPORTS = "deb http://deb.debian.org/debian bookworm-backports main"
# Bump when the recipe below changes what an image holds (the cache key covers the rest).
IMAGE_RECIPE = 4

# PID 1 is systemd; this unit runs the scenario once the system is up: /dev/vdb is the run's own
# disk (the package to install, the scenario, its files), results go to ttyS1.
LAB_UNIT = """[Unit]
Description=rxtune lab: the scenario of the run (/dev/vdb), results on ttyS1
After=multi-user.target network-online.target irqbalance.service
Wants=network-online.target

[Service]
Type=oneshot
ExecStartPre=/bin/mkdir -p /lab
ExecStartPre=/bin/mount -o ro /dev/vdb /lab
ExecStart=/bin/sh /lab/boot.sh
StandardOutput=journal
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
"""

NETWORK = """[Match]
Name=en* eth*

[Network]
DHCP=ipv4

[Link]
RequiredForOnline=no
"""


# The modules a lab guest's initramfs needs to mount its root (MODULES=list: foreign images).
INITRAMFS_HOOK = """#!/bin/sh
case "$1" in prereqs) exit 0;; esac
. /usr/share/initramfs-tools/hook-functions
manual_add_modules virtio_pci virtio_mmio virtio_blk ext4
"""


def sources() -> list[str]:
    out = []
    for f in ["/etc/apt/sources.list"] + sorted(str(p) for p in Path("/etc/apt/sources.list.d").glob("*")):
        if (f.endswith(".list") or f.endswith(".sources")) and os.path.isfile(f) and os.path.getsize(f) > 0:
            out.append(f)
    if not out:
        raise LabError("no apt sources configured on this host")
    return out


@dataclass
class SystemImage:
    image: Path  # raw ext4, the root filesystem (booted with -snapshot: never written)
    kernels: dict[str, tuple[Path, Path]]  # "6.1.0-57-amd64" -> (vmlinuz, initrd)

    def kernel(self, series: str) -> str:
        """The installed kernel version of a series ("6.1", "6.12")."""
        for v in sorted(self.kernels):
            if v.startswith(series + ".") or v.startswith(series + "-"):
                return v
        raise LabError(f"no {series} kernel in the image (has {sorted(self.kernels)})")


def deb_depends(deb: Path) -> list[str]:
    """The package names a .deb depends on (alternatives: the first)."""
    dep = run(["dpkg-deb", "-f", str(deb), "Depends"]).stdout
    names = []
    for part in dep.split(","):
        name = re.sub(r"\(.*?\)", "", part.split("|")[0]).strip()
        if name:
            names.append(name)
    return sorted(set(names))


# binfmt_misc entries for a foreign root's maintainer scripts (qemu-user, Debian's qemu-user-static).
BINFMT = {
    "arm64": ("qemu-aarch64", "/usr/bin/qemu-aarch64-static",
              r"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00",
              r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"),
}
BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")


def host_arch() -> str:
    return run(["dpkg", "--print-architecture"]).stdout.strip()


@contextmanager
def foreign_binfmt(arch: str):
    """While a root of `arch` is built: its programs run through qemu-user, which the kernel starts
    by binfmt_misc (mmdebstrap runs the packages' maintainer scripts in the root).

    binfmt_misc is host-global and this host has it unmounted: it is mounted and the one entry
    registered (flag F: the interpreter is opened now, so the root needs no copy of it) for the
    build only; then the entry is removed and binfmt_misc unmounted, as far as they were not there
    before, and that they are as they were is checked."""
    if arch == host_arch():
        yield
        return
    if arch not in BINFMT:
        raise LabError(f"no binfmt_misc entry for {arch} (the lab knows {sorted(BINFMT)})")
    name, interpreter, magic, mask = BINFMT[arch]
    if not os.access(interpreter, os.X_OK):
        raise LabError(f"{interpreter} is missing (apt-get install qemu-user-static)")
    entry = BINFMT_DIR / name
    was_mounted = os.path.ismount(BINFMT_DIR)
    if not was_mounted:
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT_DIR)])
    was_registered = entry.exists()
    try:
        if not was_registered:
            (BINFMT_DIR / "register").write_text(f":{name}:M::{magic}:{mask}:{interpreter}:F")
        yield
    finally:
        if not was_registered and entry.exists():
            entry.write_text("-1")
        if not was_mounted:
            run(["umount", str(BINFMT_DIR)])
        if os.path.ismount(BINFMT_DIR) != was_mounted or (was_mounted and entry.exists() != was_registered):
            raise LabError(f"binfmt_misc was not restored: mounted {os.path.ismount(BINFMT_DIR)} (was {was_mounted})")


# Debian 13's system images: trixie itself and the backports that bring 7.3.
TRIXIE_SOURCES = [KERNEL_SUITES["trixie"], KERNEL_SUITES["trixie-backports"]]


def system_image(cache: Path, packages: list[str], kernels: tuple[str, ...] = ("6.1", "6.12"),
                 arch: str = "amd64", suite: str = "bookworm") -> SystemImage:
    """A Debian 12 system (suite trixie: Debian 13, amd64 only) of `arch` (amd64, arm64) with
    `packages` and the kernels of `kernels` (Debian 12: "6.1" its own, "6.12" bookworm-backports';
    Debian 13: "6.12" its own, "7.3" trixie-backports'), as a raw ext4 image; built once per
    content (suite, architecture, packages, kernel packages, recipe) and kept in cache."""
    include = sorted(set(SYSTEM_PACKAGES + packages))
    if suite == "trixie":
        if arch != "amd64":
            raise LabError("a Debian 13 image is amd64 only here")
        # The kernel packages name dracut first among their initramfs tools: Debian's default is
        # initramfs-tools, as on the systems users install.
        include.append("initramfs-tools")
        for series in kernels:
            if series == "6.12":
                k = re.search(r"Depends: (linux-image-[0-9][^\s]*)",
                              run(["apt-cache", *apt_for("trixie", cache), "depends", "linux-image-amd64"]).stdout)
                if not k:
                    raise LabError("trixie's linux-image-amd64: no kernel package in apt-cache depends")
                include.append(k.group(1))
            elif series == "7.3":
                include.append("linux-image-amd64/trixie-backports")
            else:
                raise LabError(f"kernel {series}: the Debian 13 lab has trixie's 6.12 and trixie-backports' 7.3")
    elif suite != "bookworm":
        raise LabError(f"suite {suite}: the lab builds bookworm and trixie systems")
    for series in kernels if suite == "bookworm" else ():
        if series == "6.1":
            # The amd64 metapackage names the ABI (linux-image-6.1.0-57-amd64); the arm64 package of
            # the same upload has the same ABI (this host has no arm64 package lists to ask).
            k61 = re.search(r"Depends: (linux-image-[0-9][^\s]*)", run(["apt-cache", "depends", "linux-image-amd64"]).stdout)
            if not k61:
                raise LabError("linux-image-amd64: no kernel package in apt-cache depends (run apt-get update?)")
            include.append(k61.group(1).removesuffix("-amd64") + f"-{arch}")
        elif series == "6.12":
            include.append(f"linux-image-{arch}/bookworm-backports")
        else:
            raise LabError(f"kernel {series}: the lab has Debian 12's 6.1 and bookworm-backports' 6.12")
    # A foreign root's initramfs is made under qemu-user, where Debian's MODULES=most (a fork per
    # module, twice: at the kernel's install and at initramfs-tools' trigger) took 40 minutes: it
    # gets only what the lab's guest boots from (virtio, ext4), added by a hook of its own.
    essential = [] if arch == host_arch() else [
        'mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/initramfs-tools/hooks"',
        'echo MODULES=list > "$1/etc/initramfs-tools/conf.d/lab"',
        f"printf '%s' '{INITRAMFS_HOOK}' > \"$1/etc/initramfs-tools/hooks/lab\"",
        'chmod 755 "$1/etc/initramfs-tools/hooks/lab"',
    ]
    # (amd64's key is what it was before arm64 images existed: its cached image stays valid.)
    what = (IMAGE_RECIPE, include, LAB_UNIT, NETWORK) + ((arch, essential) if arch != "amd64" else ()) + \
        ((suite,) if suite != "bookworm" else ())
    key = hashlib.sha256(repr(what).encode()).hexdigest()[:16]
    d = cache / (f"system-{key}" if arch == "amd64" else f"system-{arch}-{key}") if suite == "bookworm" else \
        cache / f"system-{suite}-{key}"
    meta = d / "kernels.txt"
    if not meta.exists():
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        root = d / "root"
        hooks = [
            'echo lab > "$1/etc/hostname"',
            'echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$1/etc/fstab"',
            f"printf '%s' '{NETWORK}' > \"$1/etc/systemd/network/lab.network\"",
            f"printf '%s' '{LAB_UNIT}' > \"$1/etc/systemd/system/rxtune-lab.service\"",
            'systemctl --root="$1" enable systemd-networkd.service rxtune-lab.service',
            # What slows a boot under TCG and has nothing to do with the test.
            'systemctl --root="$1" mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer '
            'man-db.timer dpkg-db-backup.timer systemd-networkd-wait-online.service',
            'rm -rf "$1"/var/cache/apt/archives/*.deb',
        ]
        cmd = ["mmdebstrap", "--quiet", "--variant=minbase", "--format=directory", f"--architectures={arch}",
               "--include=" + ",".join(include)]
        for h in essential:
            cmd.append("--essential-hook=" + h)
        for h in hooks:
            cmd.append("--customize-hook=" + h)
        cmd += ["bookworm", str(root)] + sources() + [BACKPORTS] if suite == "bookworm" else [suite, str(root)] + TRIXIE_SOURCES
        t0 = time.monotonic()
        with foreign_binfmt(arch):
            subprocess.run(cmd, check=True)
        boot = d / "boot"
        boot.mkdir()
        lines = []
        # /boot/vmlinuz-VERSION up to Debian 12's kernels; /usr/lib/modules/VERSION/vmlinuz from
        # Debian 13's 6.12.117 on (the initrd stays in /boot, initramfs-tools writes it there).
        images = {p.name.removeprefix("vmlinuz-"): p for p in (root / "boot").glob("vmlinuz-*")}
        for p in (root / "usr" / "lib" / "modules").glob("*/vmlinuz"):
            images.setdefault(p.parent.name, p)
        for v, vmlinuz in sorted(images.items()):
            initrd = root / "boot" / f"initrd.img-{v}"
            if not initrd.exists():
                raise LabError(f"kernel {v} has no initrd in the image")
            shutil.copy(vmlinuz, boot / f"vmlinuz-{v}")
            shutil.copy(initrd, boot / initrd.name)
            lines.append(v)
        size_mb = int(run(["du", "-sm", str(root)]).stdout.split()[0]) + 768
        run(["mkfs.ext4", "-q", "-L", "labroot", "-d", str(root), "-F", str(d / "image.raw"), f"{size_mb}M"])
        shutil.rmtree(root)
        meta.write_text("\n".join(lines) + "\n")
        print(f"  system image built in {time.monotonic() - t0:.0f} s: {d}")
    kernels = {}
    for v in meta.read_text().split():
        kernels[v] = (d / "boot" / f"vmlinuz-{v}", d / "boot" / f"initrd.img-{v}")
    return SystemImage(d / "image.raw", kernels)


def lab_disk(files: dict[str, Path | str], out: Path) -> None:
    """The run's own disk (/dev/vdb in the guest): files by name, text or a host file."""
    with tempfile.TemporaryDirectory() as t:
        for name, src in files.items():
            dst = Path(t) / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(src, Path):
                shutil.copy(src, dst)
            else:
                dst.write_text(src)
        run(["mkfs.ext4", "-q", "-L", "lab", "-d", t, "-F", str(out), "64M"])


# The run's first script: where results go. amd64: the second UART; arm64 (virt has one UART):
# the virtio-serial port "results", once udev has made its link.
BOOT_SH = {
    "amd64": "exec sh /lab/run.sh > /dev/ttyS1 2>&1\n",
    "arm64": "modprobe virtio_console 2>/dev/null\n"
             "i=0; while [ ! -e /dev/virtio-ports/results ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done\n"
             "exec sh /lab/run.sh > /dev/virtio-ports/results 2>&1\n",
}


@dataclass
class SystemGuest:
    image: SystemImage
    kernel: str  # a version from image.kernels
    nics: list[str] = field(default_factory=lambda: ["virtio-net-pci"])
    cpus: int = 4
    numa_nodes: int = 2
    memory_mb: int = 1536
    hostfwd: list[str] = field(default_factory=list)  # "udp:127.0.0.1:5555-:5555" on the first NIC
    arch: str = "amd64"  # the image's
    dtb: Path | None = None  # a device tree of the run's own (arm64): see dumpdtb()

    def args(self, console: Path, results: Path, disk: Path) -> list[str]:
        vmlinuz, initrd = self.image.kernels[self.kernel]
        tty = "ttyAMA0" if self.arch == "arm64" else "ttyS0"
        return machine_args(self.cpus, self.memory_mb, self.numa_nodes, self.nics, console, results, self.hostfwd, self.arch) + [
            "-snapshot", "-kernel", str(vmlinuz), "-initrd", str(initrd),
            "-append", f"root=/dev/vda rw console={tty} loglevel=4 systemd.show_status=false net.ifnames=0 panic=-1",
            "-drive", f"file={self.image.image},format=raw,if=virtio",
            "-drive", f"file={disk},format=raw,if=virtio,readonly=on"] + (["-dtb", str(self.dtb)] if self.dtb else [])

    def dumpdtb(self, out: Path, workdir: Path) -> str:
        """The device tree QEMU gives this guest (arm64), as source: to be changed and passed back
        with `dtb` (QEMU still fills in /chosen and the memory on boot)."""
        workdir.mkdir(parents=True, exist_ok=True)
        disk = workdir / "lab.img"
        lab_disk({}, disk)
        args = self.args(workdir / "console.log", workdir / "results.log", disk)
        m = args.index("-machine")
        args[m + 1] += f",dumpdtb={out}"
        args = [a for i, a in enumerate(args) if a != "-dtb" and (i == 0 or args[i - 1] != "-dtb")]
        run(args)
        return run(["dtc", "-q", "-I", "dtb", "-O", "dts", str(out)]).stdout

    def boot(self, scenario: str, files: dict[str, Path | str], workdir: Path, timeout: float = 900) -> Boot:
        """Boots the image (-snapshot: the image is never written; a reboot inside the guest keeps
        its changes, poweroff ends the run) and runs `scenario` from the run's disk."""
        workdir.mkdir(parents=True, exist_ok=True)
        console, results, disk = workdir / "console.log", workdir / "results.log", workdir / "lab.img"
        for p in (console, results):
            p.unlink(missing_ok=True)
        # boot.sh, not the image's unit, says where the results go: the image stays as it is.
        lab_disk({"boot.sh": BOOT_SH[self.arch], "run.sh": SCENARIO_HEAD + scenario, **files}, disk)
        args = self.args(console, results, disk)
        t0 = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise LabError(f"guest did not power off within {timeout:.0f} s; console:\n{tail(console)}\nresults:\n{tail(results)}")
        if proc.returncode != 0:
            raise LabError(f"qemu exited {proc.returncode}: {err.strip()}\nconsole:\n{tail(console)}")
        text = results.read_text(errors="replace") if results.exists() else ""
        steps, done = parse_results(text)
        return Boot(steps, done, console.read_text(errors="replace") if console.exists() else "", time.monotonic() - t0)


# ---------------------------------------------------------------------------------------------
# Checks: every check's result is printed, and the run closes with one "N passed, N failed" line.


# The kernel guests' series -> (metapackage, suite whose lists have it; None: the host's own apt
# sources, Debian 12).
DEBIAN_KERNELS = {"5.10": ("linux-image-amd64", "bullseye"), "6.1": ("linux-image-amd64", None),
                  "6.12": ("linux-image-amd64", "trixie"), "7.3": ("linux-image-amd64", "trixie-backports")}


def series_kernel(series: str, cache: Path) -> Kernel:
    """The Debian kernel of a series ("6.1"), fetched into the cache."""
    meta, suite = DEBIAN_KERNELS[series]
    return debian_kernel(meta, cache, suite)


def run_kernels(args: list[str], one, default: str = "6.1") -> int:
    """A kernel guest script's main: --kernels A,B (default `default`), then BUILD_DIR; one(build,
    series, checks) for each series, checks prefixed with it; the closing "N passed, N failed"."""
    args = list(args)
    series = default.split(",")
    if "--kernels" in args:
        i = args.index("--kernels")
        series = args[i + 1].split(",")
        del args[i:i + 2]
    unknown = [k for k in series if k not in DEBIAN_KERNELS]
    if unknown:
        raise SystemExit(f"--kernels: unknown series {', '.join(unknown)} (the lab has {', '.join(DEBIAN_KERNELS)})")
    build = Path(args[0] if args else "build").resolve()
    c = Checks()
    for k in series:
        c.prefix = f"{k}: "
        try:
            one(build, k, c)
        except LabError as ex:
            c.check("the guest booted and ran", False, str(ex))
    return c.close()


class Checks:
    def __init__(self, prefix: str = "") -> None:
        self.passed = 0
        self.failed = 0
        self.prefix = prefix

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"  ok    {self.prefix}{name}")
        else:
            self.failed += 1
            print(f"  FAIL  {self.prefix}{name}" + (f"\n        {detail}".replace("\n", "\n        ") if detail else ""))
        return ok

    def close(self) -> int:
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 and self.passed > 0 else 1


def tail_text(text: str, n: int = 40) -> str:
    return "\n".join(text.splitlines()[-n:])
