"""The twin's network: a TAP device in a network namespace the twin creates.

The namespace keeps the twin's link (default 10.0.0.0/24, the example design's subnet)
apart from the machine's own networks and from other twins; the host side of the link is
the TAP interface in it, with the host's address and MAC, so tools and the receiver run
there (``ip netns exec <ns> …``, or :func:`entered` for sockets opened in-process) and see
a NIC with the FPGA behind it. Creating it needs root (CAP_NET_ADMIN and /dev/net/tun);
:func:`privileged` says why not, and the twin falls back to a UDP tunnel or pcap file.

A namespace is named ``c4g-<pid>-<n>`` after the process that made it; one whose process
is gone (a twin killed before it could clean up) is deleted, with its TAP devices, by the
next twin's :meth:`Netns.create` (:func:`sweep`). The TAP devices are attached here, by
the privileged process, and handed to the unprivileged harness as descriptors
(:func:`open_tap`). Given a :class:`Switch` (a bridge in a namespace another process
keeps), the twin makes its TAP devices there as the bridge's ports instead.
"""

from __future__ import annotations

import ctypes
import fcntl
import ipaddress
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
DEFAULT_IFNAME = "c4g0"
PREFIX = "c4g"
NETNS_DIR = "/run/netns"  # where `ip netns` keeps its namespaces
# <linux/if_tun.h>
TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


class NetnsError(OSError):
    """A namespace or interface could not be made (the failing command and its output)."""


@dataclass(frozen=True)
class HostSide:
    """The host's end of the twin's link."""

    ip: str = "10.0.0.20/24"
    mac: str = "0c:42:a1:00:00:14"
    ifname: str = DEFAULT_IFNAME
    mtu: int = 9000

    @property
    def address(self) -> str:
        return str(ipaddress.ip_interface(self.ip).ip)


@dataclass(frozen=True)
class Switch:
    """A bridge that another process keeps (a LAN's switch, ``casper400g_dev/lan.py``),
    named by its network namespace and its name there: a twin given one puts its links on
    it as ports, TAP devices made in that namespace with no address, instead of a
    namespace of its own, so that the core's frames reach every host on the switch (its
    multicast by the switch's IGMP snooping) and the hosts' frames reach the core."""

    netns: str
    bridge: str

    @classmethod
    def parse(cls, text: str) -> Switch:
        """``NETNS:BRIDGE``."""
        netns, sep, bridge = text.partition(":")
        if not sep or not netns or not bridge:
            raise ValueError(f"switch {text!r}: expected NETNS:BRIDGE")
        return cls(netns, bridge)

    def check(self) -> None:
        """NetnsError unless the namespace exists and holds a bridge of that name."""
        if not os.path.exists(f"{NETNS_DIR}/{self.netns}"):
            raise NetnsError(f"switch: no network namespace {self.netns!r}")
        out = subprocess.run(
            ["ip", "-n", self.netns, "-d", "-o", "link", "show", "dev", self.bridge],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0 or " bridge " not in out.stdout:
            raise NetnsError(
                f"switch: no bridge {self.bridge!r} in network namespace {self.netns!r}"
            )

    def add_port(self, host: HostSide) -> None:
        """A persistent TAP device with the host side's MAC and MTU, as a port of the
        bridge (a port takes no address)."""
        ns = self.netns
        _run("ip", "-n", ns, "tuntap", "add", "dev", host.ifname, "mode", "tap")
        try:
            _run(
                "ip", "-n", ns, "link", "set", host.ifname,
                "address", host.mac, "mtu", str(host.mtu),
            )  # fmt: skip
            _run("ip", "-n", ns, "link", "set", host.ifname, "master", self.bridge)
            _run("ip", "-n", ns, "link", "set", host.ifname, "up")
        except NetnsError:
            self.delete_port(host.ifname)
            raise

    def has(self, ifname: str) -> bool:
        out = subprocess.run(
            ["ip", "-n", self.netns, "-o", "link", "show", "dev", ifname],
            capture_output=True,
            text=True,
            check=False,
        )
        return out.returncode == 0

    def delete_port(self, ifname: str) -> None:
        """Remove a port this twin made (the namespace outlives the twin)."""
        subprocess.run(
            ["ip", "-n", self.netns, "link", "delete", ifname], capture_output=True, check=False
        )


def privileged() -> str | None:
    """None when a namespace with a TAP device can be made here, else why not."""
    if os.geteuid() != 0:
        return "not running as root (a network namespace and a TAP device need CAP_NET_ADMIN)"
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun is missing (no TUN/TAP support)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    return None


def _run(*cmd: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise NetnsError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


class Netns:
    """A network namespace holding the host side of the twin's links (one TAP per block)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.swept: list[str] = []  # leftovers of killed twins deleted before this one
        _run("ip", "netns", "add", name)
        self._alive = True
        try:
            _run("ip", "-n", name, "link", "set", "lo", "up")
        except NetnsError:
            self.delete()
            raise

    @classmethod
    def create(cls, prefix: str = PREFIX) -> Netns:
        """A new namespace named ``<prefix>-<pid>-<n>`` (unique among this machine's
        twins), after deleting those a killed twin left (:func:`sweep`)."""
        swept = sweep(prefix)
        n = 0
        while True:
            name = f"{prefix}-{os.getpid()}-{n}"
            if not os.path.exists(f"{NETNS_DIR}/{name}"):
                ns = cls(name)
                ns.swept = swept
                return ns
            n += 1

    def add_tap(self, host: HostSide) -> None:
        """A persistent TAP device with the host's address and MAC; IPv6 off so the host
        sends the FPGA only what it is asked to (no router solicitations, no MLD)."""
        ns = self.name
        _run("ip", "-n", ns, "tuntap", "add", "dev", host.ifname, "mode", "tap")
        _run("ip", "-n", ns, "link", "set", host.ifname, "address", host.mac, "mtu", str(host.mtu))
        _run(
            "ip",
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            f"net.ipv6.conf.{host.ifname}.disable_ipv6=1",
        )
        _run("ip", "-n", ns, "addr", "add", host.ip, "dev", host.ifname)
        _run("ip", "-n", ns, "link", "set", host.ifname, "up")

    def add_tap_bare(self, host: HostSide) -> None:
        """A TAP device with a MAC but no address (a further block's link)."""
        ns = self.name
        _run("ip", "-n", ns, "tuntap", "add", "dev", host.ifname, "mode", "tap")
        _run("ip", "-n", ns, "link", "set", host.ifname, "address", host.mac, "mtu", str(host.mtu))
        _run("ip", "-n", ns, "link", "set", host.ifname, "up")

    def exec_argv(self, *argv: str) -> list[str]:
        """A command line that runs ``argv`` inside the namespace."""
        return ["ip", "netns", "exec", self.name, *argv]

    def run(self, *argv: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.exec_argv(*argv), capture_output=True, text=True, timeout=timeout, check=False
        )

    def delete(self) -> None:
        if self._alive:
            self._alive = False
            subprocess.run(["ip", "netns", "delete", self.name], capture_output=True, check=False)

    def __enter__(self) -> Netns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def sweep(prefix: str = PREFIX) -> list[str]:
    """Delete the namespaces ``<prefix>-<pid>-<n>`` whose process ``pid`` is gone (their
    TAP devices go with them); returns their names. A namespace of a running process,
    or of any other name, is left alone."""
    own = re.compile(re.escape(prefix) + r"-([0-9]{1,10})-[0-9]{1,6}")
    try:
        names = sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []
    swept = []
    for name in names:
        m = own.fullmatch(name)
        if m is None or process_alive(int(m.group(1))):
            continue
        _run("ip", "netns", "delete", name)
        swept.append(name)
    return swept


def open_tap(ns: str, ifname: str) -> int:
    """A descriptor attached to TAP device ``ifname`` of namespace ``ns`` (frames both
    ways, no packet information header), to hand to a process without the privilege."""
    if len(ifname.encode()) >= 16:
        raise NetnsError(f"interface name {ifname!r} is too long (15 bytes at most)")
    request = struct.pack("16sH22x", ifname.encode(), IFF_TAP | IFF_NO_PI)
    with entered(ns):
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            fcntl.ioctl(fd, TUNSETIFF, request)
        except OSError as exc:
            os.close(fd)
            raise NetnsError(f"cannot attach to TAP device {ifname!r} in {ns}: {exc}") from None
    return fd


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsError(err, f"setns: {os.strerror(err)}")


@contextmanager
def entered(name: str) -> Iterator[None]:
    """Run the block with this thread in namespace ``name``: sockets opened inside it
    (a receiver's ``Capture(UdpSource(…))``) stay there after the block; the thread returns
    to its own namespace at the end. Other threads are not affected."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/run/netns/{name}", os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)
