"""Hosts on a switch, on one machine: network namespaces joined by a Linux bridge with
IGMP snooping, as the hosts of an array sit behind a data switch.

The switch is a namespace holding the bridge ``br0`` (multicast snooping on, the bridge
its own IGMP querier, and no flooding of multicast that no port asked for: what the
switch settings in docs/design/scaleout.md ask of a real switch). Each host is a
namespace with one veth ``eth0`` on the switch, an address of the LAN's subnet and a
route for multicast through it. A twin's TAP device can be put on the switch too
(``Network(switch=Switch(lan.switch.name, BRIDGE))`` makes it there, :meth:`Lan.attach`
gives it the switch's port settings; twin_spread.py). Needs root, as the twin's
namespaces do (:func:`netns.privileged`).

``WireCount`` counts the UDP datagrams that reach a host's interface (an AF_PACKET
socket, before the host's IP layer filters anything), per destination address and port:
what the switch forwarded to that host, whatever its sockets do with it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from casper400g_dev.checkout import ROOT
from casper400g_dev.twin.netns import Netns, NetnsError, entered, privileged

BRIDGE = "br0"
HOST_IFNAME = "eth0"
QUERY_RESPONSE_S = 1.0  # the bridge's mcast_query_response_interval (100 centiseconds)


def missing() -> str | None:
    """None when a LAN can be built here, else why not."""
    why = privileged()
    if why is not None:
        return why
    if shutil.which("bridge") is None:
        return "the `bridge` command (iproute2) is not installed"
    return None


def _no_ipv6(ns: Netns) -> None:
    """IPv6 off, so that no MLD or router solicitation crosses the LAN unasked."""
    for scope in ("all", "default"):
        _run(*ns.exec_argv("sysctl", "-qw", f"net.ipv6.conf.{scope}.disable_ipv6=1"))


def _run(*cmd: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise NetnsError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


@dataclass(frozen=True)
class LanConfig:
    """The LAN's subnet (the switch takes no address; hosts get .1, .2, … in order), its
    MTU, and the switch's multicast settings."""

    subnet: str = "10.88.0.0/24"
    mtu: int = 9000
    snooping: bool = True
    querier: bool = True
    flood_unregistered: bool = False  # multicast of groups no port joined

    def __post_init__(self) -> None:
        net = ipaddress.IPv4Network(self.subnet)
        if net.num_addresses < 4:
            raise ValueError(f"subnet {self.subnet!r} has no room for hosts")
        if not 1280 <= self.mtu <= 65535:
            raise ValueError(f"mtu must be 1280..65535, got {self.mtu!r}")


@dataclass
class Host:
    """One host of the LAN: its namespace, its interface on the switch and its address."""

    name: str
    netns: Netns
    port: str  # the switch's port (bridge member) for this host
    ip: str
    mac: str
    ifname: str = HOST_IFNAME

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """This thread in the host's namespace for the block (sockets opened stay there)."""
        with entered(self.netns.name):
            yield

    def argv(self, *argv: str) -> list[str]:
        """A command line that runs ``argv`` on this host."""
        return self.netns.exec_argv(*argv)

    def popen(self, *argv: str, **kw: object) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(*argv), text=True, **kw)  # type: ignore[call-overload]

    def counters(self) -> dict[str, int]:
        """The interface's kernel counters (rx_packets, rx_bytes, multicast, …)."""
        out = self.netns.run("ip", "-j", "-s", "link", "show", self.ifname)
        if out.returncode != 0:
            raise NetnsError(f"cannot read {self.ifname} of {self.name}: {out.stderr.strip()}")
        stats = json.loads(out.stdout)[0]["stats64"]
        return {f"{way}_{k}": int(v) for way in ("rx", "tx") for k, v in stats[way].items()}


class Lan:
    """A switch namespace with a snooping bridge, and hosts added with :meth:`add_host`."""

    def __init__(self, config: LanConfig | None = None, prefix: str = "c4glan") -> None:
        self.config = config or LanConfig()
        self.prefix = prefix
        self.hosts: dict[str, Host] = {}
        self._addresses = ipaddress.IPv4Network(self.config.subnet).hosts()
        self.switch = Netns.create(f"{prefix}sw")
        try:
            c = self.config
            _no_ipv6(self.switch)
            _run(
                "ip", "-n", self.switch.name, "link", "add", BRIDGE, "type", "bridge",
                "mcast_snooping", str(int(c.snooping)),
                # Answers within a second, so joins and leaves show quickly.
                "mcast_query_response_interval", "100", "mcast_startup_query_interval", "100",
            )  # fmt: skip
            _run("ip", "-n", self.switch.name, "link", "set", BRIDGE, "mtu", str(c.mtu), "up")
            if c.querier:
                # Made querier once up: set while the bridge is down, its own queries never
                # start and the bridge, seeing no querier, floods every group.
                _run(
                    "ip", "-n", self.switch.name, "link", "set", BRIDGE, "type", "bridge",
                    "mcast_querier", "1",
                )  # fmt: skip
            # The bridge trusts its table once a query response interval has passed.
            self._ready_at = time.monotonic() + QUERY_RESPONSE_S + 0.5
        except BaseException:
            self.close()
            raise

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.config.subnet)

    def add_host(self, name: str) -> Host:
        """A new host namespace on the switch, with the LAN's next address."""
        if name in self.hosts:
            raise ValueError(f"host {name!r} is already on the LAN")
        port = f"p{len(self.hosts)}"
        ns = Netns.create(f"{self.prefix}-{name}")
        try:
            _no_ipv6(ns)
            sw = self.switch.name
            _run(
                "ip", "-n", sw, "link", "add", port, "mtu", str(self.config.mtu), "type",
                "veth", "peer", "name", HOST_IFNAME, "netns", ns.name,
            )  # fmt: skip
            self.attach(port)
            ip = str(next(self._addresses))
            prefix_len = self.network.prefixlen
            _run("ip", "-n", ns.name, "link", "set", HOST_IFNAME, "mtu", str(self.config.mtu))
            _run("ip", "-n", ns.name, "addr", "add", f"{ip}/{prefix_len}", "dev", HOST_IFNAME)
            _run("ip", "-n", ns.name, "link", "set", HOST_IFNAME, "up")
            _run("ip", "-n", ns.name, "route", "add", "224.0.0.0/4", "dev", HOST_IFNAME)
            mac = _run("ip", "-n", ns.name, "-j", "link", "show", HOST_IFNAME)
            host = Host(name, ns, port, ip, json.loads(mac)[0]["address"])
        except BaseException:
            ns.delete()
            raise
        self.hosts[name] = host
        return host

    def reserve_address(self) -> str:
        """The LAN's next address, for what is on the switch but is no host namespace (a
        twin's core behind its TAP port)."""
        return str(next(self._addresses))

    def attach(self, ifname: str) -> None:
        """Make ``ifname`` (an interface in the switch's namespace: a new veth end, or a
        twin's TAP device created there) a port of the switch."""
        sw = self.switch.name
        _run("ip", "-n", sw, "link", "set", ifname, "master", BRIDGE)
        if not self.config.flood_unregistered:
            _run("bridge", "-n", sw, "link", "set", "dev", ifname, "mcast_flood", "off")
        _run("ip", "-n", sw, "link", "set", ifname, "up")

    def memberships(self) -> dict[str, set[str]]:
        """The switch's snooping table: which groups each host's port forwards."""
        out = _run("bridge", "-n", self.switch.name, "-j", "mdb", "show")
        by_port = {h.port: name for name, h in self.hosts.items()}
        seen: dict[str, set[str]] = {name: set() for name in self.hosts}
        for bridge in json.loads(out or "[]"):
            for entry in bridge.get("mdb", []):
                host = by_port.get(entry.get("port", ""))
                if host is not None:
                    seen[host].add(entry["grp"])
        return seen

    def wait_memberships(self, expected: Mapping[str, set[str]], timeout: float = 30.0) -> None:
        """Wait until the switch forwards exactly ``expected`` groups to those hosts."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.memberships()
            settled = time.monotonic() >= self._ready_at
            if settled and all(got.get(h, set()) == set(g) for h, g in expected.items()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"switch memberships {got}, expected {dict(expected)}")
            time.sleep(0.1)

    def close(self) -> None:
        for host in self.hosts.values():
            host.netns.delete()
        self.hosts = {}
        self.switch.delete()

    def __enter__(self) -> Lan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_STATISTICS = 6


class WireCount:
    """UDP datagrams arriving on a host's interface, by (destination IP, destination port),
    counted from inside the host's namespace until :meth:`stop`. ``dropped`` is what the
    counting socket itself missed (its buffer overran): a count is exact only at 0."""

    def __init__(self, host: Host, rcvbuf: int = 32 << 20) -> None:
        self.counts: Counter[tuple[str, int]] = Counter()
        self.dropped = 0
        with host.entered():
            self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self._sock.bind((host.ifname, ETH_P_IP))
        self._sock.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"wire-{host.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                frame, addr = self._sock.recvfrom(64)
            except TimeoutError:
                if self._stop.is_set():  # stops once what was queued is counted
                    return
                continue
            except OSError:
                return
            # From the IP layer on (SOCK_RAW on AF_PACKET keeps the Ethernet header).
            if addr[2] == PACKET_OUTGOING or len(frame) < 14 + 20 + 8:
                continue
            ip = frame[14:]
            if ip[9] != socket.IPPROTO_UDP:
                continue
            ihl = (ip[0] & 0x0F) * 4
            if len(ip) < ihl + 4:
                continue
            dst = socket.inet_ntoa(ip[16:20])
            (dport,) = struct.unpack("!H", ip[ihl + 2 : ihl + 4])
            self.counts[(dst, dport)] += 1

    def stop(self) -> Counter[tuple[str, int]]:
        """Stop counting; the counts by (destination, port)."""
        self._stop.set()
        self._thread.join(10)
        stats = self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        _packets, drops = struct.unpack("II", stats)
        self.dropped += drops
        self._sock.close()
        return self.counts


def chunk_spread(
    first: int, count: int, packets_per_chunk: int, ways: int
) -> list[npt.NDArray[np.uint64]]:
    """Packets ``first`` .. ``first + count - 1`` dealt over ``ways`` destinations by chunk,
    as an F-engine's destination table deals heap ranges: destination i gets the chunks
    whose id is i modulo ``ways``."""
    seqs = np.arange(first, first + count, dtype=np.uint64)
    way = (seqs // np.uint64(packets_per_chunk)) % np.uint64(ways)
    return [seqs[way == np.uint64(i)] for i in range(ways)]


def publish(
    host: Host,
    port: int,
    schedules: Mapping[str, npt.ArrayLike],
    rate_gbps: float,
    payload_size: int = 8192,
) -> dict[str, int]:
    """Send the example stream's packets of each schedule (sequence numbers in the order
    sent) to its group (or address) at ``port`` from ``host``, all at once, one C++ sender
    thread each, ``rate_gbps`` in total. Returns the datagrams sent per destination."""
    from casper400g_rx import _core

    dests = list(schedules)
    with host.entered():  # the senders' sockets belong to the host
        senders = [
            _core.Sender(
                host=dest,
                port=port,
                payload_size=payload_size,
                schedule=np.asarray(schedules[dest], dtype=np.uint64),
                rate_gbps=rate_gbps / len(dests),
                allow_remote=True,
                catch_up=True,
            )
            for dest in dests
        ]
    _core.send_in_step(senders, [])
    return {dest: int(s.packets_sent) for dest, s in zip(dests, senders, strict=True)}


SCHEDULER_PORT = 8786


class DaskOnLan:
    """A Dask cluster on the LAN's hosts: `dask scheduler` on ``scheduler`` and one
    `dask worker` on each of ``workers`` (named after its host, with the resource
    ``host-<name>=1`` for placing a host's streams), each a process started in its
    host's namespace, as on real hosts. :meth:`client` connects from ``scheduler``'s
    namespace. ``log_dir`` keeps each process's output (shown when it fails to start)."""

    def __init__(
        self,
        scheduler: Host,
        workers: Sequence[Host],
        log_dir: Path,
        python: str = sys.executable,
        nthreads: int = 2,
    ) -> None:
        self.scheduler_host = scheduler
        self.address = f"tcp://{scheduler.ip}:{SCHEDULER_PORT}"
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._procs: list[tuple[str, subprocess.Popen[str]]] = []
        # The workers unpickle functions of the checkout's own modules (casper400g_dev).
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        try:
            self._spawn(
                "scheduler", scheduler,
                [python, "-m", "distributed.cli.dask_scheduler", "--host", scheduler.ip,
                 "--port", str(SCHEDULER_PORT), "--no-dashboard"],
                env,
            )  # fmt: skip
            for host in workers:
                self._spawn(
                    f"worker-{host.name}", host,
                    [python, "-m", "distributed.cli.dask_worker", self.address,
                     "--host", host.ip, "--name", host.name, "--nthreads", str(nthreads),
                     "--no-nanny", "--no-dashboard", "--resources", f"host-{host.name}=1"],
                    env,
                )  # fmt: skip
        except BaseException:
            self.close()
            raise
        self.worker_names = [h.name for h in workers]

    def _spawn(self, name: str, host: Host, argv: list[str], env: dict[str, str]) -> None:
        log = (self.log_dir / f"{name}.log").open("w")
        proc = subprocess.Popen(
            host.argv(*argv), stdout=log, stderr=subprocess.STDOUT, text=True, env=env
        )
        log.close()
        self._procs.append((name, proc))

    def logs(self) -> str:
        return "\n".join(
            f"--- {name} (exit {p.poll()}):\n" + (self.log_dir / f"{name}.log").read_text()[-3000:]
            for name, p in self._procs
        )

    @contextlib.contextmanager
    def client(self, timeout: float = 120.0) -> Iterator[Any]:
        """A Client of the cluster once every worker has joined (its connections are made
        from the scheduler's host)."""
        from distributed import Client

        with self.scheduler_host.entered():
            # The client's event loop thread starts here, so it inherits the namespace.
            client = Client(self.address, timeout=timeout)
        try:
            try:
                client.wait_for_workers(len(self.worker_names), timeout=timeout)
            except TimeoutError:
                raise TimeoutError(f"the workers did not join:\n{self.logs()}") from None
            yield client
        finally:
            client.close()

    def close(self) -> None:
        for _name, proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
        for _name, proc in reversed(self._procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self._procs = []

    def __enter__(self) -> DaskOnLan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
