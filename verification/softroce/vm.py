"""The soft-RoCE test VM: QEMU (TCG) booting Debian's kernel with ``rdma_rxe`` on its NIC.

The host's root is shared read-only into the VM over virtio-9p, so the VM runs the host's
``ip``, ``rdma``, libibverbs (rxe provider) and whatever program the caller names, at
the same paths as on the host. The VM has its own empty ``/tmp`` and ``/run``, so the
checkout and the Python environment the caller runs from are shared explicitly as well
(read-only, each at its own path: :func:`host_shares`): a clone and its venv under
``/tmp`` are where the VM's commands look for them. An exchange folder (``xchg/`` of the
work folder) is shared read-write and mounted at ``/run/softroce`` in the VM: the
caller's commands write their results there.

The VM's only NIC (virtio-net, ``eth0``) is a QEMU ``dgram`` netdev over Unix datagram
sockets: every Ethernet frame is one datagram between the VM and this process, so the
host side sends and receives raw frames with no TAP device, no root and no host network
involved. In the VM, ``eth0`` gets :data:`VM_IP`, the peer's address gets a permanent
neighbour entry (no ARP needed), and ``rdma link add rxe0 type rxe netdev eth0`` makes
the RoCE device; the caller's commands run once its port is ACTIVE.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .image import REPO_ROOT, RUN_SCRIPT, VM_XCHG_DIR, VmImage

# Documentation addresses (RFC 5737): the link exists only between QEMU and this process.
VM_IP = "192.0.2.1"
PEER_IP = "192.0.2.2"
VM_MAC = "02:00:5e:00:02:01"
PEER_MAC = "02:00:5e:00:02:02"
RDMA_DEVICE = "rxe0"
NETDEV = "eth0"
NETDEV_MTU = 9000

QEMU = "qemu-system-x86_64"
MEMORY_MB = 512
# Files the script leaves in the exchange folder after the caller's commands.
COUNTERS_FILE = "hw_counters.txt"
STATISTIC_FILE = "rdma_statistic.txt"
DMESG_FILE = "dmesg.txt"
SNMP_FILE = "snmp.txt"
STATUS_FILE = "status"


class VmError(RuntimeError):
    """The VM did not boot, or did not do what was asked; the message has its console tail."""


def host_shares(extra: Sequence[Path] = ()) -> list[Path]:
    """The host folders the VM mounts at their own paths: the checkout, the running
    Python's virtual environment (wherever it is) and ``extra``; one inside another is
    seen through the outer one."""
    venv = [Path(sys.prefix)] if sys.prefix != sys.base_prefix else []
    found: list[Path] = []
    for p in (REPO_ROOT, *venv, *extra):
        p = Path(p).absolute()
        if p != Path("/") and p not in found:
            found.append(p)
    return sorted(p for p in found if not any(q != p and q in p.parents for q in found))


def share_tag(k: int) -> str:
    return f"share{k}"


def _mount_shares(shares: Sequence[Path]) -> str:
    lines = []
    for k, path in enumerate(shares):
        where = shlex.quote(str(path))
        lines.append(
            f"mkdir -p {where} && mount -t 9p -o trans=virtio,version=9p2000.L,ro,"
            f"cache=loose,msize=512000 {share_tag(k)} {where} "
            f'|| log "mounting {where} failed"'
        )
    return "\n".join(lines)


def run_script(
    commands: str,
    peer_ip: str = PEER_IP,
    peer_mac: str = PEER_MAC,
    shares: Sequence[Path] = (),
) -> str:
    """The script the VM's init runs in the host-root chroot (``sh``, from the xchg folder):
    ``shares`` mounted at their paths first (tags ``share0``, ``share1``, …)."""
    out = VM_XCHG_DIR
    return f"""set -u
log() {{ echo "softroce: $*"; }}
{_mount_shares(shares)}
ip link set lo up
# Jumbo frames, so that rxe's port MTU (the largest IB MTU that fits) is 4096.
ip link set {NETDEV} mtu {NETDEV_MTU} up
ip addr add {VM_IP}/24 dev {NETDEV}
ip neigh replace {peer_ip} lladdr {peer_mac} dev {NETDEV} nud permanent
rdma link add {RDMA_DEVICE} type rxe netdev {NETDEV} || log "rdma link add failed"
i=0
until rdma link show {RDMA_DEVICE}/1 2>/dev/null | grep -q 'state ACTIVE'; do
  i=$((i + 1)); [ $i -gt 100 ] && {{ log "{RDMA_DEVICE} not ACTIVE"; break; }}; sleep 0.1
done
rdma link show
log "ready after $(cut -d' ' -f1 /proc/uptime) s"
(
{commands}
)
echo $? > {out}/{STATUS_FILE}.tmp
counters=/sys/class/infiniband/{RDMA_DEVICE}/ports/1/hw_counters
for f in "$counters"/*; do echo "$(basename "$f") $(cat "$f")"; done > {out}/{COUNTERS_FILE}
rdma statistic show link {RDMA_DEVICE}/1 > {out}/{STATISTIC_FILE} 2>&1
dmesg > {out}/{DMESG_FILE}
cat /proc/net/snmp > {out}/{SNMP_FILE}
mv {out}/{STATUS_FILE}.tmp {out}/{STATUS_FILE}
log "done after $(cut -d' ' -f1 /proc/uptime) s"
"""


def qemu_available() -> bool:
    return shutil.which(QEMU) is not None


class SoftRoceVm:
    """One VM run: ``start()``, exchange frames and files, ``finish()`` (or ``with``).
    ``shares``: host folders mounted read-only at their paths (default
    :func:`host_shares`: the checkout and the running Python's environment)."""

    def __init__(
        self,
        image: VmImage,
        commands: str,
        peer_ip: str = PEER_IP,
        peer_mac: str = PEER_MAC,
        workdir: Path | None = None,
        shares: Sequence[Path] | None = None,
    ) -> None:
        self.image = image
        self.shares = host_shares() if shares is None else list(shares)
        # Unix socket paths must stay under ~100 bytes: a short folder in the temp dir.
        self._own_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="softroce-")) if workdir is None else workdir
        self.xchg = self.workdir / "xchg"
        self.xchg.mkdir(parents=True, exist_ok=True)
        self.serial_log = self.workdir / "serial.log"
        self._vm_sock = self.workdir / "vm.sock"
        self._host_sock = self.workdir / "host.sock"
        script = run_script(commands, peer_ip, peer_mac, self.shares)
        (self.xchg / RUN_SCRIPT).write_text(script)
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None

    def command_line(self) -> list[str]:
        dgram = (
            f"dgram,id=n0,local.type=unix,local.path={self._vm_sock},"
            f"remote.type=unix,remote.path={self._host_sock}"
        )
        shared = []
        for k, path in enumerate(self.shares):
            shared += [
                "-fsdev",
                # (QEMU's option syntax: a comma in a value is written twice)
                f"local,id={share_tag(k)},path={str(path).replace(',', ',,')},"
                "security_model=none,readonly=on,"
                "multidevs=remap",
                "-device",
                f"virtio-9p-pci,fsdev={share_tag(k)},mount_tag={share_tag(k)}",
            ]
        # -cpu max: the host's programs run in the VM as they are, and numpy's wheels (and
        # so the project's receiver) need more than the default qemu64 CPU's x86-64 v1.
        return [
            QEMU,
            "-machine", "pc,accel=tcg",
            "-cpu", "max",
            "-m", str(MEMORY_MB),
            "-smp", "1",
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-kernel", str(self.image.kernel),
            "-initrd", str(self.image.initramfs),
            "-append", "console=ttyS0 quiet panic=-1",
            "-serial", f"file:{self.serial_log}",
            "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
            "-fsdev", f"local,id=xchg,path={self.xchg},security_model=none",
            "-device", "virtio-9p-pci,fsdev=xchg,mount_tag=xchg",
            "-netdev", dgram,
            "-device", f"virtio-net-pci,netdev=n0,mac={VM_MAC}",
            *shared,
        ]  # fmt: skip

    def start(self) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(self._host_sock))
        # A full guest receive ring blocks the sender instead of dropping frames.
        self._sock.settimeout(30.0)
        self._proc = subprocess.Popen(
            self.command_line(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    def console_tail(self, lines: int = 40) -> str:
        try:
            text = self.serial_log.read_text(errors="replace")
        except FileNotFoundError:
            return "(no console output)"
        return "\n".join(text.splitlines()[-lines:])

    def _fail(self, what: str) -> VmError:
        qemu_out = ""
        if self._proc is not None and self._proc.poll() is not None and self._proc.stdout:
            qemu_out = self._proc.stdout.read().decode(errors="replace").strip()
        return VmError(
            f"{what}\n--- VM console (last lines) ---\n{self.console_tail()}"
            + (f"\n--- qemu ---\n{qemu_out}" if qemu_out else "")
        )

    def wait_for(self, name: str, timeout: float) -> Path:
        """The exchange file ``name`` once it exists; VmError if the VM stops or time runs out."""
        path = self.xchg / name
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self._proc is None or self._proc.poll() is not None:
                raise self._fail(f"the VM stopped before writing {name}")
            if time.monotonic() > deadline:
                raise self._fail(f"no {name} from the VM after {timeout:.0f} s")
            time.sleep(0.1)
        return path

    def wait_until(self, name: str, done: Callable[[str], bool], timeout: float) -> str:
        """Poll exchange file ``name`` until ``done(text)`` holds; returns its text."""
        deadline = time.monotonic() + timeout
        while True:
            path = self.xchg / name
            text = path.read_text() if path.exists() else ""
            if done(text):
                return text
            if self._proc is None or self._proc.poll() is not None:
                raise self._fail(f"the VM stopped while waiting on {name}")
            if time.monotonic() > deadline:
                raise self._fail(f"{name} incomplete after {timeout:.0f} s: {text!r}")
            time.sleep(0.05)

    def send(self, frame: bytes) -> None:
        """Hand one Ethernet frame (no FCS) to the VM's eth0."""
        if self._sock is None:
            raise VmError("the VM is not started")
        self._sock.sendto(frame, str(self._vm_sock))

    def received(self) -> list[bytes]:
        """Every frame the VM sent since the last call (non-blocking)."""
        if self._sock is None:
            return []
        frames = []
        self._sock.setblocking(False)
        try:
            while True:
                frames.append(self._sock.recv(65536))
        except BlockingIOError:
            pass
        finally:
            self._sock.settimeout(30.0)
        return frames

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for the VM to power off after the commands; returns their exit status."""
        if self._proc is None:
            raise VmError("the VM is not started")
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise self._fail(f"the VM did not power off within {timeout:.0f} s") from None
        status = self.xchg / STATUS_FILE
        if not status.exists():
            raise self._fail("the VM powered off without finishing its commands")
        return int(status.read_text().strip())

    def read(self, name: str) -> bytes:
        return (self.xchg / name).read_bytes()

    def counters(self) -> dict[str, int]:
        """rxe's port counters (``hw_counters``) as the VM left them."""
        out: dict[str, int] = {}
        for line in (self.xchg / COUNTERS_FILE).read_text().splitlines():
            name, _, value = line.partition(" ")
            out[name] = int(value)
        return out

    def snmp(self, protocol: str) -> dict[str, int]:
        """One protocol's counters from the VM's ``/proc/net/snmp`` (e.g. ``Udp``)."""
        rows = [
            line.split()[1:]
            for line in (self.xchg / SNMP_FILE).read_text().splitlines()
            if line.startswith(f"{protocol}:")
        ]
        if len(rows) != 2:
            raise VmError(f"no {protocol} counters in /proc/net/snmp")
        return {k: int(v) for k, v in zip(rows[0], rows[1], strict=True)}

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._proc is not None and self._proc.stdout:
            self._proc.stdout.close()
        if self._sock is not None:
            self._sock.close()
        if self._own_workdir and not os.environ.get("SOFTROCE_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> SoftRoceVm:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
