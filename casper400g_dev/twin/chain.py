"""The live chain, as `make demo`'s finale, the notebook and the tests run it.

The example design's twin (:class:`casper400g_twin.board.TwinBoard`) is configured over KATCP by the
script a user runs against a board (``examples/configure_core.py``: the core, its ARP
entry for the host, the packet generator's registers, generator held in reset); a
receiver capture (``casper400g_rx.Capture``, ``udp`` backend) is opened on the host side of
the twin's link (inside its network namespace), into GPU chunks when asked; the generator
is started and the stream captured chunk by chunk; every payload is compared with its
golden model (the example-stream formula, or ``verification.tone_model``), and the
accounting of the core (TX counters), the link (faults the twin injected) and the host
(the receiver's counters) is put side by side. Without a TAP device the twin writes the
FPGA's frames to a pcap file, which the receiver's ``pcap`` backend then replays.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from casper400g_twin import netns
from casper400g_twin.board import TwinBoard
from casperfpga_ext.fpga import Fpga
from verification import tone_model

from .. import checkout

CONFIGURE_SCRIPT = checkout.EXAMPLES_DIR / "configure_core.py"
FFT_SIZE = 4096


@dataclass(frozen=True)
class StreamConfig:
    """What the chain configures: the core, the generator and the capture."""

    core_mac: str = "02:00:0a:00:00:0a"
    core_ip: str = "10.0.0.10"
    gateway: str = "10.0.0.1"
    netmask: str = "255.255.255.0"
    port: int = 7148
    dest_port: int = 7148
    size: int = 8192
    period: int = 0
    packets_per_chunk: int = 256
    chunks: int = 8
    max_chunks: int = 4
    # None: the example stream (pkt_mode 0)
    tone: tone_model.ToneConfig | None = field(
        default_factory=lambda: tone_model.ToneConfig.for_frequency(0.15625, noise_bits=4)
    )

    @property
    def count(self) -> int:
        return self.packets_per_chunk * self.chunks

    def generator_writes(self, dest_ip: str) -> list[tuple[str, int]]:
        """The generator's registers, held in reset (pkt_ctrl = 2) while they are set."""
        from casperfpga_ext.addressing import parse_ip

        writes = [("pkt_ctrl", 2), ("pkt_mode", tone_model.MODE_TONE if self.tone else 0)]
        if self.tone is not None:
            writes += [("tone_step", self.tone.step), ("tone_shape", self.tone.shape)]
        writes += [
            ("pkt_size", self.size),
            ("pkt_period", self.period),
            ("pkt_count", self.count),
            ("pkt_dest_ip", parse_ip(dest_ip)),
            ("pkt_dest_port", self.dest_port),
        ]
        return writes


def configure_argv(board: TwinBoard, cfg: StreamConfig, python: str | None = None) -> list[str]:
    """The configure_core.py command line for this twin and stream."""
    host = board.network.host
    argv = [python or sys.executable, str(CONFIGURE_SCRIPT), board.katcp_host]
    argv += ["--port", str(board.port), "--mac", cfg.core_mac, "--ip", cfg.core_ip]
    argv += ["--udp-port", str(cfg.port), "--gateway", cfg.gateway, "--netmask", cfg.netmask]
    argv += ["--arp", f"{host.address}={host.mac}"]
    for name, value in cfg.generator_writes(host.address):
        argv += ["--write", f"{name}={value:#x}"]
    return argv


def configure(
    board: TwinBoard, cfg: StreamConfig, python: str | None = None, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run examples/configure_core.py against the twin (``python``: one with the real
    casperfpga, or this one with casperfpga_ext)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout.ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        configure_argv(board, cfg, python),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def expected_payloads(cfg: StreamConfig, seqs: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """The golden payloads of packets ``seqs``."""
    if cfg.tone is not None:
        return tone_model.expected_payloads(cfg.tone, seqs, cfg.size)
    from casper400g_rx.example_stream import example_payloads

    return example_payloads(np.asarray(seqs, dtype=np.uint64), cfg.size)


def array_module(device: str) -> Any:
    """CuPy for a GPU capture, NumPy otherwise."""
    if device == "cpu":
        return np
    import cupy

    return cupy


@dataclass
class Captured:
    """What a chain capture got: every chunk's data (on the host), presence and ids; the
    receiver's counters; the power spectrum accumulated where the chunks were."""

    device: str
    data: npt.NDArray[np.uint8]
    present: npt.NDArray[np.bool_]
    first_seq: int
    stats: dict[str, Any]
    seconds: float
    spectrum: npt.NDArray[np.float64] | None = None
    spectrum_blocks: int = 0
    source: str = "udp"
    link_before: dict[str, int] = field(default_factory=dict)  # the twin's link counts


class Spectrum:
    """Power spectrum of the tone-mode samples, accumulated chunk by chunk on the chunks'
    device (``xp``: NumPy or CuPy): runs of complete packets are cut into FFT_SIZE blocks."""

    def __init__(self, xp: Any, size: int) -> None:
        self.xp, self.size = xp, size
        self.total = xp.zeros(FFT_SIZE, dtype=xp.float64)
        self.blocks = 0

    def add(self, payloads: Any) -> None:
        xp = self.xp
        spp = tone_model.samples_per_packet(self.size)
        iq = payloads[:, tone_model.HEADER_BYTES : tone_model.HEADER_BYTES + 2 * spp]
        iq = iq.view(xp.int8).astype(xp.float32).reshape(-1, 2)
        z = iq[:, 0] + 1j * iq[:, 1]
        n = z.size // FFT_SIZE
        if n:
            f = xp.fft.fft(z[: n * FFT_SIZE].reshape(n, FFT_SIZE), axis=1)
            self.total += (xp.abs(f) ** 2).sum(axis=0)
            self.blocks += n

    def result(self) -> npt.NDArray[np.float64]:
        out = self.total / max(self.blocks, 1)
        return out.get() if hasattr(out, "get") else np.asarray(out)


def capture(
    board: TwinBoard,
    cfg: StreamConfig,
    device: str = "cpu",
    timeout: float = 300.0,
    on_chunk: Callable[[int, dict[str, Any]], None] | None = None,
) -> Captured:
    """Open the capture on the host side of the twin's link, start the generator, take
    ``cfg.chunks`` chunks (or what arrives before ``timeout``), stop."""
    import casper400g_rx as rx

    # The same format, chunking and delivery whichever source the capture reads.
    pieces: dict[str, Any] = dict(
        fmt=rx.Format(payload_size=cfg.size),
        chunking=rx.Chunking(
            packets_per_chunk=cfg.packets_per_chunk, max_chunks=cfg.max_chunks, first_chunk=0
        ),
        delivery=rx.Delivery(device=device),
    )
    host = board.network.host
    xp = array_module(device)
    spectrum = Spectrum(xp, cfg.size) if cfg.tone is not None else None
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    fpga.get_system_information()
    block = board.blocks[0]
    # An observation starts from zero: the core's counters cleared (as a user's script
    # does), the twin's link counts taken as they are now.
    gbe = fpga.gbes[block]
    gbe.reset_counters()
    if gbe.read_reg("tx_udp_packets") != 0:
        raise RuntimeError(f"{block}: count_reset.clear did not clear tx_udp_packets")
    twin_before = board.stats()["macs"][block]
    tx_before = twin_before["to_host_frames"]
    t0 = time.monotonic()
    if board.mode != "tap":
        # No NIC: the generator sends into the twin's pcap file, replayed afterwards.
        fpga.write_int("pkt_ctrl", 1)
        _wait_frames(board, block, tx_before + cfg.count, timeout)
        cap = rx.Capture(rx.PcapSource(str(board.pcap)), **pieces)
        source = "pcap"
    else:
        assert board.netns is not None
        with netns.entered(board.netns.name):
            cap = rx.Capture(rx.UdpSource(f"{host.address}:{cfg.dest_port}"), **pieces)
        source = "udp"
    rows = np.zeros((cfg.count, cfg.size), dtype=np.uint8)
    present = np.zeros(cfg.count, dtype=bool)
    got = 0
    with cap:
        if source == "udp":
            fpga.write_int("pkt_ctrl", 1)
        deadline = t0 + timeout
        last_frames, last_change = -1, time.monotonic()
        while got < cfg.chunks and time.monotonic() < deadline:
            for chunk in cap.chunks(timeout=0.5):
                got += _take(chunk, xp, cfg, rows, present, spectrum)
                if on_chunk is not None:
                    on_chunk(got, dict(cap.stats))
                break
            # The stream ended (all frames out of the twin) and nothing more arrives.
            frames = board.stats()["macs"][block]["to_host_frames"]
            if frames != last_frames:
                last_frames, last_change = frames, time.monotonic()
            elif frames - tx_before >= cfg.count and time.monotonic() - last_change > 3:
                break
        cap.stop()
        for chunk in cap.chunks(timeout=0):
            got += _take(chunk, xp, cfg, rows, present, spectrum)
    stats = dict(cap.stats)
    fpga.write_int("pkt_ctrl", 0)
    fpga.disconnect()
    return Captured(
        device=device,
        data=rows,
        present=present,
        first_seq=0,
        stats=stats,
        seconds=time.monotonic() - t0,
        spectrum=spectrum.result() if spectrum else None,
        spectrum_blocks=spectrum.blocks if spectrum else 0,
        source=source,
        link_before=twin_before["link"],
    )


def _wait_frames(board: TwinBoard, block: str, frames: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while board.stats()["macs"][block]["to_host_frames"] < frames:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the twin sent fewer than {frames} frames in {timeout} s")
        time.sleep(0.2)


def _take(
    chunk: Any,
    xp: Any,
    cfg: StreamConfig,
    rows: npt.NDArray[np.uint8],
    present: npt.NDArray[np.bool_],
    spectrum: Spectrum | None,
) -> int:
    with chunk:
        first = int(chunk.first_seq)
        mask = np.asarray(chunk.present, dtype=bool)
        data = xp.from_dlpack(chunk) if xp is not np else chunk.data
        if first + len(mask) > len(rows):
            return 0  # beyond the stream's length: nothing of ours
        rows[first : first + len(mask)][mask] = (
            data.get() if hasattr(data, "get") else np.asarray(data)
        )[mask]
        present[first : first + len(mask)] = mask
        if spectrum is not None and mask.all():
            spectrum.add(data)
    return 1


@dataclass
class Verdict:
    """The chain's checks: payload comparison and one accounting table."""

    mismatched: int
    rows: list[tuple[str, str, int, str]]  # (side, counter, value, check)
    ok: bool
    peak: float | None = None  # the spectrum's peak, cycles per sample

    def table(self) -> list[str]:
        width = max(len(r[1]) for r in self.rows)
        lines = [f"{'side':<6} {'counter':<{width}} {'value':>10}  check"]
        for side, name, value, check in self.rows:
            lines.append(f"{side:<6} {name:<{width}} {value:>10,}  {check}")
        return lines


def core_counters(board: TwinBoard) -> dict[str, int]:
    """The core's TX counters and the generator's, read over KATCP as a user would."""
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    try:
        fpga.get_system_information()
        gbe = fpga.gbes[board.blocks[0]]
        out = {n: gbe.read_reg(n) for n in ("tx_frames", "tx_udp_packets", "tx_arp_miss")}
        out["pkt_sent"] = fpga.read_uint("pkt_sent")
        return out
    finally:
        fpga.disconnect()


def verify(board: TwinBoard, cfg: StreamConfig, got: Captured) -> Verdict:
    """Every captured payload against its golden model; the core's, the link's and the
    receiver's counts side by side (exact: packets + lost = what the core sent)."""
    seqs = np.flatnonzero(got.present)
    want = expected_payloads(cfg, seqs)
    mismatched = int(np.count_nonzero((got.data[seqs] != want).any(axis=1)))
    core = core_counters(board)
    link: dict[str, int] = {}
    if got.source == "udp":
        now = board.stats()["macs"][board.blocks[0]]["link"]
        link = {k: v - got.link_before.get(k, 0) for k, v in now.items() if k != "held"}
    s = got.stats
    sent = core["tx_udp_packets"]
    dropped, duplicated = link.get("dropped", 0), link.get("duplicated", 0)

    def check(ok: bool, text: str) -> str:
        return ("ok " if ok else "FAIL ") + text

    rows = [
        (
            "FPGA",
            "pkt_sent (generator)",
            core["pkt_sent"],
            check(core["pkt_sent"] == cfg.count, f"= {cfg.count:,} asked"),
        ),
        ("FPGA", "tx_udp_packets (core)", sent, check(sent == core["pkt_sent"], "= pkt_sent")),
        ("FPGA", "tx_arp_miss (core)", core["tx_arp_miss"], check(core["tx_arp_miss"] == 0, "0")),
    ]
    if got.source == "udp":
        rows += [
            (
                "link",
                "datagrams",
                link["datagrams"],
                check(link["datagrams"] == sent, "= tx_udp_packets"),
            ),
            ("link", "dropped", dropped, "injected"),
            ("link", "duplicated", duplicated, "injected"),
            ("link", "delayed (reordered)", link["delayed"], "injected"),
        ]
    accounted = s["packets"] + s["lost"]
    rows += [
        ("host", "packets (placed)", s["packets"], check(s["packets"] == len(seqs), "= present")),
        ("host", "lost", s["lost"], check(s["lost"] == dropped, f"= dropped ({dropped})")),
        (
            "host",
            "duplicate",
            s["duplicate"],
            check(s["duplicate"] == duplicated, f"= duplicated ({duplicated})"),
        ),
        ("host", "late", s["late"], check(s["late"] == 0, "0 (delays within the window)")),
        ("host", "rejected", s["rejected"], check(s["rejected"] == 0, "0")),
        ("host", "packets + lost", accounted, check(accounted == sent, "= tx_udp_packets")),
        ("host", "payloads differing from the model", mismatched, check(mismatched == 0, "0")),
    ]
    ok = all(not r[3].startswith("FAIL") for r in rows)
    peak = None
    if got.spectrum is not None and got.spectrum_blocks:
        peak = peak_frequency(got.spectrum)
    return Verdict(mismatched, rows, ok, peak)


def frequencies() -> npt.NDArray[np.float64]:
    """The FFT bins' frequencies in cycles per sample, in FFT order."""
    return np.fft.fftfreq(FFT_SIZE)


def peak_frequency(power: npt.NDArray[np.float64]) -> float:
    return float(frequencies()[int(np.argmax(power))])


def plot_spectrum(
    power: npt.NDArray[np.float64],
    tone: tone_model.ToneConfig,
    path: Path | None = None,
    title: str = "",
    ax: Any = None,
) -> Any:
    """The spectrum in dB against frequency (fraction of the sample rate), the configured
    tone marked; saved to ``path`` (PNG) when given. Returns the figure."""
    import matplotlib

    if ax is None and path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f = np.fft.fftshift(frequencies())
    db = 10 * np.log10(np.fft.fftshift(power) + 1e-12)
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    else:
        fig = ax.figure
    ax.plot(f, db, lw=0.8)
    peak = peak_frequency(power)
    ax.axvline(
        tone.frequency if tone.frequency < 0.5 else tone.frequency - 1,
        color="C3",
        ls="--",
        lw=0.8,
        label=f"configured tone {tone.frequency:.5f} fs",
    )
    ax.plot([peak], [db.max()], "o", color="C1", label=f"peak {peak:.5f} fs")
    ax.set_xlabel("frequency (fraction of the sample rate)")
    ax.set_ylabel("power (dB)")
    ax.set_xlim(-0.5, 0.5)
    ax.set_title(title or f"spectrum of the captured stream ({FFT_SIZE}-point FFT)")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    return fig


def stats_rows(stats: dict[str, Any], keys: Sequence[str] | None = None) -> list[tuple[str, Any]]:
    keys = keys or ("packets", "lost", "late", "duplicate", "rejected", "chunks", "received")
    return [(k, stats[k]) for k in keys if k in stats]
