"""GPU delivery: `device="cuda:N"` captures (host chunks copied into a GPU chunk ring)
and GPUDirect (`gpudirect=True`: frames in GPU memory placed by the reorder kernels).

CUDA is loaded when a device is asked for, never at import: without a GPU everything
else works, and asking for one raises CudaError naming the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core

CudaError = _core.CudaError

# blocks (scatter thread blocks: the SM footprint), batch (packets per parse/walk/scatter
# launch group), ring_packets (GPU arrival ring slots), headroom (bytes before each frame),
# slots (launches in flight). Their one home is gpudirect_config in cuda_gpudirect.h: the
# defaults carry a 400 Gb/s stream on 2 SMs (740 Gb/s measured on an H100). For the
# highest rate, e.g. {"blocks": 128, "batch": 65536, "ring_packets": 262144}: 0.83 of the
# GPU's device-to-device copy rate (docs/benchmarks.md, 5.2).
GPUDIRECT_DEFAULTS: dict[str, int] = dict(_core.gpudirect_defaults())

# GPUDirect into several GPUs: steered=1 gives each GPU's arrival ring the frames of its
# chunks only, as the NIC's steering (or the FPGA's destination table, a UDP port per
# GPU) delivers them; steered=0 gives every frame to every GPU, each counting the
# others' as other_gpu.
GPUDIRECT_MULTI_DEFAULTS: dict[str, int] = {"steered": 1}


def parse_device(device: str) -> int | None:
    """None for "cpu", N for "cuda" (0) or "cuda:N"; ValueError naming anything else."""
    if device == "cpu":
        return None
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if m is None:
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return int(m.group(1) or 0)


def cuda_status() -> tuple[bool, str]:
    """(usable, reason): whether a CUDA device can be used here, and why not."""
    try:
        n = _core.cuda_device_count()
    except CudaError as e:
        return False, str(e)
    if n == 0:
        return False, "the CUDA driver is installed but reports no device"
    return True, f"{n} CUDA device(s)"


def _open_device(device: str) -> int:
    ordinal = parse_device(device)
    assert ordinal is not None
    try:
        _core.cuda_device_info(ordinal)
    except CudaError as e:
        raise CudaError(f"device={device!r} is not usable: {e}") from None
    return ordinal


class _GpuRing:
    """What both GPU captures pass straight to their ring of GPU chunks."""

    _gpu: Any

    def start(self) -> None:
        self._gpu.start()

    def stop(self) -> None:
        self._gpu.stop()

    def next_chunk(self, timeout: float | None = None) -> _core.GpuChunk | None:
        return self._gpu.next_chunk(timeout)


class StagedDelivery(_GpuRing):
    """A host capture whose chunks its staged delivery (`staged`: _core.gpu_delivery, or
    _core.host_lanes with host memory standing in for the GPUs) routes into the rings of
    one device or several; offers the host capture's interface (what
    casper400g_rx.Capture uses) with the delivery's chunks. stats: the capture's one
    accounting, the devices' counters summed, and each device's in `gpus`."""

    def __init__(self, host: Any, staged: Any) -> None:
        self._host = host
        self._gpu = staged

    @property
    def stats(self) -> dict[str, Any]:
        return {**self._host.stats, **self._gpu.stats, "gpus": self._gpu.device_stats}

    def __getattr__(self, name: str) -> Any:
        # warnings, running, port, rcvbuf, config, fmt: the host capture's.
        if name in ("finished", "stream", "device"):
            return getattr(self._gpu, name)
        if name == "running":
            return self._gpu.running
        return getattr(self._host, name)


class HostToGpu(StagedDelivery):
    """A host capture whose chunks are delivered into GPU memory: each chunk into one of
    `devices` ("cuda:N"), round-robin by chunk number or as `routes` (positions in
    `devices`, one per chunk number modulo its length) says; `gpu_chunks` per GPU ring;
    `cpus` per GPU, where its copy and recycle threads run (None or (): where started)."""

    def __init__(
        self,
        host: Any,
        devices: str | Sequence[str],
        gpu_chunks: int = 0,
        routes: Sequence[int] | None = None,
        cpus: Sequence[Sequence[int]] | None = None,
    ) -> None:
        names = [devices] if isinstance(devices, str) else list(devices)
        ordinals = [_open_device(d) for d in names]
        mapping = None if routes is None else [int(r) for r in routes]
        per_gpu = None if cpus is None else [list(c) for c in cpus]
        super().__init__(host, _core.gpu_delivery(host, ordinals, gpu_chunks, mapping, per_gpu))


class GpuDirect(_GpuRing):
    """GPUDirect capture fed by the NIC emulation (mem backend), into one GPU (`device`
    "cuda:N") or several (a list): an engine per GPU, GPU g of G placing chunks k with
    k % G == g in its own arrival ring and chunks. stats: the capture's one accounting,
    each GPU's counters in `gpus`."""

    def __init__(
        self,
        fmt: _core.Format,
        config: _core.EngineConfig,
        device: str | Sequence[str],
        *,
        packets: npt.ArrayLike | None,
        sizes: Sequence[int] | None,
        frames: bool,
        repeat: int,
        first: int,
        count: int,
        schedule: npt.ArrayLike | None,
        options: Mapping[str, int] | None,
    ) -> None:
        several = not isinstance(device, str)
        opts = dict(GPUDIRECT_DEFAULTS)
        if several:
            opts.update(GPUDIRECT_MULTI_DEFAULTS)
        for k, v in (options or {}).items():
            if k not in opts:
                if k in GPUDIRECT_MULTI_DEFAULTS:
                    raise ValueError(
                        f"gpu option {k!r} belongs to gpudirect into several GPUs (devices=)"
                    )
                raise ValueError(f"unknown gpu option {k!r}; known: {', '.join(opts)}")
            opts[k] = int(v)
        if several and opts["steered"] not in (0, 1):
            raise ValueError(f"gpu option 'steered' is 0 or 1, got {opts['steered']!r}")
        self.fmt = fmt
        self.config = config
        self.options = opts
        rows = None
        if packets is not None:
            if not frames:
                raise ValueError(
                    "gpudirect places whole frames (the kernel parses their headers): give "
                    "packets as Ethernet frames with frames=True"
                )
            rows = np.ascontiguousarray(packets, dtype=np.uint8)
        sched = None if schedule is None else np.asarray(schedule, dtype=np.uint64)
        self.devices: tuple[str, ...] = tuple(device) if several else (device,)
        if several:
            ordinals = [_open_device(d) for d in self.devices]
            kernel_opts = {k: v for k, v in opts.items() if k not in GPUDIRECT_MULTI_DEFAULTS}
            self._gpu = _core.gpudirect_multi(
                fmt,
                config,
                ordinals,
                bool(opts["steered"]),
                rows,
                list(sizes) if sizes is not None else None,
                repeat,
                first,
                count,
                sched,
                fmt.udp_port or 7148,
                **kernel_opts,
            )
            return
        ordinal = _open_device(device)  # type: ignore[arg-type]
        self._gpu = _core.gpudirect(
            fmt,
            config,
            ordinal,
            rows,
            list(sizes) if sizes is not None else None,
            repeat,
            first,
            count,
            sched,
            fmt.udp_port or 7148,
            **opts,
        )

    warnings: list[str] = []  # noqa: RUF012 - the host capture's interface
    port = None
    rcvbuf = None

    def time_ring_pass(self, control_only: bool = False) -> float:
        return float(self._gpu.time_ring_pass(control_only))

    @property
    def stats(self) -> dict[str, Any]:
        s: dict[str, Any] = dict(self._gpu.stats)
        if len(self.devices) > 1:
            s["gpus"] = self._gpu.device_stats
        return s

    @property
    def running(self) -> bool:
        return bool(self._gpu.running)

    @property
    def finished(self) -> bool:
        return bool(self._gpu.finished)

    @property
    def stream(self) -> int:
        return int(self._gpu.stream)
