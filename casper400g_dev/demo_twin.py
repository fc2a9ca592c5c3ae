"""`python -m casper400g_dev demo`, finale: the chain live, as a user's instrument runs it.

The example design built in part 1 runs as a board (its twin: top.v Verilated with the
DCMAC model, behind board-server, its MAC on a TAP device in a network namespace);
Linux's arping and ping reach the core through that NIC; examples/configure_core.py
configures the core and the tone generator over KATCP (with the real casperfpga when it
is installed); the receiver captures the stream on the twin's interface into chunks (into
the GPU when there is one); every payload is checked against the golden model, the core's,
the link's and the receiver's counts are put in one table, and the spectrum (PNG) shows
the configured tone.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from casper400g_twin.board import Network, TwinBoard, TwinError
from casper400g_twin.build import TwinBuildError
from casper400g_twin.harness import HarnessError
from mlib_devel_400g.toolflow import BuildResult

from . import checkout
from .twin import chain

SPECTRUM_PNG = checkout.ROOT / "build" / "demo" / "spectrum.png"


def start_board(console: Console, build_dir: Path, mode: str) -> TwinBoard | None:
    """The twin of `build_dir` started on a network of `mode`, its progress on the console;
    None (the reason printed) where it did not start."""
    board = TwinBoard(
        build_dir,
        network=Network(mode),
        katcp_port=0,
        progress=lambda m: console.print(f"      {m}", markup=False),
    )
    try:
        board.start()
    except (TwinError, TwinBuildError, HarnessError, OSError) as exc:
        console.print(f"[red]the twin did not start: {exc}")
        return None
    return board


def gpu_device() -> tuple[str, str]:
    """("cuda:0", why) when a GPU and CuPy are usable, else ("cpu", why not)."""
    from casper400g_rx import gpu

    usable, why = gpu.cuda_status()
    if not usable:
        return "cpu", f"no GPU ({why})"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "cpu", "CuPy is not installed"
    return "cuda:0", why


def run(console: Console, build: BuildResult, python: str, library: str) -> int:
    console.rule("[bold]casper400g demo, part 8: the chain live — board, network, capture")
    t_start = time.monotonic()
    cfg = chain.StreamConfig(packets_per_chunk=512, chunks=8)
    assert cfg.tone is not None
    console.print(
        f"[1/5] the twin of {build.build_dir.relative_to(checkout.ROOT)}: top.v + the DCMAC "
        "model Verilated into a C++ harness (cached after the first build)"
    )
    board = start_board(console, build.build_dir, "auto")
    if board is None:
        return 1
    try:
        return _run(console, board, cfg, python, library, t_start)
    finally:
        board.stop()


def _run(
    console: Console,
    board: TwinBoard,
    cfg: chain.StreamConfig,
    python: str,
    library: str,
    t_start: float,
) -> int:
    for line in board.describe():
        console.print(f"      {line}", markup=False, highlight=False)
    assert cfg.tone is not None
    if board.mode == "tap":
        console.print("[2/5] the host reaches the FPGA through that NIC: arping and ping")
        core_ip = cfg.core_ip
        for argv in (
            ("arping", "-c", "2", "-w", "30", "-I", board.interface(), core_ip),
            ("ping", "-c", "2", "-w", "60", core_ip),
        ):
            out = board.netns.run(*argv, timeout=120)  # type: ignore[union-attr]
            console.print(f"      $ {' '.join(argv)}", markup=False)
            for line in out.stdout.strip().splitlines()[1:3]:
                console.print(f"        {line}", markup=False, highlight=False)
            if out.returncode != 0:
                console.print(f"[red]{argv[0]} got no answer: {out.stderr.strip()}")
                return 1
        console.print(
            "      ARP answered by the core's hardware responder, ping by the ICMP helper "
            "(casperfpga_ext.tap, through the core's CPU buffers)"
        )
    else:
        console.print("[2/5] no NIC (see above): arping/ping need the TAP device, skipped")
    console.print(
        f"[3/5] examples/configure_core.py over KATCP with {library}: the core, the host's "
        f"ARP entry, the generator in tone mode (f = {cfg.tone.frequency:.5f} fs, "
        f"{cfg.count:,} x {cfg.size} B)"
    )
    argv = chain.configure_argv(board, cfg, python)
    shown = [str(chain.CONFIGURE_SCRIPT.relative_to(checkout.ROOT)), *argv[2:]]
    console.print(f"      $ python {' '.join(shown)}", markup=False, soft_wrap=True)
    t0 = time.monotonic()
    proc = chain.configure(board, cfg, python)
    for line in proc.stdout.strip().splitlines():
        console.print(f"      {line}", markup=False, highlight=False)
    if proc.returncode != 0:
        console.print(f"[red]configure_core.py exited with {proc.returncode}: {proc.stderr}")
        return 1
    console.print(f"      configured in {time.monotonic() - t0:.1f} s")
    device, why = gpu_device()
    where = "GPU chunks (cuda:0)" if device != "cpu" else f"host chunks ({why})"
    source = "udp backend on " + board.interface() if board.mode == "tap" else "pcap backend"
    console.print(
        f"[4/5] capture: the receiver's {source} into {where}, "
        f"{cfg.chunks} chunks of {cfg.packets_per_chunk}"
    )
    prev = board.stats()

    def progress(chunks: int, stats: dict) -> None:
        nonlocal prev
        line, prev = board.status(prev)
        console.print(
            f"      chunk {chunks}/{cfg.chunks}: {stats['packets']:,} packets, lost "
            f"{stats['lost']} | twin {line}",
            markup=False,
            highlight=False,
        )

    got = chain.capture(board, cfg, device=device, on_chunk=progress)
    gbps = 8 * got.stats["packets"] * cfg.size / got.seconds / 1e9 if got.seconds else 0.0
    console.print(
        f"      {got.stats['packets']:,} packets in {got.seconds:.1f} s ({gbps:.3f} Gb/s)"
    )
    console.print("[5/5] verify: every payload against the golden model; one accounting table")
    verdict = chain.verify(board, cfg, got)
    table = Table(title="FPGA -> link -> host: the same datagrams counted on each side")
    for col in ("side", "counter", "value", "check"):
        table.add_column(col, justify="right" if col == "value" else "left")
    for side, name, value, check in verdict.rows:
        color = "green" if check.startswith("ok") else ("red" if "FAIL" in check else "")
        table.add_row(side, name, f"{value:,}", f"[{color}]{check}" if color else check)
    console.print(table)
    if got.spectrum is None or verdict.peak is None:
        console.print("[red]no complete chunk to take a spectrum of")
        return 1
    title = f"twin of pktgen_400g: {cfg.count:,} packets captured on {device}"
    chain.plot_spectrum(got.spectrum, cfg.tone, SPECTRUM_PNG, title=title)
    rel = SPECTRUM_PNG.relative_to(checkout.ROOT)
    console.print(
        f"      spectrum ({got.spectrum_blocks:,} x {chain.FFT_SIZE}-point FFTs on "
        f"{'the GPU (CuPy)' if device != 'cpu' else 'the CPU (NumPy)'}): peak at "
        f"{verdict.peak:+.5f} fs, configured tone {cfg.tone.frequency:+.5f} fs -> {rel}"
    )
    peak_ok = abs(verdict.peak - cfg.tone.frequency) <= 1.0 / chain.FFT_SIZE
    if not verdict.ok or not peak_ok:
        console.print("[red bold]the chain did not deliver the stream intact")
        return 1
    stats = board.stats()
    console.print(
        f"[green bold]the chain live: {cfg.count:,} datagrams from the twin's core through "
        f"{board.interface() if board.mode == 'tap' else 'the pcap file'} into "
        f"{'GPU ' if device != 'cpu' else ''}chunks, every byte as the model says, "
        f"0 lost; the tone at {verdict.peak:.5f} fs ({time.monotonic() - t_start:.0f} s, "
        f"{stats['user_cycles']:,} cycles simulated)"
    )
    return 0
