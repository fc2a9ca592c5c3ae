"""GPU benchmark 1d (bench_gpu runs it): ONE capture with its defaults into one GPU, the
spectrometer consuming every chunk -- what a user gets from

    Capture(EmulatedNic(count=..., nic_rate_gbps=R, fill=..., split=True), rate_gbps=R,
            delivery=Delivery(device="cuda:0"))

and nothing else: no CPU list, no chunking, no thread moved by hand. The capture sizes
and places itself (sizing.py, placement.py: lanes pinned one per physical core, the
consumer, the GPU copy threads and the CUDA driver's threads kept off them, staging
memory on the GPU's node) and prints what it chose. The consumer is
casper400g_rx.spectrometer (the one examples/spectrometer.py uses): each chunk's int8
I/Q unpacked, 4096-point FFTs, power summed into spectra of 64 chunks; its kernels and
FFT plan are made before the capture starts.

Per emulated DMA (whole payload, as the issue's user got; or headers + prefix, the CPU's
share of a NIC deployment): a rate ladder of short trials up to the first loss; then
`trials` trials of `trial_seconds` at the target rate (400 Gb/s); then the capture sized
for the zero-loss rate offered `overload` times it, every packet accounted by reason.
Each achieved rate is printed against the pinned host-to-device copy peak of the same
run. device="cpu" runs the same capture into host chunks released at once: the reference
that tells the lanes' limit from the GPU stage's.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import Capture, Delivery, EmulatedNic
from ..spectrometer import Spectrometer, SpectrometerConfig

PAYLOAD = 8192
GBIT = 1e9
WHOLE_CHUNKS = 16384  # packets: a multiple of every chunk size the sizing picks up to 1.6 Tb/s
# The capture's counters a trial reports beside its loss account.
DETAIL = (
    "late",
    "no_free_chunk",
    "chunks_given_up",
    "out_of_window",
    "window_resyncs",
    "discarded",
    "queue_stalls",
    "queue_skips",
    "in_place",
    "fixup_copies",
    "ran_dry",
    "resyncs",
    "waits",
    "gpu_waits",
)
# received = packets + these (the engine's account; docs/design/receiver.md).
NOT_PLACED = ("late", "duplicate", "rejected", "discarded", "out_of_window", "no_free_chunk")
Trial = dict[str, Any]


@dataclass(frozen=True)
class DefaultsConfig:
    """The benchmark's settings: the ladder's rates and trial length, the target rate and
    its trials, the overload factor, the spectrometer's FFT size and integration."""

    rates: Sequence[float] = (250, 300, 350, 380, 400, 420, 440)
    ladder_seconds: float = 1.0
    target: float = 400.0
    trials: int = 3
    trial_seconds: float = 10.0
    overload: float = 1.25
    nfft: int = 4096
    chunks_per_spectrum: int = 64
    device: str = "cuda:0"

    def __post_init__(self) -> None:
        for name in ("ladder_seconds", "target", "trial_seconds", "overload"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.trials < 1:
            raise ValueError(f"trials must be >= 1, got {self.trials!r}")

    def spectrometer(self, device: str) -> Spectrometer:
        return Spectrometer(SpectrometerConfig(self.nfft, self.chunks_per_spectrum), device)


def stream_packets(rate_gbps: float, seconds: float) -> int:
    """The emulated stream's length: `seconds` at `rate_gbps`, in whole chunks."""
    n = int(rate_gbps * GBIT * seconds / (PAYLOAD * 8))
    return max(1, -(-n // WHOLE_CHUNKS)) * WHOLE_CHUNKS


def trial(
    rate_gbps: float,
    fill: bool,
    seconds: float,
    spectrometer: Spectrometer | None,
    device: str = "cuda:0",
    sized_for: float | None = None,
) -> Trial:
    """ONE capture of the emulated NIC at `rate_gbps` (whole payloads written when
    `fill`), opened with its defaults for `sized_for` (default: the same rate) into
    `device`; `spectrometer` consumes every chunk (None: each is released at once)."""
    count = stream_packets(rate_gbps, seconds)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cap = Capture(
            EmulatedNic(count=count, nic_rate_gbps=rate_gbps, fill=fill, split=True),
            rate_gbps=sized_for or rate_gbps,
            delivery=Delivery(device=device),
        )
    assert cap.sizing is not None and cap.sizing.placement is not None
    prepare_s = 0.0
    shape = (cap.config.packets_per_chunk, cap.fmt.payload_size)
    work_s = 0.0
    if spectrometer is not None:
        if spectrometer.prepared != shape:
            prepare_s = spectrometer.prepare(*shape)
        work_s = spectrometer.seconds_per_chunk(reps=5)
    spectra = chunks = 0
    t_cpu0, t0 = time.process_time(), time.perf_counter()
    with cap:
        for chunk in cap.chunks(timeout=5):
            if spectrometer is not None:
                spectra += len(spectrometer.add(chunk))
            chunk.release()
            chunks += 1
    if spectrometer is not None:
        spectra += len(spectrometer.finish())
        spectrometer.synchronize()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - t_cpu0
    s = cap.stats
    drops = int(s.get("nic_drops", 0))
    not_placed = {k: int(s.get(k, 0)) for k in NOT_PLACED}
    return {
        "rate": rate_gbps,
        "sized_for": sized_for or rate_gbps,
        "ok": drops == 0
        and s["lost"] == 0
        and s["packets"] == count
        and not s.get("gpu_packets_dropped", 0),
        "queues": cap.sizing.queues,
        "ppc": cap.config.packets_per_chunk,
        "n_chunks": cap.config.n_chunks,
        "lane_cpus": cap.sizing.placement.lane_cpus,
        "source_cpus": cap.source.cpus_given(),
        "sizing": str(cap.sizing),
        "achieved": s["packets"] * PAYLOAD * 8 / wall / GBIT,
        "offered_packets": count,
        "packets": int(s["packets"]),
        "nic_drops": drops,
        "lost": int(s["lost"]),
        # Every packet offered is placed, dropped by the NIC, or counted by its reason.
        "accounted": s["received"] + drops == count
        and s["received"] == s["packets"] + sum(not_placed.values()),
        "chunks": chunks,
        "fill": s["packets"] / (chunks * cap.config.packets_per_chunk) if chunks else 0.0,
        "cores_busy": cpu / wall,
        "spectra": spectra,
        "prepare_s": prepare_s,
        # The consumer's own time per chunk against the chunks' period at this rate.
        "work_ms": work_s * 1e3,
        "period_ms": cap.config.packets_per_chunk * PAYLOAD * 8 / (rate_gbps * GBIT) * 1e3,
        "warnings": [str(w.message) for w in caught],
        **{key: int(s.get(key, 0)) for key in DETAIL},
    }


def describe(trial_: Trial, peak: float, label: str = "") -> str:
    """A trial's line: offered, verdict, achieved (÷ the H2D peak), what was lost."""
    t = trial_
    sized = "" if t["sized_for"] == t["rate"] else f" (sized for {t['sized_for']:.1f})"
    return (
        f"  {label}offered {t['rate']:6.1f} Gb/s{sized} -> {t['queues']} lanes, "
        f"{t['ppc']}-packet chunks, pool {t['n_chunks']}: "
        f"{'zero-loss' if t['ok'] else 'LOSS'} achieved {t['achieved']:6.1f} Gb/s "
        f"({t['achieved'] / peak:.3f} of H2D peak), nic_drops {t['nic_drops']}, lost "
        f"{t['lost']}, { ({k: t[k] for k in DETAIL}) }, {t['spectra']} spectra, chunks "
        f"{t['fill']:.3f} full, every packet accounted {t['accounted']}, CPU cores busy "
        f"{t['cores_busy']:.1f}"
        + (
            f", spectrometer {t['work_ms']:.3f} ms per chunk (a chunk every "
            f"{t['period_ms']:.3f} ms)"
            if t["work_ms"]
            else ""
        )
        + "".join(f"\n    warning: {w}" for w in t["warnings"])
    )


def run_defaults(
    cfg: DefaultsConfig,
    fill: bool,
    peak: float,
    trial_at: Callable[..., Trial] = trial,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The ladder, the target trials and the overload for one emulated DMA fill; returns
    the ladder's best and failing trials, the target trials and the overload trial."""
    spec = cfg.spectrometer(cfg.device) if cfg.device != "cpu" else None
    best: Trial | None = None
    fail: Trial | None = None
    for rate in cfg.rates:
        t = trial_at(rate, fill, cfg.ladder_seconds, spec, cfg.device)
        log(describe(t, peak, "ladder: "))
        if not t["ok"]:
            fail = t
            ref = trial_at(rate, fill, cfg.ladder_seconds, None, "cpu")
            log(
                f"    same capture into host chunks only (no GPU stage): "
                f"{'zero-loss' if ref['ok'] else 'LOSS'} achieved {ref['achieved']:.1f} Gb/s, "
                f"nic_drops {ref['nic_drops']}, { ({k: ref[k] for k in DETAIL}) }"
            )
            break
        best = t
    if best is not None:
        log(f"  the capture's choices at {best['rate']:.0f} Gb/s:\n" + best["sizing"])
    targets = []
    for i in range(cfg.trials):
        t = trial_at(cfg.target, fill, cfg.trial_seconds, spec, cfg.device)
        log(describe(t, peak, f"target trial {i + 1}/{cfg.trials}: "))
        targets.append(t)
    zero = [t for t in targets if t["ok"]]
    base = max(zero, key=lambda t: t["achieved"]) if len(zero) == len(targets) else best
    over = None
    if base is not None:
        over = trial_at(
            cfg.overload * base["rate"],
            fill,
            cfg.trial_seconds,
            spec,
            cfg.device,
            sized_for=base["rate"],
        )
        log(
            describe(over, peak, f"overload {cfg.overload:g}x: ")
            + f"\n    delivered {over['achieved'] / base['achieved']:.3f} of the zero-loss "
            f"rate ({base['achieved']:.1f} Gb/s at {base['rate']:.0f} offered)"
        )
    return {
        "fill": fill,
        "best": best,
        "fail": fail,
        "targets": targets,
        "base": base,
        "over": over,
        "peak": peak,
    }


def _cell(t: Trial | None, what: str) -> str:
    if t is None:
        return "—"
    if what == "loss":
        return f"{t['rate']:.0f}: {t['achieved']:.1f}, {t['nic_drops']} NIC drops, {t['late']} late"
    return f"{t['rate']:.0f} ({t['achieved']:.1f})"


def summary(r: dict[str, Any]) -> list[str]:
    """Table cells of one fill's results (COLUMNS)."""
    peak, targets, base, over = r["peak"], r["targets"], r["base"], r["over"]
    t0 = targets[0]
    runs = ", ".join(
        f"{t['achieved']:.1f} ({t['achieved'] / peak:.3f})"
        + ("" if t["ok"] else f" LOSS: {t['nic_drops']} NIC drops, {t['late']} late")
        for t in targets
    )
    overload = "—"
    if over is not None and base is not None:
        overload = (
            f"{over['rate']:.0f} → {over['achieved']:.1f} "
            f"({over['achieved'] / base['achieved']:.3f}), {over['nic_drops']} NIC drops, "
            f"{over['late']} late, accounted {over['accounted']}"
        )
    return [
        "whole payload" if r["fill"] else "headers + prefix",
        f"{t0['queues']}, {t0['ppc']}, {t0['n_chunks']}",
        f"{sum(t['ok'] for t in targets)} of {len(targets)}: {runs}",
        "none" if r["best"] is None else _cell(r["best"], "best"),
        _cell(r["fail"], "loss"),
        overload,
    ]


COLUMNS = (
    "emulated DMA",
    "lanes, chunk packets, pool (target)",
    "target trials zero-loss: achieved Gb/s (÷ H2D peak)",
    "ladder: highest zero-loss offered (achieved)",
    "ladder: first loss",
    "overload: offered → delivered (÷ zero-loss)",
)
