"""Where a capture's chunks go: host memory, a GPU or several GPUs (through host memory),
or a GPU through GPUDirect with the reorder kernels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .gpu import HostToGpu, parse_device


def _cuda_ordinal(name: str, value: str) -> int:
    ordinal = parse_device(value)
    if ordinal is None:
        raise ValueError(f"{name} entries must be 'cuda' or 'cuda:N', got {value!r}")
    return ordinal


@dataclass(frozen=True)
class Delivery:
    """device="cpu" hands on host chunks; "cuda:N" copies each into a ring of GPU chunks
    (`gpu_chunks` of them, 0: as many as the host pool); gpudirect=True instead writes
    the NIC emulation's frames into GPU memory and places them with the reorder kernels,
    `gpu_options` their launch options (defaults in gpu.GPUDIRECT_DEFAULTS).

    devices=["cuda:0", "cuda:1", ...] delivers one capture into several GPUs: chunk k goes
    to devices[k % len(devices)], or with `mapping` (entries of `devices`) to
    mapping[k % len(mapping)] -- any periodic assignment, e.g. ["cuda:0", "cuda:0",
    "cuda:1", "cuda:1"] for runs of two chunks. Each GPU has its own ring of `gpu_chunks`,
    its own copy stream and threads; chunks come out of one iterator, each on its own
    device (`chunk.device`), and `stats["gpus"]` holds each GPU's counters beside the
    capture's one accounting. With gpudirect=True each GPU has its own GPUDirect engine
    and arrival ring, and takes the chunks k % len(devices) == its position (no
    `mapping`: the parse kernel routes round-robin).

    gpu_cpus: per GPU of `targets`, the CPUs its copy and recycle threads run on (() for
    one: where the capture starts). None: a capture sized for a rate (rate_gbps) places
    each GPU's threads on its own NUMA node, off the lane cores (placement.py); without a
    rate they run where the capture starts.

    Into several GPUs the host staging pool is split per GPU: chunk number k is filled in
    host memory of the part of the GPU it routes to, each part bound to its GPU's NUMA
    node (or, per GPU of `devices`, to its entry of `staging_nodes`; None there leaves
    that part unbound). `stats["gpus"][i]["staging"]` says where each part lies."""

    device: str = "cpu"
    gpudirect: bool = False
    gpu_chunks: int = 0
    gpu_options: Mapping[str, int] | None = None
    devices: Sequence[str] = ()
    mapping: Sequence[str] | None = None
    gpu_cpus: Sequence[Sequence[int]] | None = None
    staging_nodes: Sequence[int | None] | None = None

    def __post_init__(self) -> None:
        parse_device(self.device)
        if isinstance(self.devices, str):
            raise ValueError(f"devices is a list of 'cuda:N', got the string {self.devices!r}")
        devices = tuple(self.devices)
        object.__setattr__(self, "devices", devices)
        if self.gpudirect and self.mapping is not None:
            raise ValueError(
                f"gpudirect=True into several GPUs gives chunk k to devices[k % "
                f"{len(devices)}] (the parse kernel's round-robin); mapping="
                f"{list(self.mapping) if not isinstance(self.mapping, str) else self.mapping!r}"
                " is for delivery through host memory (leave gpudirect out)"
            )
        if devices and self.gpudirect and len(devices) < 2:
            raise ValueError(
                f"gpudirect=True with devices={list(devices)}: give device= for one GPU"
            )
        if self.gpudirect and self.device == "cpu" and not devices:
            raise ValueError(
                "gpudirect=True needs device='cuda:N' or devices=[...], got device='cpu'"
            )
        if self.gpu_options is not None and not self.gpudirect:
            raise ValueError("gpu_options are the GPUDirect kernels' options (gpudirect=True)")
        if self.gpu_chunks < 0:
            raise ValueError(f"gpu_chunks must be >= 0, got {self.gpu_chunks!r}")
        ordinals = [_cuda_ordinal("devices", d) for d in devices]
        if devices and self.device != "cpu":
            raise ValueError(
                f"device={self.device!r} and devices={list(devices)}: give device= for one "
                "GPU or devices= for several"
            )
        for i, o in enumerate(ordinals):
            if o in ordinals[:i]:
                raise ValueError(f"devices names cuda:{o} twice: {list(devices)}")
        if self.mapping is not None:
            self._check_mapping(ordinals)
        if self.gpu_cpus is not None:
            self._check_gpu_cpus()
        if self.staging_nodes is not None:
            self._check_staging_nodes()

    def _check_staging_nodes(self) -> None:
        nodes = self.staging_nodes
        if len(self.devices) < 2:
            raise ValueError(
                "staging_nodes binds the staging pool's part of each of several GPUs "
                "(devices=[...]); one GPU's staging lies where the capture opens"
            )
        if isinstance(nodes, str | bytes) or not isinstance(nodes, Sequence):
            raise ValueError(f"staging_nodes is a list of NUMA nodes, got {nodes!r}")
        for k, n in enumerate(nodes):
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
                raise ValueError(f"staging_nodes[{k}] is {n!r}, not a NUMA node (>= 0) or None")
        if len(nodes) != len(self.devices):
            raise ValueError(
                f"staging_nodes has {len(nodes)} node(s) for {len(self.devices)} GPUs "
                f"{list(self.devices)}: give one per GPU (None to leave one unbound)"
            )
        object.__setattr__(self, "staging_nodes", tuple(nodes))

    def _check_gpu_cpus(self) -> None:
        if self.gpudirect or not self.to_gpu:
            raise ValueError(
                "gpu_cpus places the copy threads of delivery through host memory into "
                "device='cuda:N' or devices=[...]"
                + (" (not gpudirect=True)" if self.gpudirect else "")
            )
        if isinstance(self.gpu_cpus, str | bytes) or not isinstance(self.gpu_cpus, Sequence):
            raise ValueError(f"gpu_cpus is a list of CPU lists, got {self.gpu_cpus!r}")
        per_gpu: list[tuple[int, ...]] = []
        for k, cpus in enumerate(self.gpu_cpus):
            if isinstance(cpus, str | bytes) or not isinstance(cpus, Sequence):
                raise ValueError(f"gpu_cpus[{k}] is a list of CPU numbers, got {cpus!r}")
            for c in cpus:
                if isinstance(c, bool) or not isinstance(c, int) or c < 0:
                    raise ValueError(f"gpu_cpus[{k}] has {c!r}, not a CPU number (>= 0)")
            per_gpu.append(tuple(cpus))
        if len(per_gpu) != len(self.targets):
            raise ValueError(
                f"gpu_cpus has {len(per_gpu)} CPU list(s) for {len(self.targets)} GPU(s) "
                f"{list(self.targets)}: give one per GPU (() to leave one's threads be)"
            )
        object.__setattr__(self, "gpu_cpus", tuple(per_gpu))

    def _check_mapping(self, ordinals: list[int]) -> None:
        if not self.devices:
            raise ValueError("mapping routes chunks among devices=[...]; give devices too")
        if isinstance(self.mapping, str):
            raise ValueError(f"mapping is a list of devices, got the string {self.mapping!r}")
        mapping = tuple(self.mapping or ())
        object.__setattr__(self, "mapping", mapping)
        if not mapping:
            raise ValueError("mapping is empty: give a device per chunk number of its period")
        for k, entry in enumerate(mapping):
            o = _cuda_ordinal("mapping", entry)
            if o not in ordinals:
                raise ValueError(
                    f"mapping[{k}] = {entry!r} is not one of devices {list(self.devices)}"
                )
        used = {parse_device(e) for e in mapping}
        for d, o in zip(self.devices, ordinals, strict=True):
            if o not in used:
                raise ValueError(f"{d!r} of devices gets no chunk from mapping {list(mapping)}")

    @property
    def to_gpu(self) -> bool:
        return self.device != "cpu" or bool(self.devices)

    @property
    def targets(self) -> tuple[str, ...]:
        """The GPUs chunks go to, in order (one for device=, none for host chunks)."""
        if self.devices:
            return tuple(self.devices)
        return () if self.device == "cpu" else (self.device,)

    def routes(self) -> list[int] | None:
        """mapping as positions in `targets` (None: round-robin)."""
        if self.mapping is None:
            return None
        ordinals = [parse_device(d) for d in self.devices]
        return [ordinals.index(parse_device(e)) for e in self.mapping]

    def deliver(self, host: Any) -> Any:
        """`host` (the engine's capture into host chunks) as this delivery hands it on."""
        if not self.to_gpu:
            return host
        return HostToGpu(host, self.targets, self.gpu_chunks, self.routes(), self.gpu_cpus)
