"""The twin as a board: harness + board server (KATCP) + network + ICMP helper.

:class:`TwinBoard` runs the board server in a thread of its own, like a board's
``casper400g-board-server``; its ``?progdev``/``?progremote`` load a design's ``.fpg``
(:mod:`.image`) by compiling that design's twin (cached) and starting it in place of the
running one. The MAC side of every 400GbE block goes to a TAP device in the twin's
network namespace (:mod:`.netns`), or, without the privileges for one, to a UDP tunnel
of its own (:mod:`.tunnel`) or a pcap file of its own. The core's ARP responder answers
ARP; ICMP echo is answered by the software helper (``casperfpga_ext.tap``) through the
core's CPU buffers, as a board's CPU would.

Before anything takes long the board checks its KATCP port (:mod:`.claims`). The design
(compile and harness) runs as an unprivileged user (:mod:`.privileges`); this process
keeps the namespace and hands the harness its TAP devices, pcap files and the hold on its
build as descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from casper400g_board_server.server import BoardServer, RequestError, ServerPolicy
from casperfpga_ext.fpg import FpgDevice, FpgHeader
from casperfpga_ext.fpga import Fpga
from casperfpga_ext.tap import Tap
from casperfpga_ext.transport import WORD_BYTES, check_access

from . import image
from .build import TwinBuild, TwinBuildError, compile_twin, design_name, design_sources
from .claims import ClaimError, PcapClaim, check_port_free, claim_pcap
from .harness import Harness, HarnessError
from .netns import HostSide, Netns, NetnsError, Switch, open_tap, privileged
from .privileges import PrivilegeError, RunAs, run_as
from .tunnel import Tunnel

NETWORK_MODES = ("auto", "tap", "udp", "pcap", "none")


class TwinError(RuntimeError):
    """The twin could not be started (the cause named)."""


class TwinWindow:
    """The board server's (and casperfpga_ext's) view of a running twin's bus: a design's
    devices at their ``.fpg`` addresses, 32-bit big-endian words."""

    def __init__(self, board: TwinBoard, devices: Iterable[FpgDevice]) -> None:
        self.board = board
        self.devices = {d.name: d for d in devices}

    def _where(self, device_name: str, offset: int, size: int) -> int:
        dev = self.devices.get(device_name)
        if dev is None:
            raise ValueError(f"unknown device {device_name!r}")
        check_access(device_name, dev.size, offset, size)
        return dev.address + offset

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        address = self._where(device_name, offset, size)
        words = self.board.harness.read_words(address, size // WORD_BYTES)
        return b"".join(w.to_bytes(WORD_BYTES, "big") for w in words)

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        address = self._where(device_name, offset, len(data))
        words = [int.from_bytes(data[k : k + 4], "big") for k in range(0, len(data), 4)]
        self.board.harness.write_words(address, words)

    def listdev(self) -> list[str]:
        return list(self.devices)

    def is_connected(self) -> bool:
        return self.board.harness_alive


@dataclass
class Network:
    """Where the twin's MAC frames go. ``mode``: ``tap`` (a TAP device per block in a
    network namespace the twin creates; root), ``udp`` (a UDP tunnel per block: the first
    block's between ``tunnel_local`` and ``tunnel_peer``, block ``k``'s the ``k``-th of
    ``more_tunnels`` (``LOCAL_IP:PORT,PEER_IP:PORT``) or, past them, the first's ports +
    ``k``: :meth:`tunnel`), ``pcap`` (frames each block sends, into a file of its own: the
    first block's ``pcap``, default ``<build>/twin_tx.pcap``, numbered while another twin
    writes it; block ``k``'s beside it, ``twin_tx.<block>.pcap``:
    ``TwinBoard.pcap_file`` says which), ``none``, or ``auto`` (tap when privileged, else
    pcap). ``switch``: tap mode with the TAP devices as ports of that bridge (a LAN's
    switch) instead of in a namespace of the twin's own; the host side's address is
    unused."""

    mode: str = "auto"
    host: HostSide = field(default_factory=HostSide)
    tunnel_local: str = "127.0.0.1:0"
    tunnel_peer: str = ""
    more_tunnels: tuple[str, ...] = ()
    pcap: Path | None = None
    switch: Switch | None = None

    def __post_init__(self) -> None:
        if self.mode not in NETWORK_MODES:
            raise ValueError(f"network mode {self.mode!r}: one of {NETWORK_MODES}")
        if self.switch is not None and self.mode != "tap":
            raise ValueError(
                f"a switch takes the twin's TAP devices: mode 'tap', not {self.mode!r}"
            )
        if self.mode == "udp":  # (no peer at all: TwinBoard.start says so)
            if self.tunnel_peer:
                self.tunnel(0)
            for text in self.more_tunnels:
                Tunnel.parse(text)

    def tunnel(self, k: int) -> Tunnel:
        """Block ``k``'s tunnel (udp mode), as given (a local port 0 not yet chosen)."""
        if 0 < k <= len(self.more_tunnels):
            return Tunnel.parse(self.more_tunnels[k - 1])
        return Tunnel.of(self.tunnel_local, self.tunnel_peer).shifted(k)


def status_lines(prev: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The status since ``prev``: simulated cycles/s and time, then one line per port (its
    block's MAC): effective Gb/s and frames each way, the link's faults, DCMAC rule
    violations."""
    dt = max(now["wall_s"] - prev["wall_s"], 1e-9)
    rate = (now["user_cycles"] - prev["user_cycles"]) / dt
    head = f"{rate / 1e3:7.1f} kcycles/s | sim {now['sim_fs'] / 1e12:9.3f} ms"
    if now.get("idle"):
        head += " | idle"
    lines = [head]
    for name, m in now["macs"].items():
        p = prev["macs"].get(name, m)
        gbps = 8 * (m["to_host_bytes"] - p["to_host_bytes"]) / dt / 1e9
        link = m["link"]
        parts = [
            f"{name}: FPGA->host {m['to_host_frames']:,} frames {gbps:6.3f} Gb/s, "
            f"host->FPGA {m['from_host_frames']:,} frames"
        ]
        if link["dropped"] or link["duplicated"] or link["delayed"]:
            parts.append(
                f"link dropped {link['dropped']} duplicated {link['duplicated']} "
                f"delayed {link['delayed']}"
            )
        if m["violations"]:
            parts.append(f"DCMAC rule broken x{m['violations']}: {m['violation']}")
        lines.append(" | ".join(parts))
    return lines


def status_line(prev: dict[str, Any], now: dict[str, Any]) -> str:
    """:func:`status_lines` on one line (a design with one port)."""
    return " | ".join(status_lines(prev, now))


def port_host(host: HostSide, k: int, meta: dict[str, str] | None) -> HostSide:
    """The host side of block ``k``'s link: ``host`` for the first; for another, its own
    interface ``c4g<k>`` (MAC ``host``'s + k) with an address on that block's subnet (the
    host part of ``host``'s; from the block's ``fab_ip``/``fab_netmask``), or none when
    the block's subnet is not one of its own (the same as an earlier port's, or no mask):
    two interfaces on one subnet would leave the host's routes guessing."""
    if k == 0:
        return host
    mac = int(host.mac.replace(":", ""), 16) + k
    text = ":".join(f"{(mac >> s) & 0xFF:02x}" for s in range(40, -8, -8))
    bare = HostSide(ip="", mac=text, ifname=f"c4g{k}", mtu=host.mtu)
    try:
        core = ipaddress.ip_interface(f"{meta['fab_ip']}/{meta['fab_netmask']}")  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return bare
    first = ipaddress.ip_interface(host.ip)
    net = core.network
    if net.prefixlen == 0 or net.overlaps(first.network):
        return bare
    hostpart = int(first.ip) & int(first.network.hostmask)
    ip = ipaddress.ip_address(int(net.network_address) | (hostpart & int(net.hostmask)))
    if ip in (core.ip, net.network_address, net.broadcast_address):
        return bare
    return HostSide(ip=f"{ip}/{net.prefixlen}", mac=text, ifname=f"c4g{k}", mtu=host.mtu)


class TwinBoard:
    """A twin of ``build_dir``'s design (or of whatever ``.fpg`` is programmed later)
    behind a KATCP board server on ``katcp_host:katcp_port`` (0: a free port).

    ``icmp``: run the software ICMP helper so ``ping`` of the core's IP is answered.
    ``run_as``: the unprivileged user that compiles and runs designs when this process is
    root (default ``nobody``).
    ``progress`` gets one line per step (compiling, network, listening).
    """

    def __init__(
        self,
        build_dir: Path | None,
        *,
        network: Network | None = None,
        katcp_host: str = "127.0.0.1",
        katcp_port: int = 7147,
        threads: int = 1,
        icmp: bool = True,
        run_as: str | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.build_dir = Path(build_dir) if build_dir is not None else None
        self.network = network or Network()
        self.katcp_host, self.katcp_port = katcp_host, katcp_port
        self.threads = threads
        self.icmp = icmp
        self.run_as_name = run_as
        self.user: RunAs | None = None
        self.say = progress or (lambda _m: None)
        self.fpg: Path | None = None
        self.netns: Netns | None = None
        self.mode = ""  # the network mode in use
        self.fallback_reason: str | None = None
        self.build: TwinBuild | None = None
        self.header: FpgHeader | None = None
        self.ports: dict[str, str] = {}
        self._harness: Harness | None = None
        self._pcaps: list[PcapClaim] = []  # the first block's, then the others' as claimed
        self._tunnels: list[Tunnel] = []  # block k's, its local port chosen (kept: ?progdev)
        self._taps: list[Tap] = []
        self._switch_ports: list[str] = []  # TAP devices made on the switch
        self._server: BoardServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- properties
    @property
    def harness(self) -> Harness:
        h = self._harness
        if h is None:
            raise HarnessError("no design is running on the twin")
        return h

    @property
    def harness_alive(self) -> bool:
        return self._harness is not None and self._harness.alive

    @property
    def port(self) -> int:
        return self.katcp_port

    @property
    def blocks(self) -> tuple[str, ...]:
        return self.build.blocks if self.build else ()

    @property
    def pcap(self) -> Path | None:
        """The pcap file the first block's frames go to (pcap mode)."""
        return self._pcaps[0].path if self._pcaps else None

    def pcap_file(self, block: str | None = None) -> Path:
        """The pcap file a block's frames go to (pcap mode; default the first block's)."""
        if not self._pcaps:
            raise TwinError(f"the twin writes no pcap file (network mode {self.mode!r})")
        k = self._block_index(block)
        return self._pcaps[0].path if k == 0 else self._pcap_path(self.blocks[k])

    def tunnel(self, block: str | None = None) -> Tunnel:
        """A block's UDP tunnel (udp mode; default the first block's), its local port
        chosen."""
        if self.mode != "udp":
            raise TwinError(f"the twin has no UDP tunnel (network mode {self.mode!r})")
        return self._tunnel(self._block_index(block))

    def _block_index(self, block: str | None) -> int:
        if not block:
            return 0
        if block not in self.blocks:
            raise ValueError(f"no 400GbE block {block!r} in the design: {', '.join(self.blocks)}")
        return self.blocks.index(block)

    def _tunnel(self, k: int) -> Tunnel:
        try:
            while len(self._tunnels) <= k:
                self._tunnels.append(self.network.tunnel(len(self._tunnels)).bound())
        except ValueError as exc:
            raise TwinError(str(exc)) from None
        return self._tunnels[k]

    def interface(self, block: str | None = None) -> str:
        """The host-side interface of a block's link (tap mode)."""
        return self._ifname(self.blocks.index(block) if block else 0)

    def _ifname(self, index: int) -> str:
        return self.network.host.ifname if index == 0 else f"c4g{index}"

    def host_side(self, block: str | None = None) -> HostSide:
        """The host side of a block's link (tap mode): its interface, address and MAC."""
        k = self.blocks.index(block) if block else 0
        return port_host(self.network.host, k, self._block_meta(k))

    def _block_meta(self, k: int) -> dict[str, str] | None:
        if self.header is None or k >= len(self.blocks):
            return None
        b = self.header.blocks.get(self.blocks[k])
        return dict(b.params) if b is not None else None

    # ---------------------------------------------------------------- lifetime
    def start(self) -> TwinBoard:
        """Program the build's design, bring up the network and serve KATCP."""
        try:
            check_port_free(self.katcp_host, self.katcp_port)
            self._runner()
        except (ClaimError, PrivilegeError) as exc:
            raise TwinError(str(exc)) from None
        try:
            self._setup_network()
            if self.build_dir is not None:
                self.fpg = image.write_fpg(self.build_dir)
                self.say(f"twin image: {self.fpg}")
                self.program(self.fpg.read_bytes(), str(self.fpg))
            self._thread = threading.Thread(target=self._serve, name="twin-katcp", daemon=True)
            self._thread.start()
            if not self._started.wait(30) or self._error is not None:
                raise TwinError(f"the board server did not start: {self._error}")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(15)
            self._thread = None
        self._stop_design()
        for claim in self._pcaps:
            claim.release()
        self._pcaps = []
        switch = self.network.switch
        for ifname in self._switch_ports:
            if switch is not None:
                switch.delete_port(ifname)
        self._switch_ports = []
        if self.netns is not None:
            self.netns.delete()
            self.netns = None

    def __enter__(self) -> TwinBoard:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- network
    def _setup_network(self) -> None:
        net = self.network
        mode = net.mode
        if net.switch is not None:
            why = privileged()
            try:
                if why is None:
                    net.switch.check()
            except NetnsError as exc:
                why = str(exc)
            if why is not None:
                raise TwinError(f"no TAP device on the switch for the twin: {why}")
            self.mode = "tap"
            return
        if mode in ("auto", "tap"):
            why = privileged()
            if why is None:
                try:
                    self.netns = Netns.create()
                    for name in self.netns.swept:
                        self.say(f"deleted namespace {name}, left by a twin no longer running")
                    self.mode = "tap"
                    return
                except NetnsError as exc:
                    why = str(exc)
            if mode == "tap":
                raise TwinError(f"no TAP device for the twin: {why}")
            self.fallback_reason = why
            mode = "pcap"
            self.say(f"no TAP device ({why}): the FPGA's frames go to a pcap file instead")
        if mode == "pcap":
            try:
                if net.pcap is None:
                    base = self.build_dir or Path.cwd()
                    self._pcaps.append(claim_pcap(base / "twin_tx.pcap", numbered=True))
                else:
                    self._pcaps.append(claim_pcap(net.pcap, numbered=False))
            except ClaimError as exc:
                raise TwinError(str(exc)) from None
        if mode == "udp":
            if not net.tunnel_peer:
                raise TwinError("udp mode needs the tunnel's peer (IP:port)")
            self._tunnel(0)  # its local port chosen now: describe() names it
        self.mode = mode

    def _runner(self) -> RunAs:
        if self.user is None:
            self.user = run_as(self.run_as_name)
        return self.user

    def _port_specs(self, blocks: tuple[str, ...], fds: list[int]) -> dict[str, str]:
        """The harness's ``--port`` specs; the descriptors they name are added to ``fds``
        (the caller closes them once the harness has them)."""
        specs: dict[str, str] = {}
        if self.mode == "udp" and len(self.network.more_tunnels) >= len(blocks):
            self.say(
                f"{len(self.network.more_tunnels) + 1} tunnels given, the design has "
                f"{len(blocks)} 400GbE blocks: the tunnels past its blocks are unused"
            )
        for k, block in enumerate(blocks):
            if self.mode == "tap":
                fd = open_tap(self._tap_netns(), self._ifname(k))
                fds.append(fd)
                specs[block] = f"tapfd:{fd}:{self._ifname(k)}"
            elif self.mode == "udp":
                try:
                    specs[block] = self._tunnel(k).spec()
                except TwinError as exc:
                    raise RequestError(str(exc)) from None
            elif self.mode == "pcap":
                claim = self._pcap_claim(k, block)
                fd = claim.open_for_writing()
                fds.append(fd)
                specs[block] = f"pcapfd:{fd}:{claim.path}"
        return specs

    def _pcap_path(self, block: str) -> Path:
        """A block's pcap file after the first: beside the first block's, named for it."""
        return self._pcaps[0].path.with_suffix(f".{block}.pcap")

    def _pcap_claim(self, k: int, block: str) -> PcapClaim:
        """Block ``k``'s pcap file: the claimed one for the first block, a file beside it
        named for the block for the others (claimed once, kept for a later ?progdev)."""
        if k == 0:
            return self._pcaps[0]
        path = self._pcap_path(block)
        for claim in self._pcaps[1:]:
            if claim.path == path:
                return claim
        try:
            self._pcaps.append(claim_pcap(path, numbered=False))
        except ClaimError as exc:
            raise RequestError(str(exc)) from None
        return self._pcaps[-1]

    def _netns(self) -> Netns:
        assert self.netns is not None
        return self.netns

    def _tap_netns(self) -> str:
        """The namespace holding the TAP devices: the switch's, or the twin's own."""
        if self.network.switch is not None:
            return self.network.switch.netns
        return self._netns().name

    def _ensure_taps(self, blocks: tuple[str, ...], header: FpgHeader) -> None:
        """A TAP device per block: a port of the switch, or in the twin's own namespace on
        its block's subnet (:func:`port_host`)."""
        switch = self.network.switch
        have = "" if switch is not None else self._netns().run("ip", "-o", "link", "show").stdout
        for k, block in enumerate(blocks):
            b = header.blocks.get(block)
            host = port_host(self.network.host, k, dict(b.params) if b else None)
            if switch is not None:
                if host.ifname not in self._switch_ports:
                    if switch.has(host.ifname):
                        raise NetnsError(
                            f"switch {switch.netns}:{switch.bridge} already has an interface "
                            f"{host.ifname!r}: name the twin's another (HostSide.ifname)"
                        )
                    switch.add_port(host)
                    self._switch_ports.append(host.ifname)
                continue
            if f" {host.ifname}:" in have:
                continue
            if host.ip:
                self._netns().add_tap(host)
            else:
                self.say(f"{block}: its subnet is not its own, {host.ifname} has no address")
                self._netns().add_tap_bare(host)

    # ---------------------------------------------------------------- programming
    def program(self, data: bytes, source: str) -> int:
        """Load a design's ``.fpg`` (twin image, or the hardware image of this twin's own
        build): compile its twin (cached) and start it in place of the running design."""
        try:
            header, payload = image.read_fpg(data, source)
        except ValueError as exc:
            raise RequestError(str(exc)) from None
        try:
            if image.is_image(payload):
                unpacked = image.unpack(payload)
                design, sources = unpacked.design, list(unpacked.sources)
            elif (
                self.build_dir is not None
                and data[: header.bitstream_offset]
                == (self.build_dir / "fpg_header.txt").read_bytes()
            ):
                # A hardware .fpg of this twin's own build: simulate the build's HDL.
                design = design_name(self.build_dir)
                packed = image.pack(design, design_sources(self.build_dir))
                sources = list(image.unpack(packed).sources)
            else:
                raise RequestError(
                    f"{source} holds a hardware device image of another design: the twin "
                    "runs .fpg files written by `casper400g twin` (their image is the HDL)"
                )
            build = compile_twin(
                sources,
                header,
                design,
                self.threads,
                progress=self.say,
                user=self._runner(),
                hold=True,
            )
        except (TwinBuildError, image.ImageError, PrivilegeError) as exc:
            raise RequestError(str(exc)) from None
        user = self._runner()
        # The harness gets its own copies of these: the build's hold, its ports.
        fds = [build.held]
        try:
            with self._lock:
                self._stop_design()
                if self.mode == "tap":
                    self._ensure_taps(build.blocks, header)
                self.build, self.header = build, header
                self.ports = self._port_specs(build.blocks, fds)
                self._harness = Harness(build.exe, self.ports, fds=fds, user=user)
                self.say(
                    f"running the twin of {design} as user {user.user}: "
                    + ", ".join(f"{b} -> {spec}" for b, spec in self.ports.items())
                )
                if self.icmp:
                    self._start_icmp(header)
        finally:
            for fd in fds:
                os.close(fd)
        return len(header.devices)

    async def _program_hook(self, pdi: Path, fpg: Path) -> None:
        data = fpg.read_bytes()
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, self.program, data, fpg.name)
        except (HarnessError, NetnsError) as exc:
            raise RequestError(str(exc)) from None

    def _start_icmp(self, header: FpgHeader) -> None:
        fpga = Fpga(TwinWindow(self, header.devices.values()), header)
        for name in fpga.gbes:
            tap = Tap(fpga.gbes[name])
            tap.enable(hardware_arp=None)
            tap.start()
            self._taps.append(tap)

    def _stop_design(self) -> None:
        for tap in self._taps:
            with contextlib.suppress(Exception):
                tap.stop()
        self._taps = []
        if self._harness is not None:
            self._harness.close()
            self._harness = None

    def icmp_counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for tap in self._taps:
            for k, v in tap.counts().items():
                total[k] = total.get(k, 0) + v
        return total

    # ---------------------------------------------------------------- KATCP
    def _serve(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            fpg_dir = self.fpg.parent if self.fpg else Path.cwd()
            server = BoardServer(
                lambda devices: TwinWindow(self, devices),
                host=self.katcp_host,
                port=self.katcp_port,
                program_cmd=self._program_hook,
                fpg=self.fpg,
                fpg_dir=fpg_dir,
                policy=ServerPolicy(allow_upload=True),
            )
            self._server = server
            await server.start()
            self.katcp_port = server.port
            self._started.set()
            await self._stop.wait()
            await server.close()

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported by start()
            self._error = exc
            self._started.set()

    # ---------------------------------------------------------------- status
    def stats(self) -> dict[str, Any]:
        return self.harness.stats()

    def status(self, prev: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        now = self.stats()
        return status_line(prev or now, now), now

    def status_lines(self, prev: dict[str, Any] | None = None) -> tuple[list[str], dict[str, Any]]:
        """The status since ``prev``, a line per port after the simulation's own."""
        now = self.stats()
        return status_lines(prev or now, now), now

    def describe(self) -> list[str]:
        """What the twin is and where to reach it, for the user."""
        lines = [f"KATCP board server on {self.katcp_host}:{self.katcp_port}"]
        if self.fpg is not None:
            lines.append(f"design image {self.fpg} (?progdev {self.fpg.name})")
        if self.build is not None:
            lines.append(f"twin build {self.build.build_dir}, in {self.build.location}")
        switch = self.network.switch
        if self.mode == "tap" and switch is not None:
            lines.append(
                f"on the switch: {', '.join(self._switch_ports) or self._ifname(0)} a port of "
                f"bridge {switch.bridge} in network namespace {switch.netns}, the FPGA behind it"
            )
        elif self.mode == "tap" and self.netns is not None:
            lines.append(
                f"network namespace {self.netns.name}: an interface per 400GbE block is the "
                "host's NIC, the FPGA behind it"
            )
            for k, block in enumerate(self.blocks or ("",)):
                host = port_host(self.network.host, k, self._block_meta(k))
                meta = self._block_meta(k) or {}
                core = f" -> {block} {meta.get('fab_ip', '?')} {meta.get('fab_mac', '?')}"
                lines.append(
                    f"  {host.ifname} {host.ip or '(no address)'} {host.mac}"
                    + (core if block else "")
                )
            lines.append(f"  e.g. ip netns exec {self.netns.name} ping <core IP>")
        elif self.mode == "pcap":
            if len(self.blocks) <= 1:
                lines.append(f"no NIC: the FPGA's frames are written to {self.pcap}")
            else:
                lines.append("no NIC: each 400GbE block's frames are written to a pcap file")
                lines += [f"  {b}: {self.pcap_file(b)}" for b in self.blocks]
            if self.fallback_reason:
                lines.append(f"  (fallback: {self.fallback_reason})")
        elif self.mode == "udp":
            if len(self.blocks) <= 1:
                lines.append(
                    f"no NIC: frames over a UDP tunnel {self._tunnel(0)}, one Ethernet "
                    "frame per datagram"
                )
            else:
                lines.append(
                    "no NIC: a UDP tunnel per 400GbE block (local <-> peer), one Ethernet "
                    "frame per datagram"
                )
            for k, block in enumerate(self.blocks if len(self.blocks) > 1 else ()):
                meta = self._block_meta(k) or {}
                host = port_host(self.network.host, k, meta)
                side = host.address if host.ip else "(no address)"
                lines.append(
                    f"  {block}: {self._tunnel(k)}, core {meta.get('fab_ip', '?')} "
                    f"{meta.get('fab_mac', '?')}, host side {side} {host.mac}"
                )
        return lines


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
