"""The example design's tone spread by its destination table over hosts on a switch.

The twin of the example design (twin/board.py) has its TAP device as a port of a LAN's
switch (lan.py: a Linux bridge with IGMP snooping between host namespaces), so the core's
multicast reaches the hosts as a real switch would forward it. The destination table
deals every spectrum of G packets over G multicast groups, entry k to group k with
channel k·C/G (C: the channels of one packet's spectrum, its samples); each host joins
the groups of its entries. Each packet is one SPEAD heap of tone samples (spead_ctrl = 1)
whose timestamp advances once per spectrum, so a capture of one group places its heaps by
timestamp, one slot per spectrum (``Format.spead(index_item=0x1600)``). Two heaps of one
spectrum would share a slot, so a host takes each of its groups with a capture of its own
(one socket per group, as scaleout.md sizes a multicast UDP capture anyway).

Every chunk is checked on its worker (:class:`SpreadCheck`): the heap's channel item
names its channel group; the destination table's model (verification/models/dest_table.py)
gives the packet number of that channel group's heap in that slot's spectrum, and the
payload must be the tone's golden model (verification/tone_model.py) for that packet.
The host's share of the band is taken there too: a spectrum per heap, of which the C/G
channels from its channel item on are kept, as a host that takes a channel group keeps
its channels; the tone then shows in the host that takes its channel.

:func:`run` does one observation: the generator restarted, the captures started on their
hosts' workers and joined, the link's faults set, the stream sent and drained, and the
array's account taken from the core's ``tx_udp_packets`` read over KATCP (account.py's
``from_core``), beside the table's per-entry counts and what each host's wire carried.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from casper400g_rx import Chunking, Format, UdpSource
from casper400g_rx.account import from_core
from casper400g_rx.cluster import CaptureCluster, ClusterReport, Reduction, Result, Stream
from casper400g_rx.multicast import parse_groups
from casperfpga_ext.addressing import format_ip, parse_ip
from verification import tone_model
from verification.models.dest_table import Entry, Routes
from verification.models.spead import CHANNEL, TIMESTAMP

from . import checkout, lan

CONFIGURE_SCRIPT = checkout.EXAMPLES_DIR / "configure_core.py"
COUNTS = ("bad_payload", "bad_channel", "unplanned")  # after the power and the per-group counts


@dataclass(frozen=True)
class SpreadConfig:
    """The hosts and their groups in table order, the core, the stream and each capture's
    chunking. ``size`` 4104 gives 2048 samples (channels) per packet."""

    hosts: tuple[tuple[str, tuple[str, ...]], ...]
    core_ip: str
    core_mac: str = "02:00:0a:00:00:0a"
    netmask: str = "255.255.255.0"
    port: int = 7148
    size: int = 4104
    spectra: int = 256
    packets_per_chunk: int = 32
    max_chunks: int = 8
    tone: tone_model.ToneConfig = field(
        default_factory=lambda: tone_model.ToneConfig.for_frequency(0.15625, noise_bits=4)
    )

    def __post_init__(self) -> None:
        groups = [g for _h, gs in self.hosts for g in gs]
        parse_groups(groups)  # multicast addresses, none twice
        if not groups:
            raise ValueError("the spread needs at least one group")
        names = [h for h, _g in self.hosts]
        if len(set(names)) != len(names):
            raise ValueError(f"hosts named twice: {names}")
        if not 8 < self.size <= 8192:
            raise ValueError(f"size {self.size!r}: 9..8192 bytes (a header and samples)")
        if self.channels % len(groups):
            raise ValueError(
                f"{self.channels} channels (samples per packet of {self.size} B) do not "
                f"split into {len(groups)} equal channel groups"
            )
        if self.spectra < 1 or self.spectra % self.packets_per_chunk:
            raise ValueError(
                f"spectra {self.spectra!r}: a multiple of packets_per_chunk "
                f"({self.packets_per_chunk}), so each capture's last chunk is whole"
            )

    @property
    def groups(self) -> list[tuple[str, str]]:
        """(host, group) in table order: entry k is the k-th."""
        return [(h, g) for h, gs in self.hosts for g in gs]

    @property
    def channels(self) -> int:
        return tone_model.samples_per_packet(self.size)

    @property
    def width(self) -> int:
        """Channels per group."""
        return self.channels // len(self.groups)

    @property
    def count(self) -> int:
        return self.spectra * len(self.groups)

    @property
    def ts_step(self) -> int:
        """The SPEAD timestamp's step per spectrum: the samples of its packets."""
        return self.channels * len(self.groups)

    def table(self) -> list[Entry]:
        """The destination table: entry k sends to group k, channel k·width."""
        return [(parse_ip(g), self.port, k * self.width) for k, (_h, g) in enumerate(self.groups)]

    def stream_name(self, host: str, group: str) -> str:
        return f"{host}/{group}"

    def generator_writes(self) -> list[tuple[str, int]]:
        """The generator's registers, held in reset (pkt_ctrl = 2) until :func:`run`."""
        return [
            ("pkt_ctrl", 2),
            ("pkt_mode", tone_model.MODE_TONE),
            ("tone_step", self.tone.step),
            ("tone_shape", self.tone.shape),
            ("pkt_size", self.size),
            ("pkt_period", 0),
            ("pkt_count", self.count),
            ("spead_ctrl", 1),
            ("spead_ts_step", self.ts_step),
        ]

    def configure_argv(self, katcp_host: str, katcp_port: int, python: str = "") -> list[str]:
        """examples/configure_core.py: the core, the generator held in reset, the table."""
        argv = [python or sys.executable, str(CONFIGURE_SCRIPT), katcp_host]
        argv += ["--port", str(katcp_port), "--mac", self.core_mac, "--ip", self.core_ip]
        argv += ["--udp-port", str(self.port), "--netmask", self.netmask]
        for name, value in self.generator_writes():
            argv += ["--write", f"{name}={value:#x}"]
        for ip, port, channel in self.table():
            argv += ["--dest", f"{format_ip(ip)}:{port}:{channel}"]
        return argv

    def streams(self) -> list[Stream]:
        """One capture per group, on its host's worker, its heaps by timestamp."""
        return [
            Stream(
                self.stream_name(host, group),
                UdpSource(bind=f"{group}:{self.port}", groups=[group], interface=lan.HOST_IFNAME),
                chunking=Chunking(
                    packets_per_chunk=self.packets_per_chunk,
                    max_chunks=self.max_chunks,
                    first_chunk=0,
                ),
                fmt=functools.partial(spead_format, self.size, self.ts_step),
                resources={f"host-{host}": 1},
            )
            for host, group in self.groups
        ]

    def tone_channel(self) -> int:
        """The channel (of a packet's spectrum, zero frequency in the middle) of the tone."""
        return (round(self.tone.frequency * self.channels) + self.channels // 2) % self.channels

    def host_of_channel(self, channel: int) -> str:
        return self.groups[channel // self.width][0]

    def frequencies(self) -> npt.NDArray[np.float64]:
        """Each channel's frequency, a fraction of the sample rate."""
        return np.fft.fftshift(np.fft.fftfreq(self.channels))


def configure(
    board: Any, cfg: SpreadConfig, python: str = "", timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run examples/configure_core.py against the twin (``python``: one with the real
    casperfpga, or this one with casperfpga_ext)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout.ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        cfg.configure_argv(board.katcp_host, board.port, python),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def spead_format(size: int, ts_step: int) -> Format:
    """The example design's heaps of ``size`` bytes, a slot per spectrum (on the worker)."""
    return Format.spead(size, index_item=TIMESTAMP, index_step=ts_step, items=[CHANNEL])


@functools.lru_cache(maxsize=4)
def _plan(
    default: Entry, starts: tuple[int, ...], tables: tuple[tuple[Entry, ...], ...], count: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """The model's channels in order, and the packet number of each channel's heap in each
    spectrum ([channel index, spectrum], -1 where none is sent)."""
    routes = Routes(default, list(starts), [list(t) for t in tables]).routes(count)
    channels = sorted({r.channel for r in routes})
    index = {c: i for i, c in enumerate(channels)}
    spectra = max(r.spectrum for r in routes) + 1
    n_of = np.full((len(channels), spectra), -1, dtype=np.int64)
    for n, r in enumerate(routes):
        if n_of[index[r.channel], r.spectrum] != -1:
            raise ValueError(f"channel {r.channel} is sent twice in spectrum {r.spectrum}")
        n_of[index[r.channel], r.spectrum] = n
    return np.asarray(channels, dtype=np.uint64), n_of


@dataclass(frozen=True)
class SpreadCheck:
    """Per chunk, on its worker (a Reduction's per_chunk): the power of the channels each
    heap's channel group holds, summed; the heaps present per channel group of the model;
    then payloads differing from the tone's model, heaps whose channel the model never
    sends, heaps in a slot the model sends nothing to on that channel (COUNTS).

    ``golden`` holds every packet's payload by the tone's model, computed once by
    :meth:`of` (the model's noise is a sequence from the generator's reset, so any packet's
    payload costs all before it) and sent with the check to each worker."""

    size: int
    count: int
    width: int
    default: Entry
    starts: tuple[int, ...]
    tables: tuple[tuple[Entry, ...], ...]
    golden: npt.NDArray[np.uint8] = field(repr=False, compare=False)

    @classmethod
    def of(cls, cfg: SpreadConfig, routes: Routes) -> SpreadCheck:
        return cls(
            cfg.size,
            cfg.count,
            cfg.width,
            routes.default,
            tuple(routes.starts),
            tuple(tuple(t) for t in routes.tables),
            tone_model.expected_payloads(cfg.tone, np.arange(cfg.count), cfg.size),
        )

    def __call__(self, chunk: Any) -> npt.NDArray[np.float64]:
        channels, n_of = _plan(self.default, self.starts, self.tables, self.count)
        nchan = tone_model.samples_per_packet(self.size)
        present = np.asarray(chunk.present, dtype=bool)
        slots = int(chunk.first_seq) + np.flatnonzero(present)
        data = np.asarray(chunk.data)[present]
        wire = np.asarray(chunk.items[CHANNEL])[present]
        k = np.searchsorted(channels, wire)
        known = (k < len(channels)) & (channels[np.minimum(k, len(channels) - 1)] == wire)
        inside = known & (slots < n_of.shape[1])
        n = np.full(len(slots), -1, dtype=np.int64)
        n[inside] = n_of[k[inside], slots[inside]]
        planned = n >= 0
        bad = np.count_nonzero((data[planned] != self.golden[n[planned]]).any(axis=1))
        per_group = np.bincount(k[known], minlength=len(channels))[: len(channels)]
        power = np.zeros(nchan)
        spectra = np.abs(np.fft.fftshift(np.fft.fft(tone_model.samples(data), axis=1), axes=1))
        for c in np.unique(wire[known]):
            lo, hi = int(c), int(c) + self.width
            if hi <= nchan:
                power[lo:hi] += (spectra[wire == c, lo:hi] ** 2).sum(axis=0)
        counts = [bad, np.count_nonzero(~known), np.count_nonzero(known & ~planned)]
        return np.concatenate([power, per_group.astype(np.float64), np.asarray(counts, float)])


@dataclass(frozen=True)
class Taken:
    """A stream's results summed: its channels' power, heaps per channel group, COUNTS."""

    power: npt.NDArray[np.float64]
    per_group: npt.NDArray[np.int64]
    counts: dict[str, int]

    @classmethod
    def of(cls, results: Sequence[Result], cfg: SpreadConfig) -> Taken:
        groups = len(cfg.groups)
        total = np.zeros(cfg.channels + groups + len(COUNTS))
        for r in results:
            total = total + r.value
        tail = total[cfg.channels + groups :]
        return cls(
            total[: cfg.channels],
            total[cfg.channels : cfg.channels + groups].astype(np.int64),
            {name: int(v) for name, v in zip(COUNTS, tail, strict=True)},
        )


@dataclass
class Observation:
    """What :func:`run` saw: the cluster's report (with the array's account), the table's
    model, the core's counters and per-entry counts read over KATCP, the twin's link
    counts, the UDP datagrams on each host's wire by (group, port), each stream's taken
    results, and the channel of each stream's group."""

    report: ClusterReport
    routes: Routes
    core: dict[str, int]
    per_entry: list[int]
    link: dict[str, int]
    wire: dict[str, Counter[tuple[str, int]]]
    wire_dropped: dict[str, int]
    taken: dict[str, Taken]
    seconds: float

    def host_power(self, cfg: SpreadConfig, host: str) -> npt.NDArray[np.float64]:
        """The host's channels' power (its groups' channels; zero elsewhere)."""
        out = np.zeros(cfg.channels)
        for h, g in cfg.groups:
            if h == host:
                out += self.taken[cfg.stream_name(h, g)].power
        return out


def read_routes(fpga: Any, cfg: SpreadConfig) -> Routes:
    """The table's model: what configuration left as the default destination, the table
    asked for, in force from the packet the design reports (dest_tbl_switch)."""
    status = fpga.read_uint("dest_tbl_status")
    if status & 0xFF != len(cfg.groups) or status >> 24 & 1:
        raise RuntimeError(f"destination table status {status:#010x}: not the table asked for")
    default = (
        fpga.read_uint("pkt_dest_ip"),
        fpga.read_uint("pkt_dest_port"),
        fpga.read_uint("spead_channel"),
    )
    routes = Routes(default)
    routes.switched(fpga.read_uint("dest_tbl_switch"), cfg.table())
    return routes


def sent_through(fpga: Any, entries: int) -> list[int]:
    """dest_tbl_sent of each entry: its index in dest_tbl_ctrl with the last command's
    sequence number kept (no command), read once the index has crossed into the user
    clock (sys_clkcounter advanced)."""
    ctrl = fpga.read_uint("dest_tbl_ctrl")
    seq = fpga.read_uint("dest_tbl_status") >> 16 & 0xFF
    base = ctrl & ~0xFFFFFF | seq << 16
    out = []
    for k in range(entries):
        fpga.write_int("dest_tbl_ctrl", base | k)
        t0 = fpga.read_uint("sys_clkcounter")
        while (fpga.read_uint("sys_clkcounter") - t0) & 0xFFFFFFFF < 256:
            pass
        out.append(fpga.read_uint("dest_tbl_sent"))
    return out


def run(
    board: Any,
    net: lan.Lan,
    client: Any,
    cfg: SpreadConfig,
    faults: Mapping[str, Any] | None = None,
    timeout: float = 600.0,
) -> Observation:
    """One observation on a configured twin (configure_argv): see the module's text.
    ``faults``: the link model's (Harness.set_faults), datagram index = packet number."""
    from casperfpga_ext.fpga import Fpga

    block = board.blocks[0]
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    try:
        fpga.get_system_information()
        gbe = fpga.gbes[block]
        fpga.write_int("pkt_ctrl", 2)  # held in reset: spectra restart, entry counts cleared
        gbe.reset_counters()
        if gbe.read_reg("tx_udp_packets") != 0:
            raise RuntimeError(f"{block}: count_reset.clear did not clear tx_udp_packets")
        routes = read_routes(fpga, cfg)
        names = [cfg.stream_name(h, g) for h, g in cfg.groups]
        cc = CaptureCluster(
            client,
            cfg.streams(),
            Reduction(SpreadCheck.of(cfg, routes), chunks_per_result=cfg.max_chunks),
            transmitted=lambda: [from_core(gbe, f"twin:{block}", names)],
        )
        placed = cc.start()
        wires: dict[str, lan.WireCount] = {}
        try:
            wrong = {n: p["host"] for n, p in placed.items() if not n.startswith(p["host"] + "/")}
            if wrong:
                raise RuntimeError(f"captures placed on other hosts' workers: {wrong}")
            joined = {h: set(gs) for h, gs in cfg.hosts}
            net.wait_memberships(joined | {h: set() for h in net.hosts if h not in joined})
            wires = {h: lan.WireCount(net.hosts[h]) for h, _gs in cfg.hosts}
            board.harness.set_faults(block, **dict(faults or {}))
            t0 = time.monotonic()
            fpga.write_int("pkt_ctrl", 1)
            link = _wait_sent(board, fpga, block, cfg.count, timeout)
            seconds = time.monotonic() - t0
            _wait_taken(cc, link["passed"] + link["duplicated"], timeout)
        finally:
            report = cc.stop()
            wire = {h: w.stop() for h, w in wires.items()}
        link = board.stats()["macs"][block]["link"]
        core = {n: gbe.read_reg(n) for n in ("tx_udp_packets", "tx_arp_miss", "tx_overflow")}
        core["pkt_sent"] = fpga.read_uint("pkt_sent")
        per_entry = sent_through(fpga, len(cfg.groups))
        fpga.write_int("pkt_ctrl", 0)
    finally:
        fpga.disconnect()
    results = cc.results()
    return Observation(
        report=report,
        routes=routes,
        core=core,
        per_entry=per_entry,
        link=link,
        wire=wire,
        wire_dropped={h: w.dropped for h, w in wires.items()},
        taken={name: Taken.of(results[name], cfg) for name in names},
        seconds=seconds,
    )


def _wait_sent(board: Any, fpga: Any, block: str, count: int, timeout: float) -> dict[str, int]:
    """Until the generator sent ``count`` packets and the link passed or dropped each (no
    datagram held back by a delay); the link's counts."""
    deadline = time.monotonic() + timeout
    while True:
        link: dict[str, int] = board.stats()["macs"][block]["link"]
        if fpga.read_uint("pkt_sent") >= count and link["datagrams"] >= count and not link["held"]:
            return link
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the twin sent {fpga.read_uint('pkt_sent')} of {count} packets in "
                f"{timeout} s (link {link})"
            )
        time.sleep(0.2)


def _wait_taken(cc: CaptureCluster, delivered: int, timeout: float) -> None:
    """Until the captures together have taken (received, or seen their kernel drop) the
    ``delivered`` datagrams the link put on the switch, or ``timeout``: a capture stops
    once nothing came for a second, and a worker still busy with its chunks would leave
    datagrams in its socket, in no count. Past the timeout the account names what is
    missing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = cc.stats()
        if sum(s["received"] + s.get("kernel_drops", 0) for s in stats.values()) >= delivered:
            return
        time.sleep(0.2)
